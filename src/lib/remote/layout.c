/*
 * layout.c - the values of the remote layout (layout.h): the entry record,
 * the combined value and the manifest value, encoded, decoded and signed.
 */
#include "remote/layout.h"

#include <string.h>

#include "base/blob.h"
#include "base/hash.h"
#include "store/sign.h"
#include "store/store.h"

static const char record_magic[4] = { 'C', 'J', 'C', 'E' };
static const char signed_manifest_magic[4] = { 'C', 'J', 'C', 'S' };
static const char combined_magic[4] = { 'C', 'J', 'C', 'X' };

/* The two values remote.h lays out as a blob of two u32-prefixed strings
 * (the entry record, the signed manifest), pointing into data: the first
 * non-empty and at most max_first bytes, the second a signature file. */
struct pair {
	const void *first, *second;
	size_t first_len, second_len;
};

static int decode_pair(const void *data, size_t len, const char magic[4], size_t max_first,
		       struct pair *out)
{
	const void *p;
	size_t n;
	if (cjc_blob_decode(data, len, magic, &p, &n))
		return -1;
	struct cjc_cursor c;
	cjc_cursor_init(&c, p, n);
	uint32_t flen = cjc_cursor_u32(&c);
	out->first = cjc_cursor_bytes(&c, flen);
	uint32_t slen = cjc_cursor_u32(&c);
	out->second = cjc_cursor_bytes(&c, slen);
	out->first_len = flen;
	out->second_len = slen;
	return c.bad || c.left || !flen || flen > max_first || slen > CJC_SIGN_MAX ? -1 : 0;
}

static void encode_pair(const char magic[4], const void *first, size_t first_len,
			const void *second, size_t second_len, struct cjc_buf *out)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_buf_add_u32(&payload, (uint32_t)first_len);
	cjc_buf_add(&payload, first, first_len);
	cjc_buf_add_u32(&payload, (uint32_t)second_len);
	cjc_buf_add(&payload, second, second_len);
	cjc_blob_encode(out, magic, payload.data, payload.len);
	cjc_buf_release(&payload);
}

int cjc_remote_decode_record(const void *data, size_t len, struct cjc_buf *meta, struct cjc_buf *sig)
{
	struct pair pr;
	if (decode_pair(data, len, record_magic, CJC_STORE_MAX_METADATA, &pr))
		return -1;
	cjc_buf_add(meta, pr.first, pr.first_len);
	cjc_buf_add(sig, pr.second, pr.second_len);
	return 0;
}

void cjc_remote_encode_record(const struct cjc_buf *meta, const struct cjc_buf *sig, struct cjc_buf *out)
{
	encode_pair(record_magic, meta->data, meta->len, sig->data, sig->len, out);
}

/* One inline artifact of a combined value into f; false when it is not one
 * or would pass the bounds (*total: the bytes inline so far). */
static bool decode_inline(struct cjc_cursor *c, struct cjc_remote_inline *f, size_t *total)
{
	const void *sha = cjc_cursor_bytes(c, CJC_HEX_LEN);
	uint32_t n = cjc_cursor_u32(c);
	f->p = cjc_cursor_bytes(c, n);
	f->n = n;
	if (c->bad || n > CJC_REMOTE_INLINE_MAX - *total)
		return false;
	*total += n;
	memcpy(f->sha, sha, CJC_HEX_LEN);
	f->sha[CJC_HEX_LEN] = '\0';
	return cjc_is_hex64(f->sha);
}

int cjc_remote_decode_combined(const void *data, size_t len, struct cjc_remote_combined *out)
{
	const void *p;
	size_t n, total = 0;
	if (cjc_blob_decode(data, len, combined_magic, &p, &n))
		return -1;
	struct cjc_cursor c;
	cjc_cursor_init(&c, p, n);
	uint32_t rlen = cjc_cursor_u32(&c);
	out->record = cjc_cursor_bytes(&c, rlen);
	out->record_len = rlen;
	uint32_t count = cjc_cursor_u32(&c);
	if (c.bad || !rlen || rlen > CJC_REMOTE_RECORD_MAX || count > CJC_REMOTE_INLINE_FILES)
		return -1;
	out->nfiles = 0;
	for (uint32_t i = 0; i < count; i++) {
		struct cjc_remote_inline *f = &out->files[i];
		if (!decode_inline(&c, f, &total) || cjc_remote_inline_find(out, f->sha))
			return -1;
		out->nfiles++;
	}
	return c.left ? -1 : 0;
}

const struct cjc_remote_inline *cjc_remote_inline_find(const struct cjc_remote_combined *c,
						       const char *sha)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (!strcmp(c->files[i].sha, sha))
			return &c->files[i];
	return NULL;
}

void cjc_remote_encode_combined(const struct cjc_remote_combined *c, struct cjc_buf *out)
{
	size_t start = cjc_blob_open(out, combined_magic);
	cjc_buf_add_u32(out, (uint32_t)c->record_len);
	cjc_buf_add(out, c->record, c->record_len);
	cjc_buf_add_u32(out, (uint32_t)c->nfiles);
	for (size_t i = 0; i < c->nfiles; i++) {
		cjc_buf_add(out, c->files[i].sha, CJC_HEX_LEN);
		cjc_buf_add_u32(out, (uint32_t)c->files[i].n);
		cjc_buf_add(out, c->files[i].p, c->files[i].n);
	}
	cjc_blob_close(out, start);
}

int cjc_remote_decode_manifest(const void *data, size_t len, const void **file, size_t *file_len,
			       const void **sig, size_t *sig_len)
{
	struct pair pr = { .first = data, .first_len = len, .second = "", .second_len = 0 };
	if (len >= 4 && !memcmp(data, signed_manifest_magic, 4) &&
	    decode_pair(data, len, signed_manifest_magic, CJC_STORE_MAX_FILE, &pr))
		return -1;
	*file = pr.first;
	*file_len = pr.first_len;
	*sig = pr.second;
	*sig_len = pr.second_len;
	return 0;
}

void cjc_remote_encode_manifest(const void *file, size_t file_len, const void *sig, size_t sig_len,
				struct cjc_buf *out)
{
	if (sig_len)
		encode_pair(signed_manifest_magic, file, file_len, sig, sig_len, out);
	else
		cjc_buf_add(out, file, file_len);
}

/* What a manifest's signature signs: a text naming it and the direct key it
 * is stored under, then the manifest file's bytes.  So it is never taken
 * for an entry's (metadata.json is a JSON object), nor a server's copy of
 * one direct key's manifest for another's. */
static void manifest_signed_bytes(const char *direct_key, const void *file, size_t n,
				  struct cjc_buf *out)
{
	cjc_buf_addf(out, "cudajitcache.manifest.v1 %s\n", direct_key);
	cjc_buf_add(out, file, n);
}

int cjc_remote_manifest_sign(const char *key, const char *direct_key, const void *file, size_t n,
			     struct cjc_buf *sig, struct cjc_buf *why)
{
	struct cjc_buf bytes = CJC_BUF_INIT;
	manifest_signed_bytes(direct_key, file, n, &bytes);
	int rc = cjc_sign(key, bytes.data, bytes.len, sig, why);
	cjc_buf_release(&bytes);
	return rc;
}

int cjc_remote_manifest_verify(const char *trusted_keys, const char *own_key, const char *direct_key,
			       const void *file, size_t n, const void *sig, size_t siglen,
			       struct cjc_buf *why)
{
	struct cjc_buf bytes = CJC_BUF_INIT;
	manifest_signed_bytes(direct_key, file, n, &bytes);
	int rc = cjc_sign_verify_writer(trusted_keys, own_key, bytes.data, bytes.len, sig, siglen, why);
	cjc_buf_release(&bytes);
	return rc;
}
