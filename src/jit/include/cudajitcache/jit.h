/*
 * <cudajitcache/jit.h> - compile CUDA source at run time through the
 * CudaJitCache store (libcudajitcache; docs/jit.md, SPEC §11).
 *
 * A program that generates kernels while it runs (a JIT, as tilelang and
 * DeepJIT do) hands the library a source string, options and a target
 * architecture, and gets back a cubin, a fatbin or ptx.  The result comes
 * from the store when an earlier compile, in this process, another one, or
 * a `cjc nvcc` build, already made it; otherwise the compiler runs and the
 * result is published for the next one.  Entries are ordinary store entries
 * (docs/store.md, docs/metadata.md): `cjc ls`, `show`, `verify` and `gc`
 * work on them.
 *
 * Calling sequence:
 *
 *     char err[256];
 *     cjc_jit *jit = cjc_jit_open("MYLIB", err, sizeof err);   // NULL: err says why
 *     struct cjc_jit_request req = { .name = "gemm.cu", .code = src,
 *             .options = opts, .noptions = n, .arch = "sm_90a",
 *             .format = CJC_JIT_CUBIN };
 *     struct cjc_jit_result res;
 *     if (cjc_jit_compile(jit, &req, &res))
 *             fprintf(stderr, "%s\n%s", cjc_jit_error(jit), res.log ? res.log : "");
 *     ... use res.data, res.size (e.g. cjc_jit_load) ...
 *     cjc_jit_result_free(&res);
 *     cjc_jit_close(jit);
 *
 * Errors: functions that can fail return 0 or -1; the reason is then in
 * cjc_jit_error(), which is kept per handle and per thread, so threads
 * sharing a handle do not overwrite each other's messages.  A failed compile
 * still fills res->log with the compiler's messages; always call
 * cjc_jit_result_free() on a result that cjc_jit_compile() was given.
 *
 * Ownership: a result owns its data and log until cjc_jit_result_free().
 * The request's strings are only read during the call.
 *
 * Threads and processes: one handle may be used by several threads at
 * once; no lock is held while a compiler runs, so a thread whose compile
 * hits is never held up by another thread's compile.  Handles share no
 * state with each other.  A child process may keep using its parent's
 * handle after fork() (but CUDA itself cannot be used in such a child:
 * loading needs a process that has not inherited an initialised driver).
 * Several processes may share one store.
 */
#ifndef CUDAJITCACHE_JIT_H
#define CUDAJITCACHE_JIT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CJC_JIT_VERSION_MAJOR 0
#define CJC_JIT_VERSION_MINOR 2

typedef struct cjc_jit cjc_jit;

enum cjc_jit_format { CJC_JIT_CUBIN, CJC_JIT_FATBIN, CJC_JIT_PTX };

/* The bytes a post-compile hook keeps: set with cjc_jit_bytes_set(). */
typedef struct cjc_jit_bytes cjc_jit_bytes;

/*
 * A post-compile hook (DeepJIT's post_hook): receives the compiled bytes and
 * sets the bytes to keep with cjc_jit_bytes_set(out, ...) (not setting them
 * keeps the input unchanged).  Returns 0; anything else fails the compile
 * and publishes nothing, as does a cjc_jit_bytes_set() that failed.  It
 * runs on a miss only: a hit serves what the hook made before, which is why
 * the hook's identity is in the key.
 */
typedef int (*cjc_jit_hook)(void *ctx, const void *data, size_t size, cjc_jit_bytes *out);

/* Copies size bytes as the hook's output; 0, or -1 when size is over 1 GiB (the
 * bound on any compiler output) or memory ran out: the bytes are then not
 * set, and the compile fails. */
int cjc_jit_bytes_set(cjc_jit_bytes *out, const void *data, size_t size);

struct cjc_jit_request {
	const char *name;            /* file name for messages, e.g. "gemm.cu"; NULL: "kernel.cu" */
	const char *code;            /* the CUDA C++ source */
	const char *const *options;  /* nvcc options, e.g. "-std=c++17", "-DTILE=64", "-I/path" */
	size_t noptions;
	const char *arch;            /* e.g. "sm_90a"; NULL: the calling thread's device's
					(cjc_jit_device_arch) */
	enum cjc_jit_format format;
	/* Since 0.2; zero them (a zero-initialised request) when unused. */
	const char *extra_signature; /* NULL, or text the output depends on that the
					request does not show: in the key and metadata.json */
	cjc_jit_hook hook;           /* NULL, or post-processes the compiled bytes before
					they are kept and returned (see cjc_jit_hook) */
	const char *hook_id;         /* the hook's identity ("name-version"), in the key and
					metadata.json; required with a hook */
	void *hook_ctx;              /* passed to the hook */
};

struct cjc_jit_result {
	void *data;                  /* the artifact's bytes, owned by the result */
	size_t size;
	char key[65];                /* the entry's key ("" when the compile was not cached) */
	int hit;                     /* 1: served from a store; 0: compiled now */
	char *log;                   /* the compiler's messages (replayed on a hit), or NULL */
};

/*
 * Opens a handle.  Settings come from PREFIX_JIT_* variables
 * (PREFIX_JIT_CACHE_DIR, PREFIX_JIT_NVCC_COMPILER,
 * PREFIX_JIT_PRINT_COMPILER_COMMAND, ...), then CJC_JIT_*, then the cjc
 * settings (docs/settings.md); prefix may be NULL.  Unprefixed JIT_*
 * variables are ignored; a PREFIX_JIT_* or CJC_JIT_* variable that is not a
 * setting is named on stderr and in the log, once.  The table is in
 * docs/jit.md.  Returns NULL on failure (a malformed value: the message
 * names the variable), with the reason in err.
 *
 * It reads the settings and nothing else: the store is opened (or made) by
 * the first compile or cjc_jit_drop, NVRTC is loaded by the first NVRTC
 * compile, and the driver by the first call that needs it.
 */
cjc_jit *cjc_jit_open(const char *prefix, char *err, size_t errlen);

/* 0 on success (hit or compiled); -1 with cjc_jit_error() set otherwise.
 * The store is never a reason to fail: when it is unusable, read-only or
 * disabled, the compiler runs and its output is returned uncached (an
 * empty key), with a line in the log saying why. */
int cjc_jit_compile(cjc_jit *jit, const struct cjc_jit_request *req,
		    struct cjc_jit_result *out);

/* The last error of this thread on this handle ("" when none). */
const char *cjc_jit_error(const cjc_jit *jit);

void cjc_jit_result_free(struct cjc_jit_result *res);
void cjc_jit_close(cjc_jit *jit);

/*
 * Extensions beyond SPEC §11.
 */

/* The effective value of a setting, by its name without prefix
 * ("CACHE_DIR", "COMPILER", ...), as text; NULL for an unknown name. */
const char *cjc_jit_setting(const cjc_jit *jit, const char *name);

/* The architecture ("sm_80", or "sm_90a" for a Hopper or Blackwell part,
 * whose arch-specific features JIT kernels use) of the device of the
 * calling thread's current CUDA context, or of device 0 when the thread has
 * none; asked of the driver (libcuda.so.1, loaded with dlopen) once per
 * device.  A request with arch = NULL compiles for it.  0, or -1 when there
 * is no driver or no GPU. */
int cjc_jit_device_arch(cjc_jit *jit, char *arch, size_t len);

/*
 * Loads a cubin, fatbin or ptx result as a CUmodule and looks up a kernel
 * as a CUfunction, through the driver API (dlopen'd libcuda.so.1; the
 * library has no link-time CUDA dependency).  module and function receive a
 * CUmodule and a CUfunction (cast them); function may be NULL.  When the
 * calling thread has no current CUDA context, the primary context of
 * device 0 is retained and made current.  With PRINT_LOAD_TIME set, the
 * time taken is printed on stderr.  0, or -1 with cjc_jit_error() set.
 */
int cjc_jit_load(cjc_jit *jit, const struct cjc_jit_result *res, const char *kernel,
		 void **module, void **function);
/* cuModuleUnload. */
int cjc_jit_unload(cjc_jit *jit, void *module);
/* Removes the entry with this key (a result's key) from the local store, as
 * a caller does when the binary it was served fails to load; the next
 * request compiles again.  0 (also when there was no such entry), or -1. */
int cjc_jit_drop(cjc_jit *jit, const char *key);
/* A driver API function by name ("cuLaunchKernel"), for callers that do not
 * link libcuda themselves; NULL when there is no driver. */
void *cjc_jit_driver_symbol(cjc_jit *jit, const char *name);
/* Whether name may be a request's name: a file name nvcc takes as CUDA
 * source (ends in .cu; letters, digits and ._-+; not starting with '.'; at
 * most 128 bytes), so that a binding refuses what the library would.
 * (Exported since 0.3.0.) */
bool cjc_jit_name_ok(const char *name);

#ifdef __cplusplus
}
#endif

#endif
