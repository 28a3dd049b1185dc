/*
 * nvrtc.h - NVRTC's functions, loaded at run time (base/dl.h) so that
 * nothing links CUDA, and one program compiled the way the JIT library
 * compiles it, so that `cjc audit` rebuilding an NVRTC entry
 * (src/tool/audit_nvrtc.c) makes what the library kept (src/jit/nvrtc.c).
 *
 * Calling sequence: dlopen() the library (RTLD_NOW | RTLD_LOCAL; it stays
 * loaded: NVRTC and the C++ runtime it brings do not expect to be
 * unloaded), cjc_nvrtc_resolve() into a struct cjc_nvrtc, then
 * cjc_nvrtc_compile() as often as needed, from any thread.
 */
#ifndef CJC_COMPILE_NVRTC_H
#define CJC_COMPILE_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

typedef int cjc_nvrtc_result;
typedef void *cjc_nvrtc_program;

struct cjc_nvrtc {
	cjc_nvrtc_result (*nvrtcVersion)(int *, int *);
	const char *(*nvrtcGetErrorString)(cjc_nvrtc_result);
	cjc_nvrtc_result (*nvrtcCreateProgram)(cjc_nvrtc_program *, const char *, const char *, int,
					       const char *const *, const char *const *);
	cjc_nvrtc_result (*nvrtcCompileProgram)(cjc_nvrtc_program, int, const char *const *);
	cjc_nvrtc_result (*nvrtcGetProgramLogSize)(cjc_nvrtc_program, size_t *);
	cjc_nvrtc_result (*nvrtcGetProgramLog)(cjc_nvrtc_program, char *);
	cjc_nvrtc_result (*nvrtcGetCUBINSize)(cjc_nvrtc_program, size_t *);
	cjc_nvrtc_result (*nvrtcGetCUBIN)(cjc_nvrtc_program, char *);
	cjc_nvrtc_result (*nvrtcGetPTXSize)(cjc_nvrtc_program, size_t *);
	cjc_nvrtc_result (*nvrtcGetPTX)(cjc_nvrtc_program, char *);
	cjc_nvrtc_result (*nvrtcDestroyProgram)(cjc_nvrtc_program *);
};

/* Every function of lib into n: 0, or -1 with the first one missing in *missing. */
int cjc_nvrtc_resolve(void *lib, struct cjc_nvrtc *n, const char **missing);

/* One program: `code` named `name`, compiled with the options; output gets
 * the cubin, or the ptx as text (NVRTC counts its trailing NUL; the
 * artifact does not hold it), log NVRTC's log.  0; or -1 with why
 * ("NVRTC failed: <NVRTC's error>", "NVRTC made no output"), the log kept. */
int cjc_nvrtc_compile(const struct cjc_nvrtc *n, const char *name, const char *code,
		      char *const *options, size_t noptions, bool ptx, struct cjc_buf *output,
		      struct cjc_buf *log, struct cjc_buf *why);

#endif
