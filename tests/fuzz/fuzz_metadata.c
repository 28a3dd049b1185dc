/* fuzz_metadata.c - libFuzzer: the strict metadata.json reader. */
#include "cudajitcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cjc_buf why = CJC_BUF_INIT;
	json_t *root = cjc_metadata_parse((const char *)data, size, NULL, &why);
	if (root) {
		size_t n;
		struct cjc_artifact *a = cjc_metadata_artifacts(root, &n);
		for (size_t i = 0; i < n; i++)
			if (!cjc_artifact_name_ok(a[i].name) || !a[i].size)
				__builtin_trap(); /* the reader let a bad artifact through */
		cjc_artifacts_free(a, n);
		json_decref(root);
	} else if (!why.len) {
		__builtin_trap(); /* a rejection must say why */
	}
	cjc_buf_release(&why);
	return 0;
}
