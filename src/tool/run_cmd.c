/* `cjc run` (run_cmd.h). */
#include "run_cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/util.h"

#define AUDIT_MODULE "libcudajitcache-audit.so"

/* The shim's directory, as run_cmd.h says, or NULL. */
static char *shim_dir(void)
{
	const char *set = getenv("CJC_NVRTC_SHIM_DIR");
	if (set && *set)
		return cjc_xstrdup(set);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char *bin = cjc_dirname(exe);
	static const char *const from_bin[] = { CJC_SHIM_FROM_BINDIR, "../shim" };
	char *found = NULL;
	for (size_t i = 0; i < 2 && !found; i++) {
		char *dir = cjc_path_join(bin, from_bin[i]);
		char *module = cjc_path_join(dir, AUDIT_MODULE);
		char real[PATH_MAX];
		if (!access(module, R_OK) && realpath(dir, real))
			found = cjc_xstrdup(real);
		free(module);
		free(dir);
	}
	free(bin);
	return found;
}

int cjc_run_command(char **argv, size_t argc, bool env_only)
{
	char *dir = shim_dir();
	if (!dir) {
		fprintf(stderr, "cjc run: the NVRTC shim is not installed beside cjc; set "
			"CJC_NVRTC_SHIM_DIR to the directory of %s\n", AUDIT_MODULE);
		return 1;
	}
	char *module = cjc_path_join(dir, AUDIT_MODULE);
	const char *had = getenv("LD_AUDIT");
	char *audit = had && *had && !strstr(had, module) ? cjc_xasprintf("%s:%s", had, module)
							   : cjc_xstrdup(had && *had ? had : module);
	int rc = 0;
	if (env_only) {
		struct cjc_buf line = CJC_BUF_INIT;
		char *const words[] = { audit, dir };
		printf("export LD_AUDIT=");
		cjc_shell_quote(&line, &words[0], 1);
		printf("%s\nexport CJC_NVRTC_SHIM_DIR=", line.data);
		cjc_buf_reset(&line);
		cjc_shell_quote(&line, &words[1], 1);
		printf("%s\n", line.data);
		cjc_buf_release(&line);
	} else if (!argc) {
		fprintf(stderr, "cjc run: missing the program to run (cjc run -- PROGRAM [ARG...])\n");
		rc = 2;
	} else {
		setenv("LD_AUDIT", audit, 1);
		setenv("CJC_NVRTC_SHIM_DIR", dir, 1);
		execvp(argv[0], argv);
		fprintf(stderr, "cjc run: cannot run %s: %s\n", argv[0], strerror(errno));
		rc = errno == ENOENT ? 127 : 126;
	}
	free(audit);
	free(module);
	free(dir);
	return rc;
}
