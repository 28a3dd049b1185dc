#include "store/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/blob.h"
#include "base/fs.h"
#include "base/oom.h"

static const char magic[4] = { 'C', 'J', 'C', 'S' };

static const char *const names[CJC_STAT_COUNT] = {
	[CJC_STAT_HITS] = "hits",
	[CJC_STAT_MISSES] = "misses",
	[CJC_STAT_UNCACHEABLE] = "uncacheable",
	[CJC_STAT_ERRORS] = "errors",
	[CJC_STAT_DAMAGED] = "damaged",
	[CJC_STAT_COMPILE_FAILED] = "compile_failed",
	[CJC_STAT_SAVED_MS] = "saved_ms",
	[CJC_STAT_BYTES] = "bytes",
	[CJC_STAT_ENTRIES] = "entries",
	[CJC_STAT_REMOTE_HITS] = "remote_hits",
	[CJC_STAT_REMOTE_MISSES] = "remote_misses",
	[CJC_STAT_REMOTE_ERRORS] = "remote_errors",
	[CJC_STAT_REMOTE_TIMEOUTS] = "remote_timeouts",
	[CJC_STAT_UNTRUSTED] = "untrusted",
	[CJC_STAT_REMOTE_READ] = "remote_bytes_read",
	[CJC_STAT_REMOTE_WRITTEN] = "remote_bytes_written",
	[CJC_STAT_EVICTED] = "evicted",
	[CJC_STAT_EVICTED_BYTES] = "evicted_bytes",
	[CJC_STAT_LEASE_WAITS] = "lease_waits",
	[CJC_STAT_LEASE_TIMEOUTS] = "lease_timeouts",
	[CJC_STAT_BAD_SETTINGS] = "bad_settings",
	[CJC_STAT_VERIFIED] = "verified",
	[CJC_STAT_VERIFY_MISMATCHES] = "verify_mismatches",
	[CJC_STAT_VERIFY_SKIPPED] = "verify_skipped",
};

static bool is_size(int i)
{
	return i == CJC_STAT_BYTES || i == CJC_STAT_ENTRIES;
}

const char *cjc_stats_name(enum cjc_counter c)
{
	return names[c];
}

bool cjc_stats_store_wide(enum cjc_counter c)
{
	return is_size(c) || c == CJC_STAT_EVICTED || c == CJC_STAT_EVICTED_BYTES;
}

static void decode(const struct cjc_buf *raw, uint64_t v[CJC_STAT_COUNT])
{
	const void *p;
	size_t n;
	memset(v, 0, sizeof(uint64_t) * CJC_STAT_COUNT);
	if (cjc_blob_decode(raw->data, raw->len, magic, &p, &n))
		return;
	struct cjc_cursor c;
	cjc_cursor_init(&c, p, n);
	uint32_t count = cjc_cursor_u32(&c);
	for (uint32_t i = 0; i < count && !c.bad; i++) {
		uint64_t x = cjc_cursor_u64(&c);
		if (i < CJC_STAT_COUNT && !c.bad)
			v[i] = x;
	}
}

/* Replaces the contents of a locked counter file. */
static int rewrite(int fd, int read_rc, const struct cjc_buf *framed)
{
	if (read_rc || pwrite(fd, framed->data, framed->len, 0) != (ssize_t)framed->len)
		return -1;
	return ftruncate(fd, (off_t)framed->len);
}

/* Opens a counter file of the store, locks it and lets update() rewrite it.
 * Anyone who can read the file can hold a lock on it, so the lock is never
 * waited for beyond a few milliseconds (fs.h), and not at all unless wait:
 * then the update is skipped, -1 with EWOULDBLOCK, and the compile goes on. */
/* Whether fd is a counter file to rewrite in place: a regular file with
 * one name.  A counter is the group's, so any member's; but a second name
 * is a hard link, which a member could have planted to a file of root's
 * (where fs.protected_hardlinks is 0) or one of hers outside the store. */
static bool one_name(int fd)
{
	struct stat st;
	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_nlink == 1;
}

/* A counter file open for its rewrite, or -1.  One with another name is
 * replaced, by rename through stats/'s fd, with an empty one (its counts
 * are lost, never written through the link); a second link since is
 * EPERM. */
static int open_counter(const struct cjc_store *s, const char *sub)
{
	int fd = cjc_store_open_regular(s, sub, O_RDWR | O_CREAT, 0666);
	if (fd < 0 || one_name(fd))
		return fd;
	close(fd);
	fd = cjc_store_fresh_file(s, sub, 0666) ? -1 : cjc_store_open_regular(s, sub, O_RDWR, 0);
	if (fd >= 0 && !one_name(fd)) {
		close(fd);
		fd = -1;
		errno = EPERM;
	}
	return fd;
}

static int with_locked(const struct cjc_store *s, const char *sub, bool wait,
		       int (*update)(int fd, const void *ctx), const void *ctx)
{
	int fd = open_counter(s, sub);
	if (fd < 0)
		return -1;
	int rc = wait ? cjc_lock_bounded(fd, LOCK_EX) : flock(fd, LOCK_EX | LOCK_NB);
	cjc_oom_fd_held(fd);
	if (!rc)
		rc = update(fd, ctx);
	int e = errno;
	cjc_oom_fd_let_go(fd);
	close(fd);
	errno = e;
	return rc;
}

struct shard_change {
	const uint64_t *delta;
	bool zero;
};

/* Runs with the shard open and locked: reads, applies, writes back. */
static int update_shard(int fd, const void *ctx)
{
	const struct shard_change *ch = ctx;
	struct cjc_buf raw = CJC_BUF_INIT, payload = CJC_BUF_INIT, framed = CJC_BUF_INIT;
	uint64_t v[CJC_STAT_COUNT];
	int rc = cjc_read_regular_fd(fd, CJC_STORE_MAX_FILE, &raw);
	decode(&raw, v);
	cjc_buf_add_u32(&payload, CJC_STAT_COUNT);
	for (int i = 0; i < CJC_STAT_COUNT; i++)
		cjc_buf_add_u64(&payload, ch->zero && !is_size(i) ? 0 : v[i] + (ch->delta ? ch->delta[i] : 0));
	cjc_blob_encode(&framed, magic, payload.data, payload.len);
	rc = rewrite(fd, rc, &framed);
	int e = errno;
	cjc_buf_release(&raw);
	cjc_buf_release(&payload);
	cjc_buf_release(&framed);
	errno = e;
	return rc;
}

static int with_shard(const struct cjc_store *s, int shard, bool wait, const uint64_t *delta,
		      bool zero)
{
	char name[32];
	struct shard_change ch = { delta, zero };
	snprintf(name, sizeof name, "stats/%d", shard);
	return with_locked(s, name, wait, update_shard, &ch);
}

/* Events may go to any shard: the pid's first, else the first other one free
 * at once, so a holder descheduled on a busy machine loses no count; only
 * when none is free is the pid's shard waited for (bounded). */
int cjc_stats_add(const struct cjc_store *s, const uint64_t delta[CJC_STAT_COUNT])
{
	int first = (int)(getpid() % CJC_STATS_SHARDS);
	for (int i = 0; i < CJC_STATS_SHARDS; i++)
		if (!with_shard(s, (first + i) % CJC_STATS_SHARDS, false, delta, false))
			return 0;
	return with_shard(s, first, true, delta, false);
}

int cjc_stats_add_shard(const struct cjc_store *s, int shard, const uint64_t delta[CJC_STAT_COUNT])
{
	return with_shard(s, shard, true, delta, false);
}

int cjc_stats_bump(const struct cjc_store *s, enum cjc_counter c, uint64_t saved_ms)
{
	uint64_t delta[CJC_STAT_COUNT] = { 0 };
	delta[c] = 1;
	delta[CJC_STAT_SAVED_MS] += saved_ms;
	return cjc_stats_add(s, delta);
}

int cjc_stats_read_shard(const struct cjc_store *s, int shard, uint64_t out[CJC_STAT_COUNT])
{
	char name[32];
	snprintf(name, sizeof name, "stats/%d", shard);
	struct cjc_buf raw = CJC_BUF_INIT;
	int rc = cjc_store_read(s, name, CJC_STORE_MAX_FILE, &raw);
	decode(&raw, out);
	cjc_buf_release(&raw);
	return rc && errno != ENOENT ? -1 : 0;
}

int cjc_stats_read(const struct cjc_store *s, uint64_t out[CJC_STAT_COUNT])
{
	memset(out, 0, sizeof(uint64_t) * CJC_STAT_COUNT);
	for (int shard = 0; shard < CJC_STATS_SHARDS; shard++) {
		uint64_t v[CJC_STAT_COUNT];
		cjc_stats_read_shard(s, shard, v);
		for (int i = 0; i < CJC_STAT_COUNT; i++)
			out[i] += v[i];
	}
	return 0;
}

static const char named_magic[4] = { 'C', 'J', 'C', 'N' };
#define NAMED_VERSION 2
#define NAMED_V1_VALUES 9 /* version 1 kept no count of values */
static const char *const breakdown_files[] = { "stats/targets", "stats/uncacheable", "stats/remotes",
					       "stats/settings" };

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cjc_stats_row *)a)->name, ((const struct cjc_stats_row *)b)->name);
}

void cjc_stats_rows_free(struct cjc_stats_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].name);
	free(rows);
}

/* Decodes a named-counter blob; anything damaged reads as no rows. */
static void decode_rows(const struct cjc_buf *raw, struct cjc_stats_row **rows, size_t *n)
{
	const void *p;
	size_t len;
	*rows = NULL;
	*n = 0;
	if (cjc_blob_decode(raw->data, raw->len, named_magic, &p, &len))
		return;
	struct cjc_cursor c;
	cjc_cursor_init(&c, p, len);
	uint32_t version = cjc_cursor_u32(&c), count = cjc_cursor_u32(&c);
	uint32_t values = version == 1 ? NAMED_V1_VALUES : cjc_cursor_u32(&c);
	if (c.bad || version < 1 || version > NAMED_VERSION || count > CJC_STATS_MAX_NAMES + 1 ||
	    values > 1024)
		return;
	*rows = cjc_xcalloc(count + 1, sizeof **rows);
	for (uint32_t i = 0; i < count; i++) {
		char *name = cjc_cursor_str(&c, 4096);
		uint64_t v[CJC_STAT_COUNT] = { 0 };
		for (uint32_t k = 0; k < values; k++) {
			uint64_t x = cjc_cursor_u64(&c);
			if (k < CJC_STAT_COUNT)
				v[k] = x;
		}
		if (c.bad) {
			free(name);
			cjc_stats_rows_free(*rows, *n);
			*rows = NULL;
			*n = 0;
			return;
		}
		(*rows)[*n].name = name;
		memcpy((*rows)[(*n)++].v, v, sizeof v);
	}
}

static void encode_rows(struct cjc_buf *out, const struct cjc_stats_row *rows, size_t n)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_buf_add_u32(&payload, NAMED_VERSION);
	cjc_buf_add_u32(&payload, (uint32_t)n);
	cjc_buf_add_u32(&payload, CJC_STAT_COUNT);
	for (size_t i = 0; i < n; i++) {
		cjc_buf_add_str(&payload, rows[i].name);
		for (int k = 0; k < CJC_STAT_COUNT; k++)
			cjc_buf_add_u64(&payload, rows[i].v[k]);
	}
	cjc_blob_encode(out, named_magic, payload.data, payload.len);
	cjc_buf_release(&payload);
}

/* The row for name, added when missing (or "(other)" once the file is full). */
static struct cjc_stats_row *find_row(struct cjc_stats_row **rows, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*rows)[i].name, name))
			return &(*rows)[i];
	if (*n >= CJC_STATS_MAX_NAMES && strcmp(name, "(other)"))
		return find_row(rows, n, "(other)");
	*rows = cjc_xrealloc(*rows, (*n + 1) * sizeof **rows);
	memset(&(*rows)[*n], 0, sizeof **rows);
	(*rows)[*n].name = cjc_xstrdup(name);
	return &(*rows)[(*n)++];
}

struct named_change {
	const char *name;
	const uint64_t *delta;
};

static int update_named(int fd, const void *ctx)
{
	const struct named_change *ch = ctx;
	struct cjc_buf raw = CJC_BUF_INIT, framed = CJC_BUF_INIT;
	struct cjc_stats_row *rows;
	size_t n;
	int rc = cjc_read_regular_fd(fd, CJC_STORE_MAX_FILE, &raw);
	decode_rows(&raw, &rows, &n);
	struct cjc_stats_row *r = find_row(&rows, &n, ch->name);
	for (int k = 0; k < CJC_STAT_COUNT; k++)
		r->v[k] += ch->delta[k];
	encode_rows(&framed, rows, n);
	rc = rewrite(fd, rc, &framed);
	int e = errno;
	cjc_stats_rows_free(rows, n);
	cjc_buf_release(&raw);
	cjc_buf_release(&framed);
	errno = e;
	return rc;
}

int cjc_stats_bump_named(const struct cjc_store *s, enum cjc_stats_breakdown b,
			 const char *name, enum cjc_counter c, uint64_t saved_ms)
{
	uint64_t delta[CJC_STAT_COUNT] = { 0 };
	delta[c] = 1;
	delta[CJC_STAT_SAVED_MS] += saved_ms;
	return cjc_stats_add_named(s, b, name, delta);
}

int cjc_stats_add_named(const struct cjc_store *s, enum cjc_stats_breakdown b, const char *name,
			const uint64_t delta[CJC_STAT_COUNT])
{
	struct named_change ch = { name, delta };
	return with_locked(s, breakdown_files[b], true, update_named, &ch);
}

int cjc_stats_read_named(const struct cjc_store *s, enum cjc_stats_breakdown b,
			 struct cjc_stats_row **rows, size_t *n)
{
	struct cjc_buf raw = CJC_BUF_INIT;
	int rc = cjc_store_read(s, breakdown_files[b], CJC_STORE_MAX_FILE, &raw);
	int e = errno;
	decode_rows(&raw, rows, n);
	if (*n)
		qsort(*rows, *n, sizeof **rows, row_cmp);
	cjc_buf_release(&raw);
	errno = e;
	return rc && e != ENOENT ? -1 : 0;
}

int cjc_stats_zero(const struct cjc_store *s)
{
	int rc = 0, e = 0;
	for (int shard = 0; shard < CJC_STATS_SHARDS; shard++)
		if (with_shard(s, shard, true, NULL, true) && !rc)
			rc = -1, e = errno;
	for (size_t b = 0; b < sizeof breakdown_files / sizeof *breakdown_files; b++)
		if (cjc_store_remove(s, breakdown_files[b]) && !rc)
			rc = -1, e = errno;
	errno = e;
	return rc;
}
