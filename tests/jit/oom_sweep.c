/*
 * oom_sweep - the JIT library out of memory (src/lib/base/oom.h), driven by
 * tests/jit_test.sh.  The allocations that libcudajitcache itself makes
 * during a call fail, one at a time: the first, then the next, and so on.
 * Each time the call must come back (never end this program): 0 with the
 * right bytes, or -1 with "out of memory" as the error; and then the same
 * handle, without failures, must still give the right bytes (nothing it
 * locked stays locked, nothing it keeps is half made).
 *
 *     oom_sweep hit STRIDE     open a handle and hit what a first compile
 *                              made (the store's path, then the handle's
 *                              memory); every STRIDE-th allocation fails
 *     oom_sweep miss STRIDE    compile a new variant each time (a miss,
 *                              published)
 *     oom_sweep shim SONAME STRIDE
 *                              through NVRTC (dlopen'ed by SONAME), which
 *                              `cjc run` makes the shim: the shim's own
 *                              allocations fail in a program's create,
 *                              name expression and compile, each of a new
 *                              variant; each must answer NVRTC's result or
 *                              NVRTC_ERROR_OUT_OF_MEMORY, and then compile
 *                              whole to the same PTX
 *
 * The compiler and the store are the settings' (OOMTEST_JIT_COMPILER,
 * OOMTEST_JIT_CACHE_DIR).
 * Prints how many allocations a call made and how many were failed; one
 * line per failed check, and exits 1 when any failed.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cudajitcache/jit.h"

/* ---- failing the library's allocations ---- */

/* The allocator underneath: the sanitizers' where they are built in (their
 * interceptors), else the C library's. */
#ifdef CJC_SANITIZED
void *__interceptor_malloc(size_t n);
void *__interceptor_calloc(size_t n, size_t size);
void *__interceptor_realloc(void *p, size_t n);
#define real_malloc __interceptor_malloc
#define real_calloc __interceptor_calloc
#define real_realloc __interceptor_realloc
#else
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
#define real_malloc __libc_malloc
#define real_calloc __libc_calloc
#define real_realloc __libc_realloc
#endif

static uintptr_t lib_lo, lib_hi;
static pid_t me;
static atomic_bool armed;
static atomic_long made, fail_at;

static bool fails(void *caller)
{
	if (!atomic_load(&armed) || (uintptr_t)caller < lib_lo || (uintptr_t)caller >= lib_hi ||
	    getpid() != me)
		return false;
	return atomic_fetch_add(&made, 1) + 1 == atomic_load(&fail_at);
}

void *malloc(size_t n)
{
	return fails(__builtin_return_address(0)) ? NULL : real_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	return fails(__builtin_return_address(0)) ? NULL : real_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	return fails(__builtin_return_address(0)) ? NULL : real_realloc(p, n);
}

/* The executable segments of the object that holds the address *at. */
static int find_library(struct dl_phdr_info *info, size_t size, void *at)
{
	(void)size;
	uintptr_t lo = 0, hi = 0, a = (uintptr_t)at;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		lo = !lo || start < lo ? start : lo;
		hi = end > hi ? end : hi;
	}
	if (a < lo || a >= hi)
		return 0;
	lib_lo = lo;
	lib_hi = hi;
	return 1;
}

static void arm(long n)
{
	atomic_store(&made, 0);
	atomic_store(&fail_at, n);
	atomic_store(&armed, true);
}

/* Whether the armed allocation was reached. */
static bool disarm(void)
{
	atomic_store(&armed, false);
	return atomic_load(&made) >= atomic_load(&fail_at);
}

/* ---- the calls ---- */

static const char *const code = "extern \"C\" __global__ void scale(float *a, int n)\n"
				"{\n\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
				"\tif (i < n)\n\t\ta[i] = a[i] * 2.0f + VARIANT;\n}\n";

static int compile(cjc_jit *jit, long variant, struct cjc_jit_result *res)
{
	char define[48];
	snprintf(define, sizeof define, "-DVARIANT=%ld", variant);
	const char *opts[] = { define };
	struct cjc_jit_request req = { .name = "scale.cu",
				       .code = code,
				       .options = opts,
				       .noptions = 1,
				       .arch = "sm_80",
				       .format = CJC_JIT_CUBIN };
	return cjc_jit_compile(jit, &req, res);
}

static bool same(const struct cjc_jit_result *a, const struct cjc_jit_result *b)
{
	return a->size == b->size && !memcmp(a->data, b->data, a->size);
}

static cjc_jit *open_jit(void)
{
	char err[512];
	cjc_jit *jit = cjc_jit_open("OOMTEST", err, sizeof err);
	if (!jit) {
		fprintf(stderr, "cjc_jit_open: %s\n", err);
		exit(1);
	}
	return jit;
}

/* What a call that may have run out said: the right bytes, or the reason. */
static void check_answer(long n, bool fired, cjc_jit *jit, int rc, const struct cjc_jit_result *res,
			 const struct cjc_jit_result *want)
{
	if (!rc)
		CHECK(!want || same(res, want), "allocation %ld failed: other bytes served", n);
	else
		CHECK(fired && strstr(cjc_jit_error(jit), "out of memory"),
		      "allocation %ld failed: the compile failed otherwise: %s", n,
		      cjc_jit_error(jit));
}

/* One failed allocation, n, in an open and a compile of variant; then the
 * same compile again, whole.  Whether allocation n was reached. */
static bool sweep_once(long n, long variant, const struct cjc_jit_result *want)
{
	struct cjc_jit_result res, again;
	char err[512] = "";
	arm(n);
	cjc_jit *jit = cjc_jit_open("OOMTEST", err, sizeof err);
	int rc = jit ? compile(jit, variant, &res) : -1;
	bool fired = disarm();
	if (!jit) {
		CHECK(fired && strstr(err, "out of memory"), "allocation %ld failed: open: %s", n,
		      err);
		jit = open_jit();
	} else {
		check_answer(n, fired, jit, rc, &res, want);
	}
	CHECK(!compile(jit, variant, &again), "allocation %ld failed: the next compile failed: %s",
	      n, cjc_jit_error(jit));
	CHECK(!want || same(&again, want), "allocation %ld failed: then other bytes served", n);
	CHECK(!jit || rc || same(&res, &again), "allocation %ld failed: the two compiles differ",
	      n);
	if (jit && !rc)
		cjc_jit_result_free(&res);
	cjc_jit_result_free(&again);
	cjc_jit_close(jit);
	return fired;
}

/* ---- through the NVRTC shim ---- */

static struct nvrtc {
	int (*create)(void **, const char *, const char *, int, const char *const *,
		      const char *const *);
	int (*add_name)(void *, const char *);
	int (*compile)(void *, int, const char *const *);
	int (*ptx_size)(void *, size_t *);
	int (*ptx)(void *, char *);
	int (*destroy)(void **);
} nv;

static bool load_nvrtc(const char *soname)
{
	void *lib = dlopen(soname, RTLD_NOW);
	if (!lib)
		return false;
	*(void **)&nv.create = dlsym(lib, "nvrtcCreateProgram");
	*(void **)&nv.add_name = dlsym(lib, "nvrtcAddNameExpression");
	*(void **)&nv.compile = dlsym(lib, "nvrtcCompileProgram");
	*(void **)&nv.ptx_size = dlsym(lib, "nvrtcGetPTXSize");
	*(void **)&nv.ptx = dlsym(lib, "nvrtcGetPTX");
	*(void **)&nv.destroy = dlsym(lib, "nvrtcDestroyProgram");
	return nv.create && nv.add_name && nv.compile && nv.ptx_size && nv.ptx && nv.destroy;
}

/* Compiles variant v; its PTX (malloc'd) in *ptx, or NVRTC's error. */
static int nvrtc_compile(long v, char **ptx)
{
	char source[512], define[48];
	snprintf(source, sizeof source, "#define VARIANT %ld\n%s", v, code);
	snprintf(define, sizeof define, "-arch=compute_80");
	const char *opts[] = { define };
	void *prog = NULL;
	size_t size = 0;
	*ptx = NULL;
	int rc = nv.create(&prog, source, "scale.cu", 0, NULL, NULL);
	if (!rc)
		rc = nv.add_name(prog, "scale");
	if (!rc)
		rc = nv.compile(prog, 1, opts);
	if (!rc)
		rc = nv.ptx_size(prog, &size);
	if (!rc && !(*ptx = calloc(1, size + 1)))
		rc = 1;
	if (!rc)
		rc = nv.ptx(prog, *ptx);
	if (prog)
		nv.destroy(&prog);
	return rc;
}

static bool shim_once(long n)
{
	char *ptx, *again;
	arm(n);
	int rc = nvrtc_compile(n, &ptx);
	bool fired = disarm();
	CHECK(!rc || (fired && rc == 1), "allocation %ld failed: NVRTC answered %d", n, rc);
	CHECK(!nvrtc_compile(n, &again), "allocation %ld failed: the next compile failed", n);
	CHECK(rc || !again || !strcmp(ptx, again), "allocation %ld failed: the two compiles differ",
	      n);
	free(ptx);
	free(again);
	return fired;
}

static int sweep_shim(const char *soname, long stride)
{
	if (!load_nvrtc(soname)) {
		fprintf(stderr, "oom_sweep: cannot load NVRTC as %s: %s\n", soname, dlerror());
		return 2;
	}
	dl_iterate_phdr(find_library, *(void **)&nv.compile); /* the shim's */
	if (!lib_lo) {
		fprintf(stderr,
			"oom_sweep: the NVRTC shim is not loaded (run it under `cjc run`)\n");
		return 2;
	}
	long n = 1, failed = 0;
	for (; shim_once(n); n += stride)
		failed++;
	printf("shim: %ld allocations failed, one per call, up to allocation %ld\n", failed, n);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	me = getpid();
	if (argc == 4 && !strcmp(argv[1], "shim"))
		return sweep_shim(argv[2], atol(argv[3]));
	if (argc != 3 || (strcmp(argv[1], "hit") && strcmp(argv[1], "miss"))) {
		fprintf(stderr, "usage: oom_sweep hit|miss STRIDE | shim SONAME STRIDE\n");
		return 2;
	}
	bool hit = !strcmp(argv[1], "hit");
	long stride = atol(argv[2]);
	cjc_jit *first = open_jit();
	dl_iterate_phdr(find_library, (void *)cjc_jit_compile);
	if (!lib_lo || stride < 1) {
		fprintf(stderr, "oom_sweep: libcudajitcache.so is not loaded, or no stride\n");
		return 2;
	}
	struct cjc_jit_result want;
	if (compile(first, 0, &want)) {
		fprintf(stderr, "oom_sweep: the first compile failed: %s\n", cjc_jit_error(first));
		return 1;
	}
	cjc_jit_close(first);
	long n = 1, failed = 0;
	for (; sweep_once(n, hit ? 0 : n, hit ? &want : NULL); n += stride)
		failed++;
	printf("%s: %ld allocations failed, one per call, up to allocation %ld\n", argv[1], failed,
	       n);
	cjc_jit_result_free(&want);
	return failures ? 1 : 0;
}
