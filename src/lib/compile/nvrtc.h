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

#include <jansson.h>
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

/*
 * Everything NVRTC holds for a compiled program, as the NVRTC shim keeps it
 * (src/shim) and `cjc audit` rebuilds it: what each nvrtcGet<KIND>Size
 * answered and the code, the log (without its NUL), and each name
 * expression's lowered name (or NVRTC's error), in the order they were
 * added.  As JSON (the entry's nvrtc.json): {"version": 1, "results":
 * {KIND: result...}, "names": [{"expression", "result", "lowered"}...]}.
 */
enum cjc_nvrtc_kind { CJC_NVRTC_PTX, CJC_NVRTC_CUBIN, CJC_NVRTC_LTOIR, CJC_NVRTC_OPTIXIR,
		      CJC_NVRTC_KINDS };
extern const char *const cjc_nvrtc_kind_name[CJC_NVRTC_KINDS]; /* "ptx", "cubin", ... */
#define CJC_NVRTC_SUCCESS 0
#define CJC_NVRTC_OUT_OF_MEMORY 1
#define CJC_NVRTC_INVALID_INPUT 3
#define CJC_NVRTC_LAST_RESULT 64 /* past any result NVRTC has: a bound for what an entry says */

/* The calls that ask a compiled program; a kind's are NULL in an NVRTC without them. */
struct cjc_nvrtc_queries {
	cjc_nvrtc_result (*log_size)(cjc_nvrtc_program, size_t *);
	cjc_nvrtc_result (*log)(cjc_nvrtc_program, char *);
	cjc_nvrtc_result (*code_size[CJC_NVRTC_KINDS])(cjc_nvrtc_program, size_t *);
	cjc_nvrtc_result (*code[CJC_NVRTC_KINDS])(cjc_nvrtc_program, char *);
	cjc_nvrtc_result (*lowered)(cjc_nvrtc_program, const char *, const char **);
};
/* Fills q by name through lookup (dlsym on a handle, say); 0, or -1 when
 * the log or the lowered names cannot be asked. */
int cjc_nvrtc_queries_find(void *(*lookup)(void *ctx, const char *name), void *ctx,
			   struct cjc_nvrtc_queries *q);

struct cjc_nvrtc_outputs {
	cjc_nvrtc_result result[CJC_NVRTC_KINDS];
	struct cjc_buf code[CJC_NVRTC_KINDS];
	struct cjc_buf log;
	struct cjc_strvec lowered;         /* "" where the result is an error */
	cjc_nvrtc_result *lowered_result;
};
void cjc_nvrtc_outputs_take(const struct cjc_nvrtc_queries *q, cjc_nvrtc_program prog,
			    const struct cjc_strvec *expressions, struct cjc_nvrtc_outputs *o);
json_t *cjc_nvrtc_outputs_json(const struct cjc_nvrtc_outputs *o,
			       const struct cjc_strvec *expressions);
/* The answers and lowered names of an nvrtc.json, which must be for these
 * expressions, in order (the code and log are the caller's); 0 or -1. */
int cjc_nvrtc_outputs_parse(const char *text, size_t len, const struct cjc_strvec *expressions,
			    struct cjc_nvrtc_outputs *o);
void cjc_nvrtc_outputs_release(struct cjc_nvrtc_outputs *o);

#endif
