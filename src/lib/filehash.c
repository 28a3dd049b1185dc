#include "filehash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blob.h"
#include "stamp.h"
#include "util.h"

#define FILEHASH_VERSION 1
#define FILEHASH_MAX 16384

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

/* stat(2) through the remembered directory (lock held). */
static int stat_fast(const char *path, struct stat *st)
{
	const char *base;
	int fd = dir_fd(path, &base);
	if (!base || !*base)
		return stat(path, st);
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

/* Whether a remembered hash still holds for the file as it is now. */
static bool stamp_holds(const struct memo *m)
{
	struct stat s;
	struct cjc_stamp now;
	if (!m->stamped || stat_fast(m->path, &s))
		return false;
	cjc_stamp_of(&s, &now);
	return cjc_stamp_holds(&m->st, &now, m->taken_ns);
}

/* Reads and hashes a file, noting its stamp from the descriptor it read. */
static void hash_now(struct memo *m)
{
	m->stamped = false;
	m->taken_ns = cjc_wall_ns();
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	struct stat s;
	if (fd < 0 || fstat(fd, &s) || cjc_hash_fd(fd, m->sha, &m->size)) {
		m->err = errno ? errno : EIO;
	} else {
		m->err = 0;
		cjc_stamp_of(&s, &m->st);
		m->stamped = m->st.size == m->size;
	}
	if (fd >= 0)
		close(fd);
}

int cjc_filehash_get(const char *path, uint64_t *size, unsigned char sha[CJC_DIGEST_LEN])
{
	pthread_mutex_lock(&memo_lock);
	struct memo *m = memo_of(path);
	if (!m->known && stamp_holds(m)) {
		m->known = true;
		m->size = m->st.size;
		reused++;
	}
	if (!m->known) {
		hash_now(m);
		m->known = true;
		dirty = true;
		hashed++;
	}
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
	pthread_mutex_lock(&memo_lock);
	int rc = stat_fast(path, &st);
	int e = errno;
	pthread_mutex_unlock(&memo_lock);
	return rc && (e == ENOENT || e == ENOTDIR);
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
