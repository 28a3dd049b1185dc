#include "identity.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "blob.h"
#include "fs.h"
#include "run.h"

static const char magic[4] = { 'C', 'J', 'C', 'I' };
#define RACY_NS 2000000000LL

struct file_stamp {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
};

static int stamp_of(const char *path, struct file_stamp *fs)
{
	struct stat st;
	memset(fs, 0, sizeof *fs);
	if (stat(path, &st))
		return -1; /* a missing file has the all-zero stamp */
	fs->dev = st.st_dev;
	fs->ino = st.st_ino;
	fs->size = (uint64_t)st.st_size;
	fs->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	fs->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	return 0;
}

static void add_str(struct cjc_buf *b, const char *s)
{
	cjc_buf_add_u32(b, (uint32_t)strlen(s));
	cjc_buf_adds(b, s);
}

static char *get_str(struct cjc_cursor *c)
{
	uint32_t n = cjc_cursor_u32(c);
	const char *p = cjc_cursor_bytes(c, n);
	return p ? cjc_xstrndup(p, n) : NULL;
}

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

/* Loads a remembered identity if every file it depends on is unchanged. */
static int load(const struct cjc_store *store, const char *cache, struct cjc_identity *id)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	if (cjc_blob_read(store, cache, magic, &payload))
		return -1;
	struct cjc_cursor c;
	cjc_cursor_init(&c, payload.data, payload.len);
	int64_t recorded = (int64_t)cjc_cursor_u64(&c);
	id->realpath = get_str(&c);
	id->version = get_str(&c);
	char *digest = get_str(&c);
	uint32_t n = cjc_cursor_u32(&c);
	bool ok = !c.bad && digest && cjc_is_hex64(digest);
	for (uint32_t i = 0; ok && i < n; i++) {
		char *path = get_str(&c);
		struct file_stamp want, now;
		const void *raw = cjc_cursor_bytes(&c, sizeof want);
		ok = path && raw;
		if (ok) {
			memcpy(&want, raw, sizeof want);
			stamp_of(path, &now);
			ok = !memcmp(&want, &now, sizeof want) &&
			     (want.mtime_ns == 0 || want.mtime_ns < recorded - RACY_NS) &&
			     (want.ctime_ns == 0 || want.ctime_ns < recorded - RACY_NS);
		}
		free(path);
	}
	if (ok)
		memcpy(id->digest, digest, CJC_HEX_LEN + 1);
	free(digest);
	cjc_buf_release(&payload);
	if (!ok) {
		free(id->realpath);
		free(id->version);
		id->realpath = id->version = NULL;
		return -1;
	}
	return 0;
}

static void save(const struct cjc_store *store, const char *cache, struct cjc_identity *id,
		 char *const *files, size_t n)
{
	struct cjc_buf b = CJC_BUF_INIT;
	cjc_buf_add_u64(&b, (uint64_t)cjc_wall_ns());
	add_str(&b, id->realpath);
	add_str(&b, id->version);
	add_str(&b, id->digest);
	cjc_buf_add_u32(&b, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		struct file_stamp fs;
		stamp_of(files[i], &fs);
		add_str(&b, files[i]);
		cjc_buf_add(&b, &fs, sizeof fs);
	}
	id->save_errno = cjc_blob_write(store, cache, magic, &b) ? errno : 0;
	cjc_buf_release(&b);
}

/* Works the identity out: realpath, --version, and hashes of the files. */
static int compute(struct cjc_identity *id, char *const *files, size_t n)
{
	char real[PATH_MAX];
	if (!realpath(id->path, real))
		return -1;
	id->realpath = cjc_xstrdup(real);
	struct cjc_buf version = CJC_BUF_INIT;
	char *argv[] = { id->path, "--version", NULL };
	int rc = cjc_run_capture(argv, &version);
	if (rc != 0) {
		cjc_buf_release(&version);
		errno = rc < 0 ? errno : ENOEXEC;
		return -1;
	}
	id->version = cjc_buf_detach(&version);
	struct cjc_hash h;
	cjc_hash_init(&h);
	cjc_hash_str(&h, id->path);
	cjc_hash_str(&h, id->realpath);
	cjc_hash_str(&h, id->version);
	for (size_t i = 0; i < n; i++) {
		unsigned char d[CJC_DIGEST_LEN];
		uint64_t size = 0;
		cjc_hash_str(&h, files[i]);
		if (cjc_hash_file(files[i], d, &size))
			memset(d, 0, sizeof d);
		cjc_hash_update(&h, d, sizeof d);
	}
	cjc_hash_final_hex(&h, id->digest);
	return 0;
}

static int identify(const struct cjc_store *store, const char *kind, struct cjc_identity *id,
		    char *const *files, size_t n)
{
	char *cache = store ? cache_name(kind, id->path) : NULL;
	int rc = 0;
	if (!cache || load(store, cache, id)) {
		rc = compute(id, files, n);
		if (!rc && cache)
			save(store, cache, id, files, n);
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
	static const char *const tools[] = { "ptxas", "fatbinary", "nvlink", "cudafe++",
					      "nvcc.profile", "../nvvm/bin/cicc" };
	struct cjc_strvec files = CJC_STRVEC_INIT;
	cjc_strvec_push(&files, id->path);
	for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
		char *p = cjc_path_join(bin, tools[i]);
		cjc_strvec_push(&files, p);
		free(p);
	}
	free(bin);
	int rc = identify(store, "nvcc", id, files.v, files.n);
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
	int rc = identify(store, "host", id, files, 1);
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
