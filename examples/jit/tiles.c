/*
 * tiles - a JIT in miniature: generates one kernel per tile size at run time,
 * compiles each through libcudajitcache, loads it, launches it and checks
 * the result on the host.  A second run compiles nothing: every kernel comes
 * from the store.
 *
 *     tiles [ARCH]        ARCH: e.g. sm_90a; default: the GPU's, else sm_80
 *
 * Without a GPU it still compiles (for ARCH or sm_80) through the cache and
 * says that it skipped launching.  Exit 0 when every result is right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudajitcache/jit.h>

#define N (1 << 20)

/* The few driver calls the launch needs, looked up through the library, so
 * this program needs no CUDA at link time (cuda.h's names and types). */
typedef unsigned long long CUdeviceptr;
typedef int (*mem_alloc_fn)(CUdeviceptr *, size_t);
typedef int (*mem_free_fn)(CUdeviceptr);
typedef int (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef int (*dtoh_fn)(void *, CUdeviceptr, size_t);
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, void *, void **, void **);
typedef int (*sync_fn)(void);

static char *kernel_source(int tile)
{
	static const char *const fmt =
		"// generated for TILE = %d\n"
		"extern \"C\" __global__ void saxpy_tile(float a, const float *x, float *y, int n)\n"
		"{\n"
		"\tint base = (blockIdx.x * blockDim.x + threadIdx.x) * %d;\n"
		"#pragma unroll\n"
		"\tfor (int k = 0; k < %d; k++)\n"
		"\t\tif (base + k < n)\n"
		"\t\t\ty[base + k] = a * x[base + k] + y[base + k];\n"
		"}\n";
	char *s = malloc(1024);
	snprintf(s, 1024, fmt, tile, tile, tile);
	return s;
}

/* Runs the kernel of one tile size; 0 when every element is right. */
static int launch(cjc_jit *jit, const struct cjc_jit_result *res, int tile)
{
	void *mod, *fn;
	if (cjc_jit_load(jit, res, "saxpy_tile", &mod, &fn))
		return fprintf(stderr, "tiles: %s\n", cjc_jit_error(jit)), 1;
	mem_alloc_fn mem_alloc = (mem_alloc_fn)cjc_jit_driver_symbol(jit, "cuMemAlloc_v2");
	mem_free_fn mem_free = (mem_free_fn)cjc_jit_driver_symbol(jit, "cuMemFree_v2");
	htod_fn htod = (htod_fn)cjc_jit_driver_symbol(jit, "cuMemcpyHtoD_v2");
	dtoh_fn dtoh = (dtoh_fn)cjc_jit_driver_symbol(jit, "cuMemcpyDtoH_v2");
	launch_fn run = (launch_fn)cjc_jit_driver_symbol(jit, "cuLaunchKernel");
	sync_fn sync = (sync_fn)cjc_jit_driver_symbol(jit, "cuCtxSynchronize");
	float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
	for (int i = 0; i < N; i++)
		x[i] = (float)i, y[i] = 1.0f;
	CUdeviceptr dx, dy;
	float a = 2.0f;
	int n = N, bad = 0;
	unsigned threads = 256, blocks = (unsigned)((N / tile + threads - 1) / threads);
	void *args[] = { &a, &dx, &dy, &n };
	bad = mem_alloc(&dx, N * sizeof *x) || mem_alloc(&dy, N * sizeof *y) ||
	      htod(dx, x, N * sizeof *x) || htod(dy, y, N * sizeof *y) ||
	      run(fn, blocks, 1, 1, threads, 1, 1, 0, NULL, args, NULL) || sync() ||
	      dtoh(y, dy, N * sizeof *y);
	for (int i = 0; !bad && i < N; i++)
		bad = y[i] != 2.0f * (float)i + 1.0f;
	mem_free(dx);
	mem_free(dy);
	cjc_jit_unload(jit, mod);
	free(x);
	free(y);
	return bad;
}

int main(int argc, char **argv)
{
	static const int tiles[] = { 1, 2, 4, 8, 16 };
	char err[512], arch[32];
	cjc_jit *jit = cjc_jit_open("TILES", err, sizeof err);
	if (!jit)
		return fprintf(stderr, "tiles: %s\n", err), 1;
	int gpu = !cjc_jit_device_arch(jit, arch, sizeof arch);
	if (argc > 1)
		snprintf(arch, sizeof arch, "%s", argv[1]);
	else if (!gpu)
		snprintf(arch, sizeof arch, "sm_80");
	if (!gpu)
		printf("no GPU (%s): compiling for %s, launching nothing\n", cjc_jit_error(jit), arch);
	int compiled = 0, cached = 0, failed = 0;
	for (size_t t = 0; t < sizeof tiles / sizeof *tiles; t++) {
		char *code = kernel_source(tiles[t]);
		char name[32];
		snprintf(name, sizeof name, "saxpy_tile%d.cu", tiles[t]);
		struct cjc_jit_request req = { .name = name, .code = code, .arch = arch,
					       .format = CJC_JIT_CUBIN };
		struct cjc_jit_result res;
		if (cjc_jit_compile(jit, &req, &res)) {
			fprintf(stderr, "tiles: %s\n%s", cjc_jit_error(jit), res.log ? res.log : "");
			failed++;
		} else {
			res.hit ? cached++ : compiled++;
			int bad = gpu ? launch(jit, &res, tiles[t]) : 0;
			failed += bad;
			printf("tile %2d: %s, %zu bytes, entry %.12s%s\n", tiles[t],
			       res.hit ? "from the cache" : "compiled", res.size, res.key,
			       !gpu ? ", launch skipped" : bad ? ", WRONG RESULT" : ", results right");
		}
		cjc_jit_result_free(&res);
		free(code);
	}
	printf("%d compiled, %d from the cache, %d failed\n", compiled, cached, failed);
	cjc_jit_close(jit);
	return failed ? 1 : 0;
}
