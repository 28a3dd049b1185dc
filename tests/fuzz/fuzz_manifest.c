/* fuzz_manifest.c - libFuzzer: the manifest decoder, which must round-trip
 * whatever it accepts, and the CRC frame around it. */
#include <string.h>

#include "cudajitcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A framed file is checked and unwrapped; anything else is a payload. */
	const void *payload = data;
	size_t n = size;
	if (cjc_blob_decode(data, size, "CJCM", &payload, &n))
		payload = data, n = size;
	struct cjc_manifest m;
	if (cjc_manifest_decode(payload, n, &m))
		return 0;
	struct cjc_buf once = CJC_BUF_INIT, twice = CJC_BUF_INIT;
	cjc_manifest_encode(&m, &once);
	struct cjc_manifest again;
	if (cjc_manifest_decode(once.data, once.len, &again))
		__builtin_trap(); /* what we encode, we must read */
	cjc_manifest_encode(&again, &twice);
	if (once.len != twice.len || memcmp(once.data, twice.data, once.len))
		__builtin_trap();
	(void)cjc_manifest_match(&m, "direct", NULL);
	cjc_manifest_release(&m);
	cjc_manifest_release(&again);
	cjc_buf_release(&once);
	cjc_buf_release(&twice);
	return 0;
}
