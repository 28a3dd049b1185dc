/*
 * nvrtc_bench: NVRTC compiles of one light kernel, as an unmodified program
 * makes them (bench/run's nvrtc section runs it with and without `cjc run`).
 *
 *   nvrtc_bench REPS [ARCH]
 *
 * Loads NVRTC by soname (libnvrtc.so.13, or $NVRTC_SONAME), then REPS times:
 * create a program, compile it, take its cubin, destroy it.  Prints, in ms:
 * the load, the first compile, and the median and mean of the others.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*create_fn)(void **, const char *, const char *, int, const char *const *,
			 const char *const *);
typedef int (*compile_fn)(void *, int, const char *const *);
typedef int (*size_fn)(void *, size_t *);
typedef int (*code_fn)(void *, char *);
typedef int (*destroy_fn)(void **);

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 0;
	char arch[64];
	snprintf(arch, sizeof arch, "-arch=%s", argc > 2 ? argv[2] : "sm_90");
	const char *soname = getenv("NVRTC_SONAME") ? getenv("NVRTC_SONAME") : "libnvrtc.so.13";
	double t0 = now_ms();
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	double loaded = now_ms() - t0;
	if (!lib) {
		fprintf(stderr, "nvrtc_bench: %s\n", dlerror());
		return 1;
	}
	create_fn create = (create_fn)dlsym(lib, "nvrtcCreateProgram");
	compile_fn compile = (compile_fn)dlsym(lib, "nvrtcCompileProgram");
	size_fn cubin_size = (size_fn)dlsym(lib, "nvrtcGetCUBINSize");
	code_fn cubin = (code_fn)dlsym(lib, "nvrtcGetCUBIN");
	destroy_fn destroy = (destroy_fn)dlsym(lib, "nvrtcDestroyProgram");
	const char *src = "extern \"C\" __global__ void scale(float *a, float s) { a[threadIdx.x] *= s; }\n";
	const char *opts[] = { arch };
	double *t = calloc(reps + 1, sizeof *t);
	for (int i = 0; i < reps; i++) {
		void *prog;
		size_t size = 0;
		double s = now_ms();
		if (create(&prog, src, "scale.cu", 0, NULL, NULL) || compile(prog, 1, opts) ||
		    cubin_size(prog, &size)) {
			fprintf(stderr, "nvrtc_bench: the compile failed\n");
			return 1;
		}
		char *code = malloc(size);
		cubin(prog, code);
		destroy(&prog);
		free(code);
		t[i] = now_ms() - s;
	}
	double sum = 0;
	for (int i = 1; i < reps; i++)
		sum += t[i];
	if (reps > 1)
		qsort(t + 1, reps - 1, sizeof *t, by_value);
	printf("%.3f %.3f %.4f %.4f\n", loaded, reps ? t[0] : 0, reps > 1 ? t[1 + (reps - 1) / 2] : 0,
	       reps > 1 ? sum / (reps - 1) : 0);
	return 0;
}
