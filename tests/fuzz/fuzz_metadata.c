/* fuzz_metadata.c - libFuzzer: the strict metadata.json reader, and the
 * NVRTC shim's nvrtc.json reader (compile/nvrtc.h), JSON of an entry too. */
#include "compile/nvrtc.h"
#include "cudajitcache.h"

/* An nvrtc.json for two name expressions: read, or refused; never more. */
static void nvrtc_outputs(const uint8_t *data, size_t size)
{
	char *names[] = { "scale<float>", "scale<double>", NULL };
	struct cjc_strvec expressions = { names, 2, 2 };
	struct cjc_nvrtc_outputs o = { 0 };
	if (!cjc_nvrtc_outputs_parse((const char *)data, size, &expressions, &o)) {
		for (int k = 0; k < CJC_NVRTC_KINDS; k++)
			if (o.result[k] < 0 || o.result[k] > CJC_NVRTC_LAST_RESULT)
				__builtin_trap(); /* a result out of bounds got through */
		if (o.lowered.n != 2)
			__builtin_trap(); /* a lowered name per expression */
	}
	cjc_nvrtc_outputs_release(&o);
}

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
	nvrtc_outputs(data, size);
	return 0;
}
