#include "keys/filehash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/oom.h"
#include "base/stamp.h"
#include "base/thread.h"
#include "base/util.h"

#define FILEHASH_MAX 16384
#define RECORD_HASH 0    /* a file's hash, as of its stamp */
#define RECORD_GONE 1    /* no file, as of its directory's stamp */
#define RECORD_NO_DIR 2  /* no directory, as of an existing one's stamp */
#define PREFETCH_MIN 64    /* fewer files are not worth a thread */
#define PREFETCH_THREADS 4

struct memo {
	struct memo *next;
	unsigned hash; /* cjc_table_hash(path): most chains are told apart without memcmp */
	bool known;   /* the hash holds for this process */
	bool stamped; /* st and taken_ns describe when the hash was taken */
	bool gone;    /* not stamped: no file here while its directory had the
		       * stamp st, taken at taken_ns (cjc_filehash_absent) */
	bool inherited; /* from the shared hash cache, not looked at since */
	int err;      /* 0, or the errno of the failed read */
	uint64_t size;
	unsigned char sha[CJC_DIGEST_LEN];
	struct cjc_stamp st;
	int64_t taken_ns;
	size_t len;
	char path[]; /* in the memo's allocation: one allocation a file */
};

#define MEMO_BUCKETS 4096
static struct memo *buckets[MEMO_BUCKETS];
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static bool dirty;

/* The shared hash cache (cjc_filehash_share_under): its directories,
 * whether a record under them changed since it was last encoded, and
 * whether the records being decoded are its. */
static struct cjc_strvec shared_dirs = CJC_STRVEC_INIT;
static bool shared_dirty;
static bool decoding_shared;

static bool is_shared(const char *path)
{
	for (size_t i = 0; i < shared_dirs.n; i++)
		if (cjc_starts_with(path, shared_dirs.v[i]))
			return true;
	return false;
}

/* A record at path changed (lock held): both caches are to be written. */
static void changed(const char *path)
{
	dirty = true;
	shared_dirty = shared_dirty || is_shared(path);
}

/*
 * Directories of the files looked at, opened once (O_PATH): a file is then
 * looked up by its last name alone, which saves walking the same long paths
 * (the toolkit's headers) a thousand times.  A directory that cannot be
 * opened is remembered with its errno.  Bounded; past the bound, plain stat.
 */
struct dir_memo {
	struct dir_memo *next;
	char *dir;
	size_t len;
	unsigned hash;
	bool opened;  /* fd, or err when it cannot be opened, is known */
	int fd;
	int err;
	bool stamped; /* st: the directory's, taken at taken_ns, in this process */
	struct cjc_stamp st;
	int64_t taken_ns;
	bool gone;    /* no directory here while the one of the first `anchor`
		       * bytes had the stamp gone_st, taken at gone_ns */
	bool inherited; /* from the shared hash cache, not looked at since */
	uint32_t anchor;
	struct cjc_stamp gone_st;
	int64_t gone_ns;
};

#define DIR_BUCKETS 256
#define DIR_MAX 512
static struct dir_memo *dir_buckets[DIR_BUCKETS];
static unsigned ndirs;
static uint64_t reused, hashed, gone_by_stamp;

/* The memo of a path (len bytes), created when absent (lock held). */
static struct memo *memo_named(const char *path, size_t len)
{
	unsigned hash = cjc_table_hash(path, len);
	unsigned b = hash % MEMO_BUCKETS;
	struct memo *m;
	for (m = buckets[b]; m && (m->hash != hash || m->len != len || memcmp(m->path, path, len));
	     m = m->next)
		;
	if (!m) {
		m = cjc_xcalloc(1, sizeof *m + len + 1);
		memcpy(m->path, path, len);
		m->len = len;
		m->hash = hash;
		m->next = buckets[b];
		buckets[b] = m;
	}
	return m;
}

/* A lookup's memo: what it says is this unit's now (not inherited). */
static struct memo *memo_of(const char *path)
{
	struct memo *m = memo_named(path, strlen(path));
	m->inherited = false;
	return m;
}

/* The memo of the directory dir (len bytes), created when absent (lock
 * held); NULL past the bound. */
static struct dir_memo *dir_named(const char *dir, size_t len)
{
	unsigned hash = cjc_table_hash(dir, len), b = hash % DIR_BUCKETS;
	struct dir_memo *d;
	for (d = dir_buckets[b];
	     d && (d->hash != hash || d->len != len || memcmp(d->dir, dir, len)); d = d->next)
		;
	if (!d && ndirs >= DIR_MAX)
		return NULL;
	if (!d) {
		d = cjc_xcalloc(1, sizeof *d);
		d->dir = cjc_xstrndup(dir, len);
		d->len = len;
		d->hash = hash;
		d->fd = -1;
		d->next = dir_buckets[b];
		dir_buckets[b] = d;
		ndirs++;
	}
	return d;
}

/* The length of the directory part of path (its last '/' kept for "/"),
 * 0 for a path without one. */
static size_t dir_len(const char *path, size_t n)
{
	while (n && path[n - 1] != '/')
		n--;
	return n > 1 ? n - 1 : n;
}

/* The memo of the directory of path (lock held); *base: its last name. */
static struct dir_memo *dir_of(const char *path, const char **base)
{
	size_t len = dir_len(path, strlen(path));
	*base = path + (len ? len + (len > 1 || path[0] != '/') : 0);
	struct dir_memo *d = len ? dir_named(path, len) : dir_named(".", 1);
	if (d)
		d->inherited = false;
	return d;
}

/* d opened, once: its descriptor, or -1 with errno (lock held). */
static int dir_open(struct dir_memo *d)
{
	if (!d->opened) {
		d->fd = open(d->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		d->err = d->fd < 0 ? errno : 0;
		d->opened = true;
	}
	errno = d->err;
	return d->fd;
}

/* The directory of path, opened; -1 with errno when it cannot be (lock
 * held), or with *base NULL past the bound. */
static int dir_fd(const char *path, const char **base)
{
	struct dir_memo *d = dir_of(path, base);
	if (!d) {
		*base = NULL;
		return -1;
	}
	return dir_open(d);
}

/* stat(2) of base in dirfd (dir_fd), or of path where that is not open. */
static int stat_at(int dirfd, const char *base, const char *path, struct stat *st)
{
	if (dirfd >= 0 && base && *base)
		return fstatat(dirfd, base, st, 0);
	if (dirfd < 0 && base) /* the directory cannot be opened: nor can the file */
		return -1;
	return stat(path, st);
}

/* stat(2) of path, whose last name is base, through d, its remembered
 * directory (NULL past the bound): opened under the lock, the stat made
 * outside it (so threads stat in parallel). */
static int stat_in(struct dir_memo *d, const char *path, const char *base, struct stat *st)
{
	if (!d || !*base)
		return stat(path, st);
	cjc_oom_lock(&memo_lock);
	int fd = dir_open(d);
	int e = errno;
	cjc_oom_unlock(&memo_lock);
	errno = e;
	return stat_at(fd, base, path, st);
}

/* dir_fd() under the lock. */
static int dir_fd_locked(const char *path, const char **base)
{
	cjc_oom_lock(&memo_lock);
	int fd = dir_fd(path, base);
	int e = errno;
	cjc_oom_unlock(&memo_lock);
	errno = e;
	return fd;
}


static void forget_dirs(void)
{
	for (unsigned b = 0; b < DIR_BUCKETS; b++)
		while (dir_buckets[b]) {
			struct dir_memo *d = dir_buckets[b];
			dir_buckets[b] = d->next;
			if (d->fd >= 0)
				close(d->fd);
			free(d->dir);
			free(d);
		}
	ndirs = 0;
}

/* What a lookup needs of a memo, copied under the lock. */
struct seen {
	bool known, stamped;
	struct cjc_stamp st;
	int64_t taken_ns;
};

/* What reading a file found. */
struct fresh {
	bool stamped;
	int64_t taken_ns;
	int err;
	uint64_t size;
	unsigned char sha[CJC_DIGEST_LEN];
	struct cjc_stamp st;
};

/* Reads and hashes a file, noting its stamp from the descriptor it read
 * (no lock held): by its last name in its directory (dirfd, from
 * dir_fd) where that is open, which spares walking the whole path again;
 * else by path. */
static void hash_now(int dirfd, const char *base, const char *path, struct fresh *out)
{
	out->stamped = false;
	out->taken_ns = cjc_wall_ns();
	bool in_dir = dirfd >= 0 && base && *base;
	/* a path may come from a manifest someone else wrote: never block on a
	 * FIFO or read a device (cjc_open_regular_stat) */
	struct stat s;
	int fd = cjc_open_regular_stat(in_dir ? dirfd : AT_FDCWD, in_dir ? base : path, O_RDONLY, &s);
	if (fd < 0 || cjc_hash_regular(fd, (uint64_t)s.st_size, out->sha, &out->size)) {
		out->err = errno ? errno : EIO;
	} else {
		out->err = 0;
		cjc_stamp_of(&s, &out->st);
		out->stamped = out->st.size == out->size;
	}
	if (fd >= 0)
		close(fd);
}

/* What a lookup found, into the memo (lock held): the remembered hash
 * holds, or the fresh one replaces it.  A memo another thread settled first
 * is left as it is. */
static void settle(struct memo *m, bool holds, const struct fresh *fresh)
{
	if (m->known)
		return;
	if (holds) {
		m->size = m->st.size;
		reused++;
	} else {
		m->stamped = fresh->stamped;
		m->taken_ns = fresh->taken_ns;
		m->err = fresh->err;
		m->size = fresh->size;
		m->st = fresh->st;
		memcpy(m->sha, fresh->sha, CJC_DIGEST_LEN);
		changed(m->path);
		hashed++;
	}
	m->known = true;
}

/* The lookup: the memo is read and written under the lock; the stat and
 * the hashing, which are the time, are not, so that threads working
 * through a manifest's files (cjc_filehash_prefetch) run side by side.
 * Two threads on one path both hash it; the results are the same. */
int cjc_filehash_get(const char *path, uint64_t *size, unsigned char sha[CJC_DIGEST_LEN])
{
	struct seen seen;
	cjc_oom_lock(&memo_lock);
	struct memo *m = memo_of(path);
	seen = (struct seen){ m->known, m->stamped, m->st, m->taken_ns };
	cjc_oom_unlock(&memo_lock);
	bool holds = false;
	struct fresh fresh = { 0 };
	const char *base = NULL;
	int dirfd = seen.known ? -1 : dir_fd_locked(path, &base);
	if (!seen.known && seen.stamped) {
		struct stat s;
		struct cjc_stamp now;
		if (!stat_at(dirfd, base, path, &s)) {
			cjc_stamp_of(&s, &now);
			holds = cjc_stamp_holds(&seen.st, &now, seen.taken_ns);
		}
	}
	if (!seen.known && !holds)
		hash_now(dirfd, base, path, &fresh);
	cjc_oom_lock(&memo_lock);
	settle(m, holds, &fresh);
	int err = m->err;
	*size = m->size;
	memcpy(sha, m->sha, CJC_DIGEST_LEN);
	cjc_oom_unlock(&memo_lock);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* One file of a prefetch: its memo, what it held, what was found. */
struct work {
	struct memo *m;
	struct seen seen;
	int dirfd;
	const char *base;
	bool holds;
	struct fresh fresh;
};

/* The files of a prefetch, which its threads take one at a time (next),
 * so that all of them stay busy to the end, whatever each file's size. */
struct prefetch {
	struct work *w;
	size_t n;
	atomic_size_t next;
};

/* A thread's part of the files: stat'ed or hashed without the lock (the
 * memos are taken before and settled after, under it, by the caller). */
static void *prefetch_some(void *arg)
{
	struct prefetch *p = arg;
	for (size_t k; (k = atomic_fetch_add(&p->next, 1)) < p->n;) {
		struct work *w = &p->w[k];
		struct stat s;
		struct cjc_stamp now;
		if (w->seen.known)
			continue;
		if (w->seen.stamped && !stat_at(w->dirfd, w->base, w->m->path, &s)) {
			cjc_stamp_of(&s, &now);
			w->holds = cjc_stamp_holds(&w->seen.st, &now, w->seen.taken_ns);
		}
		if (!w->holds) /* the path never changes */
			hash_now(w->dirfd, w->base, w->m->path, &w->fresh);
	}
	return NULL;
}

/* The work of a prefetch of paths: each file's memo, as it is now, and its
 * directory (lock held). */
static struct work *work_of(char *const *paths, size_t n)
{
	struct work *w = cjc_xcalloc(n + 1, sizeof *w);
	for (size_t k = 0; k < n; k++) {
		struct memo *m = memo_of(paths[k]);
		w[k].m = m;
		w[k].seen = (struct seen){ m->known, m->stamped, m->st, m->taken_ns };
		w[k].dirfd = m->known ? -1 : dir_fd(m->path, &w[k].base);
	}
	return w;
}

/* Whether most of a sample of the files have no remembered hash: the files
 * of one compile are remembered together or not at all (a fresh store, a
 * new checkout), so a sample tells, and a warm hit pays for the sample, not
 * a second pass over a thousand paths. */
static bool mostly_unhashed(char *const *paths, size_t n)
{
	size_t sample = n < PREFETCH_MIN ? n : PREFETCH_MIN, count = 0;
	cjc_oom_lock(&memo_lock);
	for (size_t i = 0; i < sample; i++) {
		const struct memo *m = memo_of(paths[i * (n / sample)]);
		count += !m->known && !m->stamped;
	}
	cjc_oom_unlock(&memo_lock);
	return 2 * count > sample;
}

void cjc_filehash_prefetch(char *const *paths, size_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t threads = cpus < 2 ? 1 : cpus > PREFETCH_THREADS ? PREFETCH_THREADS : (size_t)cpus;
	if (n < PREFETCH_MIN || threads < 2 || !mostly_unhashed(paths, n))
		return; /* a stat each is not worth a thread: measured slower */
	cjc_oom_lock(&memo_lock);
	struct prefetch p = { .w = work_of(paths, n), .n = n };
	cjc_oom_unlock(&memo_lock);
	pthread_t t[PREFETCH_THREADS];
	size_t started = 0;
	while (started < threads - 1 && !cjc_thread_start(&t[started], prefetch_some, &p))
		started++; /* with no thread at all, this one does all of it */
	prefetch_some(&p);
	for (size_t k = 0; k < started; k++)
		cjc_thread_join(t[k]);
	cjc_oom_lock(&memo_lock);
	for (size_t k = 0; k < n; k++)
		if (!p.w[k].seen.known)
			settle(p.w[k].m, p.w[k].holds, &p.w[k].fresh);
	cjc_oom_unlock(&memo_lock);
	free(p.w);
}

void cjc_filehash_recheck(void)
{
	cjc_oom_lock(&memo_lock);
	for (unsigned b = 0; b < MEMO_BUCKETS; b++)
		for (struct memo *m = buckets[b]; m; m = m->next)
			m->known = false;
	forget_dirs();
	cjc_oom_unlock(&memo_lock);
}

void cjc_filehash_forget(void)
{
	cjc_oom_lock(&memo_lock);
	for (unsigned b = 0; b < MEMO_BUCKETS; b++) {
		while (buckets[b]) {
			struct memo *m = buckets[b];
			buckets[b] = m->next;
			free(m);
		}
	}
	forget_dirs();
	cjc_strvec_clear(&shared_dirs);
	dirty = shared_dirty = false;
	reused = hashed = gone_by_stamp = 0;
	cjc_oom_unlock(&memo_lock);
}

/* d with its stamp, taken once per process (lock held); NULL when it
 * cannot be opened or stat'ed. */
static struct dir_memo *stamped(struct dir_memo *d)
{
	if (!d || dir_open(d) < 0)
		return NULL;
	if (!d->stamped) {
		struct stat st;
		d->taken_ns = cjc_wall_ns();
		if (!fstat(d->fd, &st)) {
			cjc_stamp_of(&st, &d->st);
			d->stamped = true;
		}
	}
	return d->stamped ? d : NULL;
}

/* Whether d is still missing, as the stamp of the nearest directory above
 * it that existed says (lock held); d itself is not opened. */
static bool dir_still_absent(struct dir_memo *d)
{
	if (!d || !d->gone || (d->opened && d->fd >= 0)) /* anchor < len: decode_no_dir */
		return false;
	struct dir_memo *a = stamped(dir_named(d->dir, d->anchor));
	return a && cjc_stamp_holds(&d->gone_st, &a->st, d->gone_ns);
}

/* Whether m's name is still absent, as its directory's stamp says. */
static bool name_still_absent(const struct memo *m, struct dir_memo *d)
{
	if (!m->gone || m->stamped)
		return false;
	d = stamped(d);
	return d && cjc_stamp_holds(&m->st, &d->st, m->taken_ns);
}

/* The nearest directory above d that exists, stamped (lock held); NULL
 * when another error stops the search. */
static struct dir_memo *existing_above(const struct dir_memo *d)
{
	size_t len = d->len;
	while ((len = dir_len(d->dir, len))) {
		struct dir_memo *a = dir_named(d->dir, len);
		if (!a || (dir_open(a) < 0 && a->err != ENOENT && a->err != ENOTDIR))
			return NULL;
		if (a->fd >= 0)
			return stamped(a);
		if (len == 1)
			break;
	}
	return NULL;
}

/* Whether no entry at all, not even a dangling link, is named name in the
 * directory open at fd (a link's target can appear without its directory
 * changing). */
static bool no_entry(int fd, const char *name)
{
	struct stat st;
	return *name && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) && errno == ENOENT;
}

/*
 * Notes an absence found by stat (lock held), when a directory with a
 * settled stamp proves it: the name's own directory, or, where that does
 * not exist, the nearest one above it that does.  The proof's stamp is
 * taken before the look that notes the absence (a stamp taken after a
 * name appeared would prove nothing), and the look is made afresh, not
 * taken from what this process opened before.
 */
static void note_absent(struct memo *m, struct dir_memo *d, const char *base)
{
	if (!d || m->stamped)
		return;
	if (d->fd >= 0) {
		if (d->gone) /* it exists now: its record is stale */
			d->gone = false, changed(d->dir);
		if (!stamped(d) || !cjc_stamp_settled(&d->st, d->taken_ns) || !no_entry(d->fd, base))
			return;
		m->gone = true;
		m->st = d->st;
		m->taken_ns = d->taken_ns;
		changed(m->path);
		return;
	}
	if (d->err != ENOENT && d->err != ENOTDIR)
		return;
	struct dir_memo *a = existing_above(d);
	if (!a || !cjc_stamp_settled(&a->st, a->taken_ns))
		return;
	/* the name in a on the way to d: while it is not there, d cannot be */
	size_t from = a->len == 1 && a->dir[0] == '/' ? 1 : a->len + 1;
	char *next = cjc_xstrndup(d->dir + from, strcspn(d->dir + from, "/"));
	bool none = no_entry(a->fd, next);
	free(next);
	if (!none)
		return;
	d->gone = true;
	d->anchor = (uint32_t)a->len;
	d->gone_st = a->st;
	d->gone_ns = a->taken_ns;
	changed(d->dir);
}

/*
 * A name noted absent while its directory had a stamp is still absent while
 * that stamp holds (stamp.h): a name is made or removed only by changing
 * its directory, which changes the directory's mtime and ctime.  Likewise a
 * missing directory stays missing while the nearest directory above it
 * keeps its stamp.  So a directory's hundred absent candidates cost one
 * fstat, not a hundred stats, and a missing directory costs nothing; a
 * directory changed lately (a build's own) is asked name by name.
 */
bool cjc_filehash_absent(const char *path)
{
	cjc_oom_lock(&memo_lock);
	const char *base;
	struct dir_memo *d = dir_of(path, &base);
	struct memo *m = NULL;
	bool gone = *base && dir_still_absent(d);
	if (*base && !gone) {
		m = memo_of(path); /* only names in directories that exist have one */
		gone = name_still_absent(m, d);
	}
	gone_by_stamp += gone;
	cjc_oom_unlock(&memo_lock);
	if (gone)
		return true;
	struct stat st;
	bool absent = stat_in(d, path, base, &st) && (errno == ENOENT || errno == ENOTDIR);
	if (m) {
		cjc_oom_lock(&memo_lock);
		if (absent)
			note_absent(m, d, base);
		else if (m->gone) /* it exists now: its record is stale */
			m->gone = false, changed(m->path);
		cjc_oom_unlock(&memo_lock);
	}
	return absent;
}

void cjc_filehash_counts(uint64_t *r, uint64_t *h, uint64_t *g)
{
	*r = reused;
	*h = hashed;
	*g = gone_by_stamp;
}

/* A missing directory's record into its memo (lock held). */
static void decode_no_dir(const char *dir, size_t len, uint32_t anchor,
			  const struct cjc_stamp *st, int64_t taken)
{
	struct dir_memo *d = anchor && anchor < len ? dir_named(dir, len) : NULL;
	if (!d || d->gone)
		return;
	d->gone = true;
	d->anchor = anchor;
	d->gone_st = *st;
	d->gone_ns = taken;
	d->inherited = decoding_shared;
}

static void decode_record(struct cjc_cursor *c)
{
	size_t len = 0;
	const char *path = cjc_cursor_chars(c, 4096, &len);
	uint32_t kind = cjc_cursor_u32(c);
	uint32_t anchor = kind == RECORD_NO_DIR ? cjc_cursor_u32(c) : 0;
	struct cjc_stamp st;
	cjc_stamp_decode(c, &st);
	int64_t taken = (int64_t)cjc_cursor_u64(c);
	const void *sha = kind == RECORD_HASH ? cjc_cursor_bytes(c, CJC_DIGEST_LEN) : NULL;
	if (c->bad || !len || kind > RECORD_NO_DIR) {
		c->bad = true;
		return;
	}
	if (kind == RECORD_NO_DIR) {
		decode_no_dir(path, len, anchor, &st, taken);
		return;
	}
	struct memo *m = memo_named(path, len);
	if (m->known || m->stamped || m->gone)
		return;
	m->st = st;
	m->taken_ns = taken;
	if (sha)
		memcpy(m->sha, sha, CJC_DIGEST_LEN);
	m->stamped = kind == RECORD_HASH;
	m->gone = kind == RECORD_GONE;
	m->inherited = decoding_shared;
}

void cjc_filehash_decode(struct cjc_cursor *c, uint32_t count)
{
	cjc_oom_lock(&memo_lock);
	for (uint32_t i = 0; i < count && !c->bad; i++)
		decode_record(c);
	cjc_oom_unlock(&memo_lock);
}

void cjc_filehash_decode_shared(struct cjc_cursor *c, uint32_t count)
{
	decoding_shared = true;
	cjc_filehash_decode(c, count);
	decoding_shared = false;
}

/* Whether a record goes into the unit's file (what it looked at, or read
 * from its own file) or into the shared one (under its directories, or
 * read from it: another toolkit's records are kept, not dropped). */
static bool wanted(const char *path, bool inherited, bool shared)
{
	return shared ? inherited || is_shared(path) : !inherited;
}

/* The records (all, or with shared those under the shared directories)
 * when *changes says any changed since the last encode. */
static bool encode(struct cjc_buf *records, uint32_t *count, bool *changes, bool shared)
{
	*count = 0;
	cjc_oom_lock(&memo_lock);
	if (!*changes) {
		cjc_oom_unlock(&memo_lock);
		return false;
	}
	for (unsigned b = 0; b < MEMO_BUCKETS; b++)
		for (struct memo *m = buckets[b]; m && *count < FILEHASH_MAX; m = m->next) {
			bool hash = m->stamped && !m->err;
			if ((!hash && !m->gone) || !wanted(m->path, m->inherited, shared))
				continue;
			cjc_buf_add_str(records, m->path);
			cjc_buf_add_u32(records, hash ? RECORD_HASH : RECORD_GONE);
			cjc_stamp_encode(records, &m->st);
			cjc_buf_add_u64(records, (uint64_t)m->taken_ns);
			if (hash)
				cjc_buf_add(records, m->sha, CJC_DIGEST_LEN);
			(*count)++;
		}
	for (unsigned b = 0; b < DIR_BUCKETS; b++)
		for (struct dir_memo *d = dir_buckets[b]; d && *count < FILEHASH_MAX; d = d->next) {
			if (!d->gone || !wanted(d->dir, d->inherited, shared))
				continue;
			cjc_buf_add_str(records, d->dir);
			cjc_buf_add_u32(records, RECORD_NO_DIR);
			cjc_buf_add_u32(records, d->anchor);
			cjc_stamp_encode(records, &d->gone_st);
			cjc_buf_add_u64(records, (uint64_t)d->gone_ns);
			(*count)++;
		}
	*changes = false;
	cjc_oom_unlock(&memo_lock);
	return true;
}

bool cjc_filehash_encode(struct cjc_buf *records, uint32_t *count)
{
	return encode(records, count, &dirty, false);
}

bool cjc_filehash_encode_shared(struct cjc_buf *records, uint32_t *count)
{
	return encode(records, count, &shared_dirty, true);
}

void cjc_filehash_share_under(char *const *dirs, size_t n)
{
	cjc_oom_lock(&memo_lock);
	for (size_t i = 0; i < n; i++)
		cjc_strvec_push(&shared_dirs, dirs[i]);
	cjc_oom_unlock(&memo_lock);
}
