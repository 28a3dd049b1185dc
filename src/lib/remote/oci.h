/*
 * oci.h - what the OCI registry backend (remote_oci.c) stores, exported for
 * its tests: the manifest that carries an entry record or a direct-mode
 * manifest (docs/remote.md#oci-registries), and base64 (oci_manifest.c);
 * a 401's challenge, read (oci_auth.c).
 */
#ifndef CJC_OCI_H
#define CJC_OCI_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "base/util.h"

/* The value an OCI manifest of ours carries for kind ('e': an entry record,
 * 'm': a direct-mode manifest), at most max bytes: 0 with the bytes in out
 * when its first layer embeds them (checked against the layer's digest and
 * size); 1 with the layer's digest (hex) and size when they are only in the
 * blob; -1 with why when the text is not such a manifest or the embedded
 * bytes are not what the layer says.  Unless it is -1, each (when not
 * NULL) is given every artifact layer after the first, with a NULL entry
 * key, and in a direct-mode manifest every record layer annotated with its
 * entry's key, with that key: with the bytes (p, n) when the layer embeds
 * them and they are what it says (their SHA-256 and size), or with p NULL
 * and n its size when it embeds none (the bytes are in the blob hex); a
 * layer that embeds wrong bytes is not given.  What a manifest embeds is
 * inflated up to CJC_OCI_EMBED_MAX in all, every layer that embeds bytes
 * charged its size, the refused ones too. */
#define CJC_OCI_EMBED_MAX ((size_t)256 << 10) /* what a manifest may embed in all, inflated */
typedef void (*cjc_oci_layer_fn)(const char *hex, const char *entry_key, const void *p, size_t n,
				 void *ctx);
int cjc_oci_manifest_value(const char *text, size_t len, char kind, size_t max,
			   struct cjc_buf *out, char hex[CJC_HEX_LEN + 1], uint64_t *size,
			   cjc_oci_layer_fn each, void *ctx, struct cjc_buf *why);

/* The value of a parameter of a WWW-Authenticate challenge (Bearer
 * realm="...",service=...): quoted, or in RFC 7235's token form (up to a
 * comma or a blank); malloc'd, or NULL when it is not there. */
char *cjc_oci_challenge_param(const char *challenge, const char *name);

/* Standard base64 with padding; decoding is strict (no blanks, padding
 * only at the end): 0, or -1 when text is not such base64. */
void cjc_base64_encode(const void *p, size_t n, struct cjc_buf *out);
int cjc_base64_decode(const char *text, size_t len, struct cjc_buf *out);

#endif
