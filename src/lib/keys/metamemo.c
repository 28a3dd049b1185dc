#include "keys/metamemo.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/oom.h"
#include "base/stamp.h"
#include "base/util.h"


struct record {
	char key[CJC_HEX_LEN + 1];
	unsigned char sha[CJC_DIGEST_LEN];
	int64_t duration_ms;
	struct cjc_artifact *files;
	size_t nfiles;
	struct cjc_stamp st; /* of the file that hashed to sha, taken at taken_ns; */
	int64_t taken_ns;    /* 0: none */
};

/* Newest last. */
static struct record records_of[CJC_METAMEMO_MAX];
static size_t nrecords;
static bool dirty;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct cjc_artifact *copy_files(const struct cjc_artifact *files, size_t n)
{
	struct cjc_artifact *c = cjc_xcalloc(n ? n : 1, sizeof *c);
	for (size_t i = 0; i < n; i++) {
		c[i] = files[i];
		c[i].name = cjc_xstrdup(files[i].name);
	}
	return c;
}

/* The record of key that sha, or else stamp, names (lock held). */
static struct record *find_locked(const char *key, const unsigned char *sha,
				  const struct cjc_stamp *now)
{
	for (size_t i = 0; i < nrecords; i++) {
		struct record *r = &records_of[i];
		if (strcmp(r->key, key))
			continue;
		if (sha ? !memcmp(r->sha, sha, CJC_DIGEST_LEN)
			: r->taken_ns && cjc_stamp_holds(&r->st, now, r->taken_ns))
			return r;
	}
	return NULL;
}

static bool find(const char *key, const unsigned char *sha, const struct cjc_stamp *now,
		 struct cjc_artifact **files, size_t *nfiles, int64_t *duration_ms)
{
	cjc_oom_lock(&lock);
	struct record *r = find_locked(key, sha, now);
	if (r) {
		*files = copy_files(r->files, r->nfiles);
		*nfiles = r->nfiles;
		*duration_ms = r->duration_ms;
	}
	cjc_oom_unlock(&lock);
	return r;
}

bool cjc_metamemo_find(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
		       struct cjc_artifact **files, size_t *nfiles, int64_t *duration_ms)
{
	return find(key, sha, NULL, files, nfiles, duration_ms);
}

bool cjc_metamemo_find_stamp(const char *key, const struct cjc_stamp *now,
			     struct cjc_artifact **files, size_t *nfiles, int64_t *duration_ms)
{
	return find(key, NULL, now, files, nfiles, duration_ms);
}

void cjc_metamemo_stamp(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
			const struct cjc_stamp *st, int64_t taken_ns)
{
	cjc_oom_lock(&lock);
	struct record *r = find_locked(key, sha, NULL);
	if (r && (r->taken_ns != taken_ns || memcmp(&r->st, st, sizeof *st))) {
		r->st = *st;
		r->taken_ns = taken_ns;
		dirty = true;
	}
	cjc_oom_unlock(&lock);
}

/* Adds a record, dropping the oldest when full (lock held). */
static void add_locked(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
		       struct cjc_artifact *files, size_t nfiles, int64_t duration_ms)
{
	if (nrecords == CJC_METAMEMO_MAX) {
		cjc_artifacts_free(records_of[0].files, records_of[0].nfiles);
		memmove(records_of, records_of + 1, (CJC_METAMEMO_MAX - 1) * sizeof *records_of);
		nrecords--;
	}
	struct record *r = &records_of[nrecords++];
	memcpy(r->key, key, CJC_HEX_LEN);
	r->key[CJC_HEX_LEN] = '\0';
	memcpy(r->sha, sha, CJC_DIGEST_LEN);
	r->files = files;
	r->nfiles = nfiles;
	r->duration_ms = duration_ms;
	r->taken_ns = 0;
}

void cjc_metamemo_add(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
		      const struct cjc_artifact *files, size_t nfiles, int64_t duration_ms)
{
	cjc_oom_lock(&lock);
	add_locked(key, sha, copy_files(files, nfiles), nfiles, duration_ms);
	dirty = true;
	cjc_oom_unlock(&lock);
}

void cjc_metamemo_forget(void)
{
	cjc_oom_lock(&lock);
	for (size_t i = 0; i < nrecords; i++)
		cjc_artifacts_free(records_of[i].files, records_of[i].nfiles);
	nrecords = 0;
	dirty = false;
	cjc_oom_unlock(&lock);
}

/* How an artifact is stored: its stored size (0: as it is), then, when
 * compressed, the stored bytes' hash. */
static void encode_stored(struct cjc_buf *records, const struct cjc_artifact *a)
{
	cjc_buf_add_u64(records, a->stored_size);
	if (a->stored_size)
		cjc_buf_add(records, a->stored_sha256, CJC_HEX_LEN);
}

static bool decode_stored(struct cjc_cursor *c, struct cjc_artifact *a)
{
	a->stored_size = cjc_cursor_u64(c);
	if (!a->stored_size)
		return !c->bad;
	const char *hex = cjc_cursor_bytes(c, CJC_HEX_LEN);
	if (c->bad)
		return false;
	memcpy(a->stored_sha256, hex, CJC_HEX_LEN);
	a->stored_sha256[CJC_HEX_LEN] = '\0';
	return cjc_is_hex64(a->stored_sha256);
}

/* One record from the file; false when it is malformed. */
static bool decode_record(struct cjc_cursor *c)
{
	const char *key = cjc_cursor_bytes(c, CJC_HEX_LEN);
	const void *sha = cjc_cursor_bytes(c, CJC_DIGEST_LEN);
	int64_t duration = (int64_t)cjc_cursor_u64(c);
	struct cjc_stamp st;
	cjc_stamp_decode(c, &st);
	int64_t taken = (int64_t)cjc_cursor_u64(c);
	uint32_t n = cjc_cursor_u32(c);
	if (c->bad || n > 8)
		return false;
	char k[CJC_HEX_LEN + 1];
	memcpy(k, key, CJC_HEX_LEN);
	k[CJC_HEX_LEN] = '\0';
	struct cjc_artifact *files = cjc_xcalloc(n ? n : 1, sizeof *files);
	bool ok = cjc_is_hex64(k);
	for (uint32_t i = 0; ok && i < n; i++) {
		char *name = cjc_cursor_str(c, 64);
		files[i].size = cjc_cursor_u64(c);
		const char *hex = cjc_cursor_bytes(c, CJC_HEX_LEN);
		if (c->bad) {
			free(name);
			break;
		}
		files[i].name = name;
		memcpy(files[i].sha256, hex, CJC_HEX_LEN);
		files[i].sha256[CJC_HEX_LEN] = '\0';
		ok = cjc_artifact_name_ok(files[i].name) && cjc_is_hex64(files[i].sha256) &&
		     files[i].size > 0 && decode_stored(c, &files[i]);
	}
	if (!ok || c->bad) {
		cjc_artifacts_free(files, n);
		return false;
	}
	add_locked(k, sha, files, n, duration);
	records_of[nrecords - 1].st = st;
	records_of[nrecords - 1].taken_ns = taken;
	return true;
}

void cjc_metamemo_decode(struct cjc_cursor *c, uint32_t count)
{
	cjc_oom_lock(&lock);
	for (uint32_t i = 0; i < count && decode_record(c); i++)
		;
	cjc_oom_unlock(&lock);
}

bool cjc_metamemo_encode(struct cjc_buf *records, uint32_t *count)
{
	cjc_oom_lock(&lock);
	if (!dirty) {
		cjc_oom_unlock(&lock);
		return false;
	}
	*count = (uint32_t)nrecords;
	for (size_t i = 0; i < nrecords; i++) {
		const struct record *r = &records_of[i];
		cjc_buf_add(records, r->key, CJC_HEX_LEN);
		cjc_buf_add(records, r->sha, CJC_DIGEST_LEN);
		cjc_buf_add_u64(records, (uint64_t)r->duration_ms);
		cjc_stamp_encode(records, &r->st);
		cjc_buf_add_u64(records, (uint64_t)r->taken_ns);
		cjc_buf_add_u32(records, (uint32_t)r->nfiles);
		for (size_t f = 0; f < r->nfiles; f++) {
			cjc_buf_add_str(records, r->files[f].name);
			cjc_buf_add_u64(records, r->files[f].size);
			cjc_buf_add(records, r->files[f].sha256, CJC_HEX_LEN);
			encode_stored(records, &r->files[f]);
		}
	}
	dirty = false;
	cjc_oom_unlock(&lock);
	return true;
}
