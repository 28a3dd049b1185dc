/*
 * Whether the files a manifest record names are unchanged, for a process
 * that lives long: the tool's filehash.h remembers a hash for the life of
 * its (short) process, which here could outlive a header's change.  So each
 * handle remembers, per path, the SHA-256 and the stamp the file had when
 * it was read, and every lookup stats the file: the hash is reused only
 * while the stamp holds (stamp.h, git's racy-clean rule).  Candidates that
 * must stay absent are stat'ed every time.  The lock guards the table
 * alone; files are read and stat'ed outside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit_internal.h"
#include "key.h"
#include "stamp.h"

#define BUCKETS 1024
#define MAX_PATHS 65536 /* past this, files are hashed each time */

struct dep_memo {
	struct dep_memo *next;
	char *path;
	struct cjc_stamp st;
	int64_t taken_ns;
	uint64_t size;
	unsigned char sha[CJC_DIGEST_LEN];
};

static unsigned bucket_of(const char *path)
{
	unsigned v = 5381;
	for (; *path; path++)
		v = v * 33 + (unsigned char)*path;
	return v % BUCKETS;
}

/* A remembered hash that the file's stamp now still vouches for. */
static bool remembered(struct cjc_jit *h, const char *path, const struct cjc_stamp *now,
		       uint64_t *size, unsigned char sha[CJC_DIGEST_LEN])
{
	bool found = false;
	jit_lock(h);
	struct dep_memo *m = h->deps.buckets ? h->deps.buckets[bucket_of(path)] : NULL;
	for (; m && strcmp(m->path, path); m = m->next)
		;
	if (m && cjc_stamp_holds(&m->st, now, m->taken_ns)) {
		*size = m->size;
		memcpy(sha, m->sha, CJC_DIGEST_LEN);
		found = true;
	}
	jit_unlock(h);
	return found;
}

static void remember(struct cjc_jit *h, const char *path, const struct cjc_stamp *st,
		     int64_t taken_ns, uint64_t size, const unsigned char sha[CJC_DIGEST_LEN])
{
	jit_lock(h);
	if (!h->deps.buckets)
		h->deps.buckets = cjc_xcalloc(BUCKETS, sizeof *h->deps.buckets);
	unsigned b = bucket_of(path);
	struct dep_memo *m = h->deps.buckets[b];
	for (; m && strcmp(m->path, path); m = m->next)
		;
	if (!m && h->deps.n < MAX_PATHS) {
		m = cjc_xcalloc(1, sizeof *m);
		m->path = cjc_xstrdup(path);
		m->next = h->deps.buckets[b];
		h->deps.buckets[b] = m;
		h->deps.n++;
	}
	if (m) {
		m->st = *st;
		m->taken_ns = taken_ns;
		m->size = size;
		memcpy(m->sha, sha, CJC_DIGEST_LEN);
	}
	jit_unlock(h);
}

int jit_deps_hash(struct cjc_jit *h, const char *path, uint64_t *size,
		  unsigned char sha[CJC_DIGEST_LEN])
{
	struct stat s;
	struct cjc_stamp now;
	if (stat(path, &s))
		return -1;
	cjc_stamp_of(&s, &now);
	if (remembered(h, path, &now, size, sha))
		return 0;
	int64_t taken = cjc_wall_ns();
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	int rc = fstat(fd, &s) || !S_ISREG(s.st_mode) ? -1 : cjc_hash_fd(fd, sha, size);
	int e = S_ISREG(s.st_mode) ? errno : EINVAL;
	close(fd);
	if (rc) {
		errno = e;
		return -1;
	}
	cjc_stamp_of(&s, &now);
	if (now.size == *size)
		remember(h, path, &now, taken, *size, sha);
	return 0;
}

static bool absent(const char *path)
{
	struct stat st;
	return stat(path, &st) && (errno == ENOENT || errno == ENOTDIR);
}

/* Every file as recorded (the source compared with the bytes in hand),
 * every candidate still absent. */
static bool unchanged(struct cjc_jit *h, const struct cjc_manifest_record *r, const char *source,
		      const unsigned char source_sha[CJC_DIGEST_LEN])
{
	for (size_t i = 0; i < r->ndeps; i++) {
		const struct cjc_dep *d = &r->deps[i];
		uint64_t size;
		unsigned char sha[CJC_DIGEST_LEN];
		if (!strcmp(d->path, source)) {
			if (memcmp(d->sha, source_sha, CJC_DIGEST_LEN))
				return false;
		} else if (jit_deps_hash(h, d->path, &size, sha) || size != d->size ||
			   memcmp(sha, d->sha, CJC_DIGEST_LEN)) {
			return false;
		}
	}
	for (size_t i = 0; i < r->absent.n; i++)
		if (!absent(r->absent.v[i]))
			return false;
	return true;
}

long jit_deps_match(struct cjc_jit *h, const struct cjc_manifest *m, const char *direct_key,
		    const struct cjc_place *place, const char *source,
		    const unsigned char source_sha[CJC_DIGEST_LEN])
{
	for (size_t i = 0; i < m->n; i++) {
		char key[CJC_HEX_LEN + 1];
		cjc_key_entry(direct_key, &m->recs[i], place, key);
		if (!strcmp(key, m->recs[i].entry_key) &&
		    unchanged(h, &m->recs[i], source, source_sha))
			return (long)i;
	}
	return -1;
}

void jit_deps_release(struct jit_deps *d)
{
	for (size_t b = 0; d->buckets && b < BUCKETS; b++)
		while (d->buckets[b]) {
			struct dep_memo *m = d->buckets[b];
			d->buckets[b] = m->next;
			free(m->path);
			free(m);
		}
	free(d->buckets);
	memset(d, 0, sizeof *d);
}
