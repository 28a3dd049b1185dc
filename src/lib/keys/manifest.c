#include "keys/manifest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/blob.h"
#include "keys/filehash.h"

static const char magic[4] = CJC_MANIFEST_MAGIC;
#define MANIFEST_VERSION 2 /* 1: without the root and flags, still read */
#define RECORD_EXACT 1u
#define MAX_PATH_LEN 4096

static char *read_path(struct cjc_cursor *c)
{
	char *p = cjc_cursor_str(c, MAX_PATH_LEN);
	if (p && !*p) {
		free(p);
		return c->bad = true, NULL;
	}
	return p;
}

/* Version 2: the root (empty for none) and the flags. */
static int decode_place(struct cjc_cursor *c, struct cjc_manifest_record *r)
{
	size_t len;
	const char *root = cjc_cursor_chars(c, MAX_PATH_LEN, &len);
	uint32_t flags = cjc_cursor_u32(c);
	if (!root || c->bad || (len && root[0] != '/') || (flags & ~RECORD_EXACT))
		return -1;
	r->root = len ? cjc_xstrndup(root, len) : NULL;
	r->exact = flags & RECORD_EXACT;
	return 0;
}

static int decode_record(struct cjc_cursor *c, struct cjc_manifest_record *r, uint32_t version)
{
	const char *key = cjc_cursor_bytes(c, CJC_HEX_LEN);
	if (!key)
		return -1;
	memcpy(r->entry_key, key, CJC_HEX_LEN);
	r->entry_key[CJC_HEX_LEN] = '\0';
	if (!cjc_is_hex64(r->entry_key))
		return -1;
	uint32_t ndeps = cjc_cursor_u32(c);
	if (c->bad || ndeps == 0 || ndeps > c->left / 44)
		return -1;
	r->deps = cjc_xcalloc(ndeps, sizeof *r->deps);
	for (uint32_t i = 0; i < ndeps; i++) {
		struct cjc_dep *d = &r->deps[r->ndeps++]; /* counted now: released if cut short */
		d->path = read_path(c);
		d->size = cjc_cursor_u64(c);
		const void *sha = cjc_cursor_bytes(c, CJC_DIGEST_LEN);
		if (!d->path || !sha)
			return -1;
		memcpy(d->sha, sha, CJC_DIGEST_LEN);
	}
	uint32_t nabsent = cjc_cursor_u32(c);
	if (c->bad || nabsent > c->left / 5)
		return -1;
	for (uint32_t i = 0; i < nabsent; i++) {
		size_t len;
		const char *p = cjc_cursor_chars(c, MAX_PATH_LEN, &len);
		if (!p || !len)
			return -1;
		cjc_strvec_pushn(&r->absent, p, len);
	}
	return version == 1 ? 0 : decode_place(c, r);
}

int cjc_manifest_decode(const void *p, size_t n, struct cjc_manifest *m)
{
	struct cjc_cursor c;
	memset(m, 0, sizeof *m);
	cjc_cursor_init(&c, p, n);
	uint32_t version = cjc_cursor_u32(&c);
	uint32_t count = cjc_cursor_u32(&c);
	if (c.bad || (version != 1 && version != MANIFEST_VERSION) || count > CJC_MANIFEST_MAX)
		goto bad;
	m->recs = cjc_xcalloc(count ? count : 1, sizeof *m->recs);
	for (; m->n < count; m->n++)
		if (decode_record(&c, &m->recs[m->n], version)) {
			m->n++; /* so that the release frees the partial record too */
			goto bad;
		}
	if (c.left)
		goto bad;
	return 0;
bad:
	cjc_manifest_release(m);
	errno = EBADMSG;
	return -1;
}

static void encode_record(const struct cjc_manifest_record *r, struct cjc_buf *out)
{
	cjc_buf_add(out, r->entry_key, CJC_HEX_LEN);
	cjc_buf_add_u32(out, (uint32_t)r->ndeps);
	for (size_t i = 0; i < r->ndeps; i++) {
		cjc_buf_add_str(out, r->deps[i].path);
		cjc_buf_add_u64(out, r->deps[i].size);
		cjc_buf_add(out, r->deps[i].sha, CJC_DIGEST_LEN);
	}
	cjc_buf_add_u32(out, (uint32_t)r->absent.n);
	for (size_t i = 0; i < r->absent.n; i++)
		cjc_buf_add_str(out, r->absent.v[i]);
	cjc_buf_add_str(out, r->root ? r->root : "");
	cjc_buf_add_u32(out, r->exact ? RECORD_EXACT : 0);
}

void cjc_manifest_encode(const struct cjc_manifest *m, struct cjc_buf *out)
{
	cjc_buf_add_u32(out, MANIFEST_VERSION);
	cjc_buf_add_u32(out, (uint32_t)m->n);
	for (size_t i = 0; i < m->n; i++)
		encode_record(&m->recs[i], out);
}

void cjc_manifest_encode_with(const struct cjc_manifest *old, const struct cjc_manifest_record *rec,
			struct cjc_buf *payload)
{
	struct cjc_manifest out = { 0 };
	out.recs = cjc_xcalloc(old->n + 1, sizeof *out.recs);
	out.recs[out.n++] = *rec;
	for (size_t i = 0; i < old->n && out.n < CJC_MANIFEST_MAX; i++)
		if (strcmp(old->recs[i].entry_key, rec->entry_key))
			out.recs[out.n++] = old->recs[i];
	cjc_manifest_encode(&out, payload);
	free(out.recs);
}

int cjc_manifest_decode_file(const void *p, size_t n, struct cjc_manifest *m)
{
	const void *payload;
	size_t len;
	memset(m, 0, sizeof *m);
	if (cjc_blob_decode(p, n, magic, &payload, &len)) {
		errno = EBADMSG;
		return -1;
	}
	/* a packed one (blob.h), as the store keeps it, or a plain one */
	struct cjc_buf plain = CJC_BUF_INIT;
	int rc = cjc_blob_unpack(payload, len, CJC_MANIFEST_MAX_FILE, &plain);
	if (!rc)
		rc = cjc_manifest_decode(plain.data, plain.len, m);
	else if (rc > 0)
		rc = cjc_manifest_decode(payload, len, m);
	int e = errno;
	cjc_buf_release(&plain);
	errno = e;
	return rc;
}

void cjc_manifest_encode_file_with(const struct cjc_manifest *old,
				   const struct cjc_manifest_record *rec, struct cjc_buf *out)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_manifest_encode_with(old, rec, &payload);
	cjc_blob_encode(out, magic, payload.data, payload.len);
	cjc_buf_release(&payload);
}

bool cjc_manifest_record_holds(const struct cjc_manifest_record *r)
{
	char **paths = cjc_xcalloc(r->ndeps + 1, sizeof *paths);
	for (size_t i = 0; i < r->ndeps; i++)
		paths[i] = r->deps[i].path;
	cjc_filehash_prefetch(paths, r->ndeps); /* in parallel; then from memory */
	free(paths);
	for (size_t i = 0; i < r->ndeps; i++) {
		uint64_t size;
		unsigned char sha[CJC_DIGEST_LEN];
		if (cjc_filehash_get(r->deps[i].path, &size, sha) || size != r->deps[i].size ||
		    memcmp(sha, r->deps[i].sha, CJC_DIGEST_LEN))
			return false;
	}
	for (size_t i = 0; i < r->absent.n; i++)
		if (!cjc_filehash_absent(r->absent.v[i]))
			return false;
	return true;
}

/* The entry key the record's files give in this place (key.h). */
static bool key_matches(const struct cjc_manifest_record *r, const char *direct_key,
			const struct cjc_place *place)
{
	char key[CJC_HEX_LEN + 1];
	cjc_key_entry(direct_key, r, place, key);
	return !strcmp(key, r->entry_key);
}

static void rebase(char **path, const char *from, const char *to)
{
	char *moved = cjc_place_rebase(*path, from, to);
	if (moved) {
		free(*path);
		*path = moved;
	}
}

/* A record made under another root, its paths moved under this place's. */
static void rebase_record(struct cjc_manifest_record *r, const struct cjc_place *place)
{
	if (!place || !place->root || !r->root || !strcmp(r->root, place->root))
		return;
	for (size_t i = 0; i < r->ndeps; i++)
		rebase(&r->deps[i].path, r->root, place->root);
	for (size_t i = 0; i < r->absent.n; i++)
		rebase(&r->absent.v[i], r->root, place->root);
	cjc_replace_string(&r->root, place->root);
}

long cjc_manifest_match(const struct cjc_manifest *m, const char *direct_key,
			const struct cjc_place *place)
{
	return cjc_manifest_match_vouched(m, direct_key, place, NULL, NULL);
}

long cjc_manifest_match_held(const struct cjc_manifest *m, const char *direct_key,
			     const struct cjc_place *place,
			     bool (*holds)(void *ctx, const struct cjc_manifest_record *r),
			     void *ctx)
{
	for (size_t i = 0; i < m->n; i++)
		rebase_record(&m->recs[i], place);
	for (size_t i = 0; i < m->n; i++)
		if (key_matches(&m->recs[i], direct_key, place) && holds(ctx, &m->recs[i]))
			return (long)i;
	return -1;
}

struct vouched {
	bool (*unchanged)(void *ctx, const struct cjc_manifest_record *r);
	void *ctx;
};

static bool vouched_or_holds(void *ctx, const struct cjc_manifest_record *r)
{
	const struct vouched *v = ctx;
	return (v->unchanged && v->unchanged(v->ctx, r)) || cjc_manifest_record_holds(r);
}

long cjc_manifest_match_vouched(const struct cjc_manifest *m, const char *direct_key,
				const struct cjc_place *place,
				bool (*unchanged)(void *ctx, const struct cjc_manifest_record *r),
				void *ctx)
{
	struct vouched v = { unchanged, ctx };
	return cjc_manifest_match_held(m, direct_key, place, vouched_or_holds, &v);
}

void cjc_manifest_record_release(struct cjc_manifest_record *rec)
{
	for (size_t i = 0; i < rec->ndeps; i++)
		free(rec->deps[i].path);
	free(rec->deps);
	cjc_strvec_clear(&rec->absent);
	free(rec->root);
	memset(rec, 0, sizeof *rec);
}

void cjc_manifest_release(struct cjc_manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		cjc_manifest_record_release(&m->recs[i]);
	free(m->recs);
	memset(m, 0, sizeof *m);
}
