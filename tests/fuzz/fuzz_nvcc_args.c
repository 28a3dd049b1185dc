/* fuzz_nvcc_args.c - libFuzzer: the nvcc argument parser.  The input is
 * the argument list, one argument per line. */
#include <stdlib.h>
#include <string.h>

#include "cudajitcache.h"
#include "keys/nvcc_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	struct cjc_strvec args = CJC_STRVEC_INIT;
	for (char *save = NULL, *a = strtok_r(text, "\n", &save); a; a = strtok_r(NULL, "\n", &save))
		cjc_strvec_push(&args, a);
	struct cjc_compile c;
	cjc_compile_parse((int)args.n, args.v, NULL, &c);
	if (!c.uncacheable && (!c.source || !c.output))
		__builtin_trap(); /* a cacheable compile has a source and an output */
	cjc_compile_release(&c);
	cjc_strvec_clear(&args);
	free(text);
	return 0;
}
