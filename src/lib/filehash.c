#include "filehash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blob.h"
#include "fs.h"
#include "stamp.h"
#include "util.h"

#define FILEHASH_VERSION 1
#define FILEHASH_MAX 16384
#define PREFETCH_MIN 64    /* fewer files are not worth a thread */
#define PREFETCH_THREADS 4

struct memo {
	struct memo *next;
	char *path;
	bool known;   /* the hash holds for this process */
	bool stamped; /* st and taken_ns describe when the hash was taken */
	int err;      /* 0, or the errno of the failed read */
	uint64_t size;
	unsigned char sha[CJC_DIGEST_LEN];
	struct cjc_stamp st;
	int64_t taken_ns;
};

#define MEMO_BUCKETS 1024
static struct memo *buckets[MEMO_BUCKETS];
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static bool dirty;

/*
 * Directories of the files looked at, opened once (O_PATH): a file is then
 * looked up by its last name alone, which saves walking the same long paths
 * (the toolkit's headers) a thousand times.  A directory that cannot be
 * opened is remembered with its errno.  Bounded; past the bound, plain stat.
 */
struct dir_memo {
	struct dir_memo *next;
	char *dir;
	int fd; /* -1: err says why it cannot be opened */
	int err;
};

#define DIR_BUCKETS 256
#define DIR_MAX 512
static struct dir_memo *dir_buckets[DIR_BUCKETS];
static unsigned ndirs;
static uint64_t reused, hashed;
static const char magic[4] = { 'C', 'J', 'C', 'F' };

static unsigned bucket_of(const char *path)
{
	unsigned h = 5381;
	for (; *path; path++)
		h = h * 33 + (unsigned char)*path;
	return h % MEMO_BUCKETS;
}

/* The memo of a path, created when absent; call with the lock held. */
static struct memo *memo_of(const char *path)
{
	unsigned b = bucket_of(path);
	struct memo *m;
	for (m = buckets[b]; m && strcmp(m->path, path); m = m->next)
		;
	if (!m) {
		m = cjc_xcalloc(1, sizeof *m);
		m->path = cjc_xstrdup(path);
		m->next = buckets[b];
		buckets[b] = m;
	}
	return m;
}

/* The directory of path, opened; -1 with errno when it cannot be (lock held). */
static int dir_fd(const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	*base = slash ? slash + 1 : path;
	char *dir = !slash ? cjc_xstrdup(".") : slash == path ? cjc_xstrdup("/")
		: cjc_xstrndup(path, (size_t)(slash - path));
	unsigned b = bucket_of(dir) % DIR_BUCKETS;
	struct dir_memo *d;
	for (d = dir_buckets[b]; d && strcmp(d->dir, dir); d = d->next)
		;
	if (!d && ndirs >= DIR_MAX) {
		free(dir);
		*base = NULL;
		return -1;
	}
	if (!d) {
		d = cjc_xcalloc(1, sizeof *d);
		d->dir = dir;
		d->fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		d->err = d->fd < 0 ? errno : 0;
		d->next = dir_buckets[b];
		dir_buckets[b] = d;
		ndirs++;
	} else {
		free(dir);
	}
	errno = d->err;
	return d->fd;
}

/* stat(2) through the remembered directory: the directory is found under
 * the lock, the stat is made outside it (so threads stat in parallel). */
static int stat_fast(const char *path, struct stat *st)
{
	const char *base;
	pthread_mutex_lock(&memo_lock);
	int fd = dir_fd(path, &base);
	int e = errno;
	pthread_mutex_unlock(&memo_lock);
	if (!base || !*base)
		return stat(path, st);
	errno = e;
	return fd < 0 ? -1 : fstatat(fd, base, st, 0);
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

/* Reads and hashes a file, noting its stamp from the descriptor it read
 * (no lock held). */
static void hash_now(const char *path, struct memo *out)
{
	out->stamped = false;
	out->taken_ns = cjc_wall_ns();
	/* a path may come from a manifest someone else wrote: never block on a
	 * FIFO or read a device (cjc_open_regular) */
	int fd = cjc_open_regular(AT_FDCWD, path, O_RDONLY, 0);
	struct stat s;
	if (fd < 0 || fstat(fd, &s) || cjc_hash_fd(fd, out->sha, &out->size)) {
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
static void settle(struct memo *m, bool holds, const struct memo *fresh)
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
		dirty = true;
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
	pthread_mutex_lock(&memo_lock);
	struct memo *m = memo_of(path);
	seen = (struct seen){ m->known, m->stamped, m->st, m->taken_ns };
	pthread_mutex_unlock(&memo_lock);
	bool holds = false;
	struct memo fresh = { 0 };
	if (!seen.known && seen.stamped) {
		struct stat s;
		struct cjc_stamp now;
		if (!stat_fast(path, &s)) {
			cjc_stamp_of(&s, &now);
			holds = cjc_stamp_holds(&seen.st, &now, seen.taken_ns);
		}
	}
	if (!seen.known && !holds)
		hash_now(path, &fresh);
	pthread_mutex_lock(&memo_lock);
	settle(m, holds, &fresh);
	int err = m->err;
	*size = m->size;
	memcpy(sha, m->sha, CJC_DIGEST_LEN);
	pthread_mutex_unlock(&memo_lock);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

struct prefetch {
	char *const *paths;
	size_t n, first, step;
};

/* One item of a thread's share: the memo, what it held, what was found. */
struct work {
	struct memo *m;
	struct seen seen;
	int dirfd;
	const char *base;
	bool holds;
	struct memo fresh;
};

/* A thread's share of the files: the memos are taken under the lock once,
 * the files stat'ed or hashed without it, the results put back under it
 * once (a lock per file made the threads queue on it). */
static void *prefetch_some(void *arg)
{
	const struct prefetch *p = arg;
	size_t n = p->first < p->n ? (p->n - p->first + p->step - 1) / p->step : 0;
	struct work *w = cjc_xcalloc(n + 1, sizeof *w);
	pthread_mutex_lock(&memo_lock);
	for (size_t k = 0; k < n; k++) {
		const char *path = p->paths[p->first + k * p->step];
		struct memo *m = memo_of(path);
		w[k].m = m;
		w[k].seen = (struct seen){ m->known, m->stamped, m->st, m->taken_ns };
		w[k].dirfd = m->known ? -1 : dir_fd(m->path, &w[k].base);
	}
	pthread_mutex_unlock(&memo_lock);
	for (size_t k = 0; k < n; k++) {
		struct stat s;
		struct cjc_stamp now;
		if (w[k].seen.known)
			continue;
		if (w[k].seen.stamped && w[k].dirfd >= 0 && w[k].base && *w[k].base &&
		    !fstatat(w[k].dirfd, w[k].base, &s, 0)) {
			cjc_stamp_of(&s, &now);
			w[k].holds = cjc_stamp_holds(&w[k].seen.st, &now, w[k].seen.taken_ns);
		}
		if (!w[k].holds)
			hash_now(w[k].m->path, &w[k].fresh); /* the path never changes */
	}
	pthread_mutex_lock(&memo_lock);
	for (size_t k = 0; k < n; k++)
		if (!w[k].seen.known)
			settle(w[k].m, w[k].holds, &w[k].fresh);
	pthread_mutex_unlock(&memo_lock);
	free(w);
	return NULL;
}

/* Whether most of a sample of the files have no remembered hash: the files
 * of one compile are remembered together or not at all (a fresh store, a
 * new checkout), so a sample tells, and a warm hit pays for the sample, not
 * a second pass over a thousand paths. */
static bool mostly_unhashed(char *const *paths, size_t n)
{
	size_t sample = n < PREFETCH_MIN ? n : PREFETCH_MIN, count = 0;
	pthread_mutex_lock(&memo_lock);
	for (size_t i = 0; i < sample; i++) {
		const struct memo *m = memo_of(paths[i * (n / sample)]);
		count += !m->known && !m->stamped;
	}
	pthread_mutex_unlock(&memo_lock);
	return 2 * count > sample;
}

void cjc_filehash_prefetch(char *const *paths, size_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t threads = cpus < 2 ? 1 : cpus > PREFETCH_THREADS ? PREFETCH_THREADS : (size_t)cpus;
	if (n < PREFETCH_MIN || threads < 2 || !mostly_unhashed(paths, n))
		return; /* a stat each is not worth a thread: measured slower */
	pthread_t t[PREFETCH_THREADS];
	struct prefetch p[PREFETCH_THREADS];
	size_t started = 1;
	for (size_t k = 0; k < threads; k++)
		p[k] = (struct prefetch){ paths, n, k, threads };
	for (size_t k = 1; k < threads; k++)
		if (!pthread_create(&t[started], NULL, prefetch_some, &p[k]))
			started++;
		else
			break; /* no thread: the caller does the rest as it goes */
	prefetch_some(&p[0]);
	for (size_t k = 1; k < started; k++)
		pthread_join(t[k], NULL);
}

void cjc_filehash_forget(void)
{
	pthread_mutex_lock(&memo_lock);
	for (unsigned b = 0; b < MEMO_BUCKETS; b++) {
		while (buckets[b]) {
			struct memo *m = buckets[b];
			buckets[b] = m->next;
			free(m->path);
			free(m);
		}
	}
	forget_dirs();
	dirty = false;
	reused = hashed = 0;
	pthread_mutex_unlock(&memo_lock);
}

bool cjc_filehash_absent(const char *path)
{
	struct stat st;
	return stat_fast(path, &st) && (errno == ENOENT || errno == ENOTDIR);
}

void cjc_filehash_counts(uint64_t *r, uint64_t *h)
{
	*r = reused;
	*h = hashed;
}

static void decode_record(struct cjc_cursor *c)
{
	char *path = cjc_cursor_str(c, 4096);
	struct cjc_stamp st;
	cjc_stamp_decode(c, &st);
	int64_t taken = (int64_t)cjc_cursor_u64(c);
	const void *sha = cjc_cursor_bytes(c, CJC_DIGEST_LEN);
	if (c->bad || !*path) {
		free(path);
		return;
	}
	struct memo *m = memo_of(path);
	free(path);
	if (m->known || m->stamped)
		return;
	m->st = st;
	m->taken_ns = taken;
	memcpy(m->sha, sha, CJC_DIGEST_LEN);
	m->stamped = true;
}

int cjc_filehash_load(const struct cjc_store *s, const char *sub)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	struct cjc_cursor c;
	uint32_t count;
	if (cjc_blob_read_records(s, sub, magic, FILEHASH_VERSION, &payload, &c, &count))
		return -1;
	pthread_mutex_lock(&memo_lock);
	for (uint32_t i = 0; i < count && !c.bad; i++)
		decode_record(&c);
	pthread_mutex_unlock(&memo_lock);
	cjc_buf_release(&payload);
	return 0;
}

int cjc_filehash_save(const struct cjc_store *s, const char *sub)
{
	struct cjc_buf records = CJC_BUF_INIT;
	uint32_t count = 0;
	pthread_mutex_lock(&memo_lock);
	if (!dirty) {
		pthread_mutex_unlock(&memo_lock);
		return 0;
	}
	for (unsigned b = 0; b < MEMO_BUCKETS; b++)
		for (struct memo *m = buckets[b]; m && count < FILEHASH_MAX; m = m->next) {
			if (!m->stamped || m->err)
				continue;
			cjc_buf_add_str(&records, m->path);
			cjc_stamp_encode(&records, &m->st);
			cjc_buf_add_u64(&records, (uint64_t)m->taken_ns);
			cjc_buf_add(&records, m->sha, CJC_DIGEST_LEN);
			count++;
		}
	dirty = false;
	pthread_mutex_unlock(&memo_lock);
	int rc = cjc_blob_write_records(s, sub, magic, FILEHASH_VERSION, count, &records);
	int e = errno;
	cjc_buf_release(&records);
	errno = e;
	return rc;
}
