/* fuzz_caches.c - libFuzzer: the readers of the per-translation-unit caches
 * (filehash.h, metamemo.h).  The input is framed with a valid CRC first, so
 * the records themselves are what gets fuzzed; the first byte picks the
 * reader. */
#include <stdio.h>
#include <unistd.h>

#include "cudajitcache.h"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!path[0])
		snprintf(path, sizeof path, "/tmp/cjc-fuzz-cache.%d", (int)getpid());
	if (size < 1)
		return 0;
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_buf_add(&payload, data + 1, size - 1);
	bool meta = data[0] & 1;
	if (cjc_blob_write(path, meta ? "CJCV" : "CJCF", &payload))
		__builtin_trap();
	if (meta) {
		(void)cjc_metamemo_load(path);
		struct cjc_artifact *files;
		size_t n;
		int64_t duration;
		unsigned char sha[CJC_DIGEST_LEN] = { 0 };
		if (cjc_metamemo_find("00", sha, &files, &n, &duration))
			cjc_artifacts_free(files, n);
		(void)cjc_metamemo_save(path);
		cjc_metamemo_forget();
	} else {
		uint64_t sz;
		unsigned char sha[CJC_DIGEST_LEN];
		(void)cjc_filehash_load(path);
		(void)cjc_filehash_get("/nonexistent/cjc-fuzz", &sz, sha);
		(void)cjc_filehash_absent("/nonexistent/cjc-fuzz/x.h");
		cjc_filehash_forget();
	}
	cjc_buf_release(&payload);
	return 0;
}
