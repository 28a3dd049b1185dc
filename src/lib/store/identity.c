#include "store/identity.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/run.h"
#include "base/stamp.h"
#include "base/thread.h"
#include "store/records.h"

/*
 * A record, ids/<hash> (a memo, blob.h), little-endian, strings
 * length-prefixed (util.h):
 *
 *   u64 recorded   wall-clock ns when it was made (stamp.h, racy-clean)
 *   str kind       "nvcc", "host",   } what it identifies: the exact input
 *                  "nvrtc"           }
 *   str path       as resolved       } <hash> is the SHA-256 of
 *   str realpath
 *   str version    --version output
 *   str digest     64 hex
 *   u32 n, then n times: str file, stamp (stamp.h)
 *
 * A record whose kind and path are not the ones looked up is someone
 * else's moved there (a member can rename in ids/): it is no record.
 * Version 3 added kind and path; older records are simply made again.
 */
static const char magic[4] = { 'C', 'J', 'I', '3' };

/* The identity's file in the store (store.h). */
static char *cache_name(const char *kind, const char *path)
{
	struct cjc_hash h;
	char hex[CJC_HEX_LEN + 1];
	cjc_hash_init(&h);
	cjc_hash_str(&h, kind);
	cjc_hash_str(&h, path);
	cjc_hash_final_hex(&h, hex);
	return cjc_xasprintf("ids/%.40s", hex);
}

static int decode(const void *payload, size_t len, const char *kind, struct cjc_identity *id);

/* Loads a remembered identity, from a file of yours or root's (blob.h,
 * memos), if it was made for kind and id->path, every file it depends on
 * is unchanged and, when real (the realpath worked out now) is given, it
 * names that realpath. */
static int load(const struct cjc_store *store, const char *cache, const char *kind,
		const char *real, struct cjc_identity *id)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	if (cjc_blob_read_memo(store, cache, magic, &payload))
		return -1;
	int rc = decode(payload.data, payload.len, kind, id);
	cjc_buf_release(&payload);
	if (!rc && real && strcmp(id->realpath, real)) {
		free(id->realpath);
		free(id->version);
		id->realpath = id->version = NULL;
		rc = -1;
	}
	return rc;
}

int cjc_identity_decode(const void *payload, size_t len, struct cjc_identity *id)
{
	return decode(payload, len, NULL, id);
}

/* Whether the string at c is want (NULL: any). */
static bool next_is(struct cjc_cursor *c, size_t max, const char *want)
{
	size_t n;
	const char *p = cjc_cursor_chars(c, max, &n);
	return p && (!want || (n == strlen(want) && !memcmp(p, want, n)));
}

/* Whether the record at c was made for kind and path (no check when kind
 * is NULL): the input its file's name is hashed from (cache_name). */
static bool made_for(struct cjc_cursor *c, const char *kind, const char *path)
{
	bool ok = next_is(c, 16, kind);
	return next_is(c, PATH_MAX, kind ? path : NULL) && ok;
}

static int decode(const void *payload, size_t len, const char *kind, struct cjc_identity *id)
{
	struct cjc_cursor c;
	cjc_cursor_init(&c, payload, len);
	int64_t recorded = (int64_t)cjc_cursor_u64(&c);
	if (!made_for(&c, kind, id->path))
		return -1;
	id->realpath = cjc_cursor_str(&c, PATH_MAX);
	id->version = cjc_cursor_str(&c, 1 << 20);
	char *digest = cjc_cursor_str(&c, CJC_HEX_LEN);
	uint32_t n = cjc_cursor_u32(&c);
	bool ok = !c.bad && cjc_is_hex64(digest);
	for (uint32_t i = 0; ok && i < n; i++) {
		char *path = cjc_cursor_str(&c, PATH_MAX);
		struct cjc_stamp then, now;
		cjc_stamp_decode(&c, &then);
		ok = !c.bad;
		if (ok) {
			cjc_stamp_path(path, &now);
			ok = cjc_stamp_holds(&then, &now, recorded);
		}
		free(path);
	}
	if (ok)
		memcpy(id->digest, digest, CJC_HEX_LEN + 1);
	free(digest);
	if (!ok) {
		free(id->realpath);
		free(id->version);
		id->realpath = id->version = NULL;
		return -1;
	}
	return 0;
}

static void save(const struct cjc_store *store, const char *cache, const char *kind,
		 struct cjc_identity *id, char *const *files, size_t n)
{
	struct cjc_buf b = CJC_BUF_INIT;
	cjc_buf_add_u64(&b, (uint64_t)cjc_wall_ns());
	cjc_buf_add_str(&b, kind);
	cjc_buf_add_str(&b, id->path);
	cjc_buf_add_str(&b, id->realpath);
	cjc_buf_add_str(&b, id->version);
	cjc_buf_add_str(&b, id->digest);
	cjc_buf_add_u32(&b, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		struct cjc_stamp st;
		cjc_stamp_path(files[i], &st);
		cjc_buf_add_str(&b, files[i]);
		cjc_stamp_encode(&b, &st);
	}
	id->save_errno = cjc_blob_write_memo(store, cache, magic, &b) ? errno : 0;
	cjc_buf_release(&b);
}

#define MAX_FILES 8

/* One file's SHA-256, on a thread of its own; zero when it cannot be read. */
struct file_digest {
	const char *path;
	unsigned char d[CJC_DIGEST_LEN];
	pthread_t thread;
	bool threaded;
};

static void *digest_file(void *arg)
{
	struct file_digest *f = arg;
	uint64_t size;
	if (cjc_hash_file(f->path, f->d, &size))
		memset(f->d, 0, sizeof f->d);
	return NULL;
}

/*
 * Works the identity out: realpath, --version, and hashes of the files.
 * The toolkit's binaries are ~190 MB (cicc alone 76 MB): hashed on a
 * thread each while --version runs, the first compile into a new store
 * waits for the largest, not for all of them one after another.
 */
static int compute(struct cjc_identity *id, char *const *files, size_t n, const char *known)
{
	char real[PATH_MAX];
	if (n > MAX_FILES) {
		errno = E2BIG; /* the callers name 7 files at most */
		return -1;
	}
	if (!realpath(id->path, real))
		return -1;
	id->realpath = cjc_xstrdup(real);
	struct file_digest f[MAX_FILES] = { 0 };
	for (size_t i = 0; i < n; i++) {
		f[i].path = files[i];
		f[i].threaded = !cjc_thread_start(&f[i].thread, digest_file, &f[i]);
		if (!f[i].threaded)
			digest_file(&f[i]);
	}
	struct cjc_buf version = CJC_BUF_INIT;
	char *argv[] = { id->path, "--version", NULL };
	int rc = known ? (cjc_buf_adds(&version, known), 0) : cjc_run_capture(argv, &version);
	int e = errno;
	for (size_t i = 0; i < n; i++)
		if (f[i].threaded)
			cjc_thread_join(f[i].thread);
	if (rc != 0) {
		cjc_buf_release(&version);
		errno = rc < 0 ? e : ENOEXEC;
		return -1;
	}
	id->version = cjc_buf_detach(&version);
	struct cjc_hash h;
	cjc_hash_init(&h);
	cjc_hash_str(&h, id->path);
	cjc_hash_str(&h, id->realpath);
	cjc_hash_str(&h, id->version);
	for (size_t i = 0; i < n; i++) {
		cjc_hash_str(&h, files[i]);
		cjc_hash_update(&h, f[i].d, sizeof f[i].d);
	}
	cjc_hash_final_hex(&h, id->digest);
	return 0;
}

static int identify(const struct cjc_store *store, const char *kind, const char *real,
		    struct cjc_identity *id, char *const *files, size_t n, const char *version)
{
	char *cache = store ? cache_name(kind, id->path) : NULL;
	int rc = 0;
	if (!cache || load(store, cache, kind, real, id)) {
		rc = compute(id, files, n, version);
		if (!rc && cache)
			save(store, cache, kind, id, files, n);
	}
	free(cache);
	return rc;
}

static int resolve(const char *name, struct cjc_identity *id)
{
	memset(id, 0, sizeof *id);
	id->path = cjc_find_program(name);
	if (!id->path) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

const char *const cjc_identity_nvcc_tools[] = { "ptxas", "fatbinary", "nvlink", "cudafe++",
					       "nvcc.profile", "../nvvm/bin/cicc", NULL };

int cjc_identity_nvcc(const struct cjc_store *store, const char *nvcc, struct cjc_identity *id)
{
	if (resolve(nvcc, id))
		return -1;
	char real[PATH_MAX];
	if (!realpath(id->path, real)) {
		cjc_identity_release(id);
		return -1;
	}
	char *bin = cjc_dirname(real);
	struct cjc_strvec files = CJC_STRVEC_INIT;
	cjc_strvec_push(&files, id->path);
	for (size_t i = 0; cjc_identity_nvcc_tools[i]; i++) {
		char *p = cjc_path_join(bin, cjc_identity_nvcc_tools[i]);
		cjc_strvec_push(&files, p);
		free(p);
	}
	free(bin);
	/* real, not what a record says, is where cuobjdump is looked for
	 * (diagnostics.h): no record names a program to run */
	int rc = identify(store, "nvcc", real, id, files.v, files.n, NULL);
	cjc_strvec_clear(&files);
	if (rc)
		cjc_identity_release(id);
	return rc;
}

int cjc_identity_host(const struct cjc_store *store, const char *compiler, struct cjc_identity *id)
{
	if (resolve(compiler, id))
		return -1;
	char *files[] = { id->path };
	int rc = identify(store, "host", NULL, id, files, 1, NULL);
	if (rc)
		cjc_identity_release(id);
	return rc;
}

int cjc_identity_library(const struct cjc_store *store, const char *kind, const char *path,
			 const char *version, char *const *files, size_t n, struct cjc_identity *id)
{
	char real[PATH_MAX];
	memset(id, 0, sizeof *id);
	id->path = cjc_xstrdup(path);
	char *cache = store ? cache_name(kind, path) : NULL;
	int rc = realpath(path, real) ? 0 : -1;
	if (!rc && !version)
		rc = cache ? load(store, cache, kind, real, id) : -1;
	else if (!rc && (!cache || load(store, cache, kind, real, id))) {
		rc = compute(id, files, n, version);
		if (!rc && cache)
			save(store, cache, kind, id, files, n);
	}
	free(cache);
	if (rc)
		cjc_identity_release(id);
	return rc;
}

void cjc_identity_release(struct cjc_identity *id)
{
	free(id->path);
	free(id->realpath);
	free(id->version);
	memset(id, 0, sizeof *id);
}
