/*
 * jit_cli - drives libcudajitcache from the shell suite (tests/jit_test.sh)
 * and the benchmark: compiles one source file's text through the library.
 *
 *     jit_cli [--prefix P] [--arch A] [--format cubin|fatbin|ptx] [--name N]
 *             [--out FILE] [--repeat N] [--setting NAME] [--between CMD [--warm N]]
 *             [--null-options N] [--fail-first 1] [--device-arch D]... SOURCE [OPTION...]
 *
 * Prints "hit KEY" or "miss KEY" per compile (KEY "-" when not cached) on
 * stdout; --setting prints one effective setting instead; --repeat N compiles
 * N times and prints the mean time per compile after the first, in ms;
 * --between CMD compiles, runs CMD (sh -c), and compiles again with the same
 * handle, printing both results (what one handle remembers must not outlive
 * a change); with --warm N, it compiles N more times before CMD (from the
 * handle's memory, its files found unchanged, then trusted while the
 * kernel reports no change: src/jit/changes.c).  --null-options N sends options = NULL with noptions = N;
 * --fail-first 1 first makes a call that fails (a request without code).
 * --device-arch D (repeatable, in order, after the open and before any
 * compile): makes device D's primary context current for this thread
 * ("none": no current context), or, for "fork", forks; then prints
 * "D ARCH" from cjc_jit_device_arch() (the child of "fork" prints it and
 * exits).  The last context stays current for the compile.  Without a
 * SOURCE, only that is done.
 * After a success, an error left in cjc_jit_error() is a failure, and so is
 * a signal's handler that the library changed (it lives in others' programs).
 * Exit 0, or 1 with the library's error on stderr (and the compiler's log).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cudajitcache/jit.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = '\0';
	fclose(f);
	return s;
}

/* --device-arch D: 0, or 1 with the library's error on stderr. */
static int device_arch(cjc_jit *jit, const char *device)
{
	int (*retain)(void **, int) = (int (*)(void **, int))cjc_jit_driver_symbol(jit,
		"cuDevicePrimaryCtxRetain");
	int (*set_current)(void *) = (int (*)(void *))cjc_jit_driver_symbol(jit, "cuCtxSetCurrent");
	void *ctx = NULL;
	pid_t child = -1;
	if (!strcmp(device, "fork"))
		child = fork();
	else if (!retain || !set_current)
		return fprintf(stderr, "jit_cli: no driver: %s\n", cjc_jit_error(jit)), 1;
	else if (strcmp(device, "none") && retain(&ctx, atoi(device)))
		return fprintf(stderr, "jit_cli: cannot retain device %s's context\n", device), 1;
	else if (set_current(ctx))
		return fprintf(stderr, "jit_cli: cannot make device %s's context current\n", device), 1;
	if (child > 0) {
		int status = 0;
		return waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status);
	}
	char arch[32];
	int rc = cjc_jit_device_arch(jit, arch, sizeof arch);
	if (rc)
		fprintf(stderr, "jit_cli: %s\n", cjc_jit_error(jit));
	else
		printf("%s %s\n", device, arch);
	fflush(stdout);
	if (child == 0)
		_exit(rc ? 1 : 0);
	return rc ? 1 : 0;
}

static const int signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT };
#define NSIGNALS (sizeof signals / sizeof *signals)

static void handlers(void (*out[NSIGNALS])(int))
{
	for (size_t i = 0; i < NSIGNALS; i++) {
		struct sigaction sa;
		sigaction(signals[i], NULL, &sa);
		out[i] = sa.sa_handler;
	}
}

/* 0, or 1 when a signal's handler is not what it was (before). */
static int handlers_changed(void (*before[NSIGNALS])(int))
{
	void (*now[NSIGNALS])(int);
	handlers(now);
	for (size_t i = 0; i < NSIGNALS; i++)
		if (now[i] != before[i])
			return fprintf(stderr, "jit_cli: the library changed signal %d's handler\n",
				       signals[i]), 1;
	return 0;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	const char *prefix = NULL, *out = NULL, *setting = NULL, *between = NULL;
	int warm = 0;
	struct cjc_jit_request req = { .arch = "sm_80", .format = CJC_JIT_CUBIN };
	int repeat = 1, i = 1, null_options = -1, fail_first = 0, ndevices = 0;
	const char *devices[16];
	for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
		const char *v = argv[i + 1];
		if (!strcmp(argv[i], "--prefix"))
			prefix = v;
		else if (!strcmp(argv[i], "--arch"))
			req.arch = strcmp(v, "gpu") ? v : NULL;
		else if (!strcmp(argv[i], "--format"))
			req.format = !strcmp(v, "ptx") ? CJC_JIT_PTX : !strcmp(v, "fatbin") ? CJC_JIT_FATBIN
											  : CJC_JIT_CUBIN;
		else if (!strcmp(argv[i], "--name"))
			req.name = v;
		else if (!strcmp(argv[i], "--out"))
			out = v;
		else if (!strcmp(argv[i], "--repeat"))
			repeat = atoi(v);
		else if (!strcmp(argv[i], "--setting"))
			setting = v;
		else if (!strcmp(argv[i], "--between"))
			between = v;
		else if (!strcmp(argv[i], "--warm"))
			warm = atoi(v);
		else if (!strcmp(argv[i], "--null-options"))
			null_options = atoi(v);
		else if (!strcmp(argv[i], "--fail-first"))
			fail_first = atoi(v);
		else if (!strcmp(argv[i], "--device-arch") && ndevices < 16)
			devices[ndevices++] = v;
		else
			return fprintf(stderr, "jit_cli: unknown option %s\n", argv[i]), 2;
	}
	void (*before[NSIGNALS])(int);
	handlers(before);
	char err[1024];
	cjc_jit *jit = cjc_jit_open(prefix, err, sizeof err);
	if (!jit)
		return fprintf(stderr, "jit_cli: %s\n", err), 1;
	if (setting) {
		const char *v = cjc_jit_setting(jit, setting);
		printf("%s\n", v ? v : "(unknown)");
		cjc_jit_close(jit);
		return 0;
	}
	for (int d = 0; d < ndevices; d++)
		if (device_arch(jit, devices[d]))
			return cjc_jit_close(jit), 1;
	if (i >= argc && ndevices) {
		cjc_jit_close(jit);
		return 0;
	}
	if (i >= argc)
		return fprintf(stderr, "jit_cli: no source\n"), 2;
	char *code = slurp(argv[i]);
	if (!code)
		return fprintf(stderr, "jit_cli: cannot read %s\n", argv[i]), 1;
	req.code = code;
	req.options = (const char *const *)argv + i + 1;
	req.noptions = (size_t)(argc - i - 1);
	if (null_options >= 0)
		req.options = NULL, req.noptions = (size_t)null_options;
	int rc = 0;
	if (fail_first) {
		struct cjc_jit_request bad = req;
		struct cjc_jit_result res;
		bad.code = NULL;
		if (!cjc_jit_compile(jit, &bad, &res) || !*cjc_jit_error(jit))
			rc = 1, fprintf(stderr, "jit_cli: a request without code did not fail\n");
		cjc_jit_result_free(&res);
	}
	double t0 = 0;
	if (between)
		repeat = 2 + warm;
	for (int r = 0; r < repeat && !rc; r++) {
		struct cjc_jit_result res;
		if (r == 1 + warm && between && system(between))
			rc = 1, fprintf(stderr, "jit_cli: %s failed\n", between);
		if (r == 1)
			t0 = now_ms();
		if (rc)
			break;
		rc = cjc_jit_compile(jit, &req, &res);
		if (rc) {
			fprintf(stderr, "jit_cli: %s\n%s", cjc_jit_error(jit), res.log ? res.log : "");
		} else if (*cjc_jit_error(jit)) {
			rc = 1;
			fprintf(stderr, "jit_cli: an error after a success: %s\n", cjc_jit_error(jit));
		} else if (repeat == 1 || between) {
			printf("%s %s\n", res.hit ? "hit" : "miss", res.key[0] ? res.key : "-");
			if (res.log)
				fputs(res.log, stderr);
		}
		if (!rc && out) {
			FILE *f = fopen(out, "wb");
			if (!f || fwrite(res.data, 1, res.size, f) != res.size || fclose(f))
				rc = 1, fprintf(stderr, "jit_cli: cannot write %s\n", out);
		}
		cjc_jit_result_free(&res);
	}
	if (!rc && repeat > 1 && !between)
		printf("%.4f\n", (now_ms() - t0) / (repeat - 1));
	free(code);
	cjc_jit_close(jit);
	return rc || handlers_changed(before) ? 1 : 0;
}
