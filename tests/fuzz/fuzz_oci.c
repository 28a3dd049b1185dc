/* fuzz_oci.c - libFuzzer: what an OCI registry serves (remote/oci.h): any
 * bytes as a manifest of either kind must be refused, or give a value
 * whose SHA-256 and size are its layer's, and only embedded values that
 * are what their layers say, CJC_OCI_EMBED_MAX of them in all (a layer
 * that embeds none, by its digest and size); and as a
 * WWW-Authenticate challenge, its parameters. */
#include <stdlib.h>
#include <string.h>

#include "cudajitcache.h"
#include "remote/oci.h"

#define MAX_VALUE (1 << 20)

/* Each embedded value passed on must be the bytes its layer names; ctx
 * counts them.  A layer named alone must have a digest and a size. */
static void check_embedded(const char *hex, const char *entry_key, const void *p, size_t n,
			   void *ctx)
{
	char got[CJC_HEX_LEN + 1];
	if (!p) {
		if (!cjc_is_hex64(hex) || n < 1 || (entry_key && !cjc_is_hex64(entry_key)))
			__builtin_trap();
		return;
	}
	cjc_hash_buf_hex(p, n, got);
	if (strcmp(got, hex) || (entry_key && !cjc_is_hex64(entry_key)))
		__builtin_trap();
	*(size_t *)ctx += n;
}

static void manifest(const uint8_t *data, size_t size, char kind)
{
	struct cjc_buf out = CJC_BUF_INIT, why = CJC_BUF_INIT;
	char hex[CJC_HEX_LEN + 1], got[CJC_HEX_LEN + 1];
	uint64_t n = 0;
	size_t passed_on = 0;
	int rc = cjc_oci_manifest_value((const char *)data, size, kind, MAX_VALUE, &out, hex, &n,
					check_embedded, &passed_on, &why);
	if (rc == 0)
		cjc_hash_buf_hex(out.data, out.len, got);
	if ((rc == 0 && (out.len != n || strcmp(got, hex))) || (rc == 1 && (n < 1 || n > MAX_VALUE)) ||
	    (rc < 0 && (passed_on || !why.len)) ||
	    passed_on + (rc == 0 ? out.len : 0) > CJC_OCI_EMBED_MAX)
		__builtin_trap(); /* a value not its layer's, a refusal unsaid, more than the bound */
	cjc_buf_release(&out);
	cjc_buf_release(&why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	manifest(data, size, 'e');
	manifest(data, size, 'm');
	char *challenge = cjc_xstrndup((const char *)data, size);
	free(cjc_oci_challenge_param(challenge, "realm"));
	free(cjc_oci_challenge_param(challenge, "service"));
	free(challenge);
	return 0;
}
