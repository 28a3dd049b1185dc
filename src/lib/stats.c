#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "blob.h"
#include "fs.h"

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
};

static bool is_size(int i)
{
	return i == CJC_STAT_BYTES || i == CJC_STAT_ENTRIES;
}

const char *cjc_stats_name(enum cjc_counter c)
{
	return names[c];
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

/* Runs with the shard open and locked: reads, applies, writes back. */
static int update_shard(int fd, const uint64_t delta[CJC_STAT_COUNT], bool zero)
{
	struct cjc_buf raw = CJC_BUF_INIT, payload = CJC_BUF_INIT, framed = CJC_BUF_INIT;
	uint64_t v[CJC_STAT_COUNT];
	int rc = cjc_read_fd(fd, &raw);
	decode(&raw, v);
	cjc_buf_add_u32(&payload, CJC_STAT_COUNT);
	for (int i = 0; i < CJC_STAT_COUNT; i++)
		cjc_buf_add_u64(&payload, zero && !is_size(i) ? 0 : v[i] + (delta ? delta[i] : 0));
	cjc_blob_encode(&framed, magic, payload.data, payload.len);
	if (!rc && pwrite(fd, framed.data, framed.len, 0) != (ssize_t)framed.len)
		rc = -1;
	if (!rc)
		rc = ftruncate(fd, (off_t)framed.len);
	int e = errno;
	cjc_buf_release(&raw);
	cjc_buf_release(&payload);
	cjc_buf_release(&framed);
	errno = e;
	return rc;
}

static int with_shard(const struct cjc_store *s, int shard, const uint64_t *delta, bool zero)
{
	char name[32];
	snprintf(name, sizeof name, "stats/%d", shard);
	char *path = cjc_store_path(s, name);
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
	free(path);
	if (fd < 0)
		return -1;
	int rc = flock(fd, LOCK_EX);
	if (!rc)
		rc = update_shard(fd, delta, zero);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int cjc_stats_add(const struct cjc_store *s, const uint64_t delta[CJC_STAT_COUNT])
{
	return with_shard(s, (int)(getpid() % CJC_STATS_SHARDS), delta, false);
}

int cjc_stats_add_shard(const struct cjc_store *s, int shard, const uint64_t delta[CJC_STAT_COUNT])
{
	return with_shard(s, shard, delta, false);
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
	char *path = cjc_store_path(s, name);
	struct cjc_buf raw = CJC_BUF_INIT;
	int rc = cjc_read_file(path, &raw);
	decode(&raw, out);
	cjc_buf_release(&raw);
	free(path);
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

int cjc_stats_zero(const struct cjc_store *s)
{
	int rc = 0;
	for (int shard = 0; shard < CJC_STATS_SHARDS; shard++)
		if (with_shard(s, shard, NULL, true))
			rc = -1;
	return rc;
}
