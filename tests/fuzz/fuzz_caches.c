/* fuzz_caches.c - libFuzzer: the readers of the per-translation-unit caches
 * (filehash.h, metamemo.h).  The input is framed with a valid CRC first, so
 * the records themselves are what gets fuzzed; the first byte picks the
 * reader. */
#include <stdio.h>
#include <unistd.h>

#include "cudajitcache.h"

static struct cjc_store store;
static const char path[] = "hashes/00/cache";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!store.dir) {
		char dir[64];
		snprintf(dir, sizeof dir, "/tmp/cjc-fuzz-cache.%d", (int)getpid());
		if (cjc_store_open(&store, dir))
			__builtin_trap();
	}
	if (size < 1)
		return 0;
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_buf_add(&payload, data + 1, size - 1);
	bool meta = data[0] & 1;
	if (cjc_blob_write(&store, path, meta ? "CJCV" : "CJCF", &payload))
		__builtin_trap();
	if (meta) {
		(void)cjc_metamemo_load(&store, path);
		struct cjc_artifact *files;
		size_t n;
		int64_t duration;
		unsigned char sha[CJC_DIGEST_LEN] = { 0 };
		if (cjc_metamemo_find("00", sha, &files, &n, &duration))
			cjc_artifacts_free(files, n);
		(void)cjc_metamemo_save(&store, path);
		cjc_metamemo_forget();
	} else {
		uint64_t sz;
		unsigned char sha[CJC_DIGEST_LEN];
		(void)cjc_filehash_load(&store, path);
		(void)cjc_filehash_get("/nonexistent/cjc-fuzz", &sz, sha);
		(void)cjc_filehash_absent("/nonexistent/cjc-fuzz/x.h");
		cjc_filehash_forget();
	}
	cjc_buf_release(&payload);
	return 0;
}
