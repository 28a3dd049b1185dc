#include "filehash.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct memo {
	struct memo *next;
	char *path;
	int err; /* 0, or the errno of the failed read */
	uint64_t size;
	unsigned char sha[CJC_DIGEST_LEN];
};

#define MEMO_BUCKETS 1024
static struct memo *buckets[MEMO_BUCKETS];
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned bucket_of(const char *path)
{
	unsigned h = 5381;
	for (; *path; path++)
		h = h * 33 + (unsigned char)*path;
	return h % MEMO_BUCKETS;
}

int cjc_filehash_get(const char *path, uint64_t *size, unsigned char sha[CJC_DIGEST_LEN])
{
	unsigned b = bucket_of(path);
	pthread_mutex_lock(&memo_lock);
	struct memo *m;
	for (m = buckets[b]; m && strcmp(m->path, path); m = m->next)
		;
	pthread_mutex_unlock(&memo_lock);
	if (!m) {
		m = cjc_xcalloc(1, sizeof *m);
		m->path = cjc_xstrdup(path);
		if (cjc_hash_file(path, m->sha, &m->size))
			m->err = errno ? errno : EIO;
		pthread_mutex_lock(&memo_lock);
		m->next = buckets[b];
		buckets[b] = m;
		pthread_mutex_unlock(&memo_lock);
	}
	if (m->err) {
		errno = m->err;
		return -1;
	}
	*size = m->size;
	memcpy(sha, m->sha, CJC_DIGEST_LEN);
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
	pthread_mutex_unlock(&memo_lock);
}
