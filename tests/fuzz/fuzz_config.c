/* fuzz_config.c - libFuzzer: the configuration file reader (through
 * iniparser) and the size and age parsers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudajitcache.h"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!path[0]) {
		snprintf(path, sizeof path, "/tmp/cjc-fuzz-config.%d", (int)getpid());
		setenv("CJC_CONFIG", path, 1);
		unsetenv("CJC_DIR");
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	struct cjc_config cfg;
	struct cjc_buf error = CJC_BUF_INIT;
	int rc = cjc_config_load(&cfg, &error);
	if ((rc != 0) != (error.len != 0) || !cfg.dir)
		__builtin_trap(); /* a failure has a message; a result is usable */
	cjc_config_release(&cfg);
	cjc_buf_release(&error);
	char *text = strndup((const char *)data, size);
	uint64_t bytes;
	int64_t seconds;
	(void)cjc_parse_size(text, &bytes);
	(void)cjc_parse_age(text, &seconds);
	free(text);
	return 0;
}
