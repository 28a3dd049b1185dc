/*
 * layout.h - the values of the remote layout (remote.h lays out where each
 * lives, NS/c, NS/e, NS/m, and why a poisoned one is only a miss): their
 * bounds and their bytes.  Used by the seam (fetch.c, send.c) and by a
 * backend that looks into what it stores (remote_oci.c); it uses neither.
 *
 *     entry record      a blob (base/blob.h, magic "CJCE") of two strings,
 *                       each a u32 length and its bytes: metadata.json's
 *                       exact bytes (1 to CJC_STORE_MAX_METADATA) and the
 *                       signature file's (empty when unsigned, at most
 *                       CJC_SIGN_MAX; store/sign.h)
 *     manifest value    unsigned: the manifest file's exact bytes (magic
 *                       "CJCM", keys/manifest.h); signed: a blob (magic
 *                       "CJCS") of two strings as above, the manifest
 *                       file's bytes (at most CJC_STORE_MAX_FILE) and the
 *                       signature file's, over
 *                       "cudajitcache.manifest.v1 <direct key>\n" and them
 *     combined value    a blob (magic "CJCX") of an entry record's exact
 *                       bytes (a u32 length and them), a u32 count, and
 *                       that many inline artifacts, each the SHA-256 of
 *                       its stored bytes in hex (64 bytes: only what a
 *                       reader finds them by; it checks the bytes against
 *                       the record's hash, as a fetched artifact's) and
 *                       those bytes (a u32 length and them): at most
 *                       CJC_REMOTE_INLINE_FILES of them, of at most
 *                       CJC_REMOTE_INLINE_MAX bytes together, never one
 *                       hash twice
 *
 * The decoders take any bytes (a server's) and point into them or copy
 * out; they return -1 for what is not such a value, never more.
 */
#ifndef CJC_REMOTE_LAYOUT_H
#define CJC_REMOTE_LAYOUT_H

#include <stddef.h>

#include "base/hash.h"
#include "base/util.h"
#include "store/sign.h"
#include "store/store.h"

/* What a get of an entry record or a manifest value may read. */
#define CJC_REMOTE_RECORD_MAX (CJC_STORE_MAX_METADATA + CJC_SIGN_MAX + 64)
#define CJC_REMOTE_MANIFEST_MAX (CJC_STORE_MAX_FILE + CJC_SIGN_MAX + 64)

/* What a combined value may carry inline, and what a get of one may read. */
#define CJC_REMOTE_INLINE_MAX ((size_t)1 << 20)
#define CJC_REMOTE_INLINE_FILES 16
#define CJC_REMOTE_COMBINED_MAX                                                                    \
	(CJC_REMOTE_RECORD_MAX + CJC_REMOTE_INLINE_MAX +                                           \
	 CJC_REMOTE_INLINE_FILES * (CJC_HEX_LEN + 4) + 64)

/* An entry record: 0, or -1 when it is not one. */
int cjc_remote_decode_record(const void *p, size_t n, struct cjc_buf *meta, struct cjc_buf *sig);
void cjc_remote_encode_record(const struct cjc_buf *meta, const struct cjc_buf *sig, struct cjc_buf *out);

/* A combined value, its parts pointing into the value's bytes. */
struct cjc_remote_inline {
	char sha[CJC_HEX_LEN + 1]; /* the hash it is named by: not yet checked */
	const void *p;
	size_t n;
};
struct cjc_remote_combined {
	const void *record; /* an entry record's bytes, not yet decoded */
	size_t record_len;
	struct cjc_remote_inline files[CJC_REMOTE_INLINE_FILES];
	size_t nfiles;
};
int cjc_remote_decode_combined(const void *data, size_t len, struct cjc_remote_combined *out);
/* The inline artifact named sha, or NULL. */
const struct cjc_remote_inline *cjc_remote_inline_find(const struct cjc_remote_combined *c,
						       const char *sha);
void cjc_remote_encode_combined(const struct cjc_remote_combined *c, struct cjc_buf *out);

/* A manifest value, either form: the manifest file's bytes and the
 * signature file's (empty when unsigned), pointing into data; 0, or -1
 * when it is a signed one that does not decode. */
int cjc_remote_decode_manifest(const void *data, size_t len, const void **file, size_t *file_len,
			       const void **sig, size_t *sig_len);
/* The value of a manifest file: signed when sig_len, else its bytes alone. */
void cjc_remote_encode_manifest(const void *file, size_t file_len, const void *sig, size_t sig_len,
				struct cjc_buf *out);

/* A manifest file's signature, stored under direct_key, by the private
 * key file key (sign.h): 0, or -1 with why. */
int cjc_remote_manifest_sign(const char *key, const char *direct_key, const void *file, size_t n,
			     struct cjc_buf *sig, struct cjc_buf *why);
/* Whether a trusted key (or, for a writer, its own key own_key) signed a
 * manifest file stored under direct_key: 0, or -1 with why. */
int cjc_remote_manifest_verify(const char *trusted_keys, const char *own_key, const char *direct_key,
			       const void *file, size_t n, const void *sig, size_t siglen,
			       struct cjc_buf *why);

#endif
