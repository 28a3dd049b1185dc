/*
 * jit_bench - bench/run's `jit` section: the time of an in-process hit
 * through libcudajitcache.
 *
 *     jit_bench SOURCE ARCH REPS [OPTION...]
 *
 * Opens a handle and compiles SOURCE once (a miss, or a hit from the store
 * if it has it), then REPS times more on the same handle (the memory tier),
 * and prints the median and the mean of those, the number of hits among
 * them, and the time of the open and first compile together, in ms: with
 * the entry in the store, a new process's first request.  The compiler is
 * the settings' (CJC_JIT_COMPILER=nvrtc for NVRTC); the request's name is
 * bench.cu.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudajitcache/jit.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return fprintf(stderr, "usage: jit_bench SOURCE ARCH REPS [OPTION...]\n"), 2;
	FILE *f = fopen(argv[1], "rb");
	static char code[1 << 20];
	size_t n = f ? fread(code, 1, sizeof code - 1, f) : 0;
	if (f)
		fclose(f);
	code[n] = '\0';
	int reps = atoi(argv[3]);
	char err[512];
	double first = now_ms();
	cjc_jit *jit = cjc_jit_open(NULL, err, sizeof err);
	if (!jit || !n || reps < 1)
		return fprintf(stderr, "jit_bench: %s\n", jit ? "no source or reps" : err), 1;
	struct cjc_jit_request req = { .name = "bench.cu", .code = code, .arch = argv[2],
				       .options = (const char *const *)argv + 4,
				       .noptions = (size_t)(argc - 4), .format = CJC_JIT_CUBIN };
	double *t = calloc((size_t)reps, sizeof *t), sum = 0;
	int hits = 0;
	for (int i = -1; i < reps; i++) {
		struct cjc_jit_result res;
		double t0 = now_ms();
		if (cjc_jit_compile(jit, &req, &res))
			return fprintf(stderr, "jit_bench: %s\n", cjc_jit_error(jit)), 1;
		if (i < 0)
			first = now_ms() - first;
		if (i >= 0) {
			t[i] = now_ms() - t0;
			sum += t[i];
			hits += res.hit;
		}
		cjc_jit_result_free(&res);
	}
	qsort(t, (size_t)reps, sizeof *t, by_value);
	printf("%.4f %.4f %d %.4f\n", t[reps / 2], sum / reps, hits, first);
	free(t);
	cjc_jit_close(jit);
	return hits == reps ? 0 : 1;
}
