/*
 * shim.h - the NVRTC shim's modules (docs/nvrtc-shim.md), shared by its
 * files and by nothing else.  The shim is a library that stands where a
 * program's NVRTC was (audit.c puts it there) and answers NVRTC's calls:
 *
 *   shim.c   NVRTC's calls: the programs, the compile, and what a program
 *            compiled from the cache answers
 *   hello.c  the shim's own answer to the audit module's handshake
 *            (watch.h), which binds NVRTC's file calls to the recorder
 *            (compile/watch.h): which files a compile looked at
 *   cache.c  a compile's key, its lookup in the store and the remote ones,
 *            and its publication, through the JIT library's handle
 *
 * The shim never fails a call for the cache's reasons: whatever the cache
 * cannot do, NVRTC does as if the shim were not there.
 */
#ifndef CJC_SHIM_H
#define CJC_SHIM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "compile/nvrtc.h"

typedef cjc_nvrtc_result nvrtcResult;
typedef cjc_nvrtc_program nvrtcProgram;

#define NVRTC_SUCCESS CJC_NVRTC_SUCCESS
#define NVRTC_ERROR_OUT_OF_MEMORY 1
#define NVRTC_ERROR_INVALID_INPUT CJC_NVRTC_INVALID_INPUT
#define NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID 10
#define NVRTC_ERROR_INTERNAL_ERROR 11

/* NVRTC's functions the shim calls (shim.c: the library after the shim). */
struct shim_nvrtc {
	nvrtcResult (*version)(int *, int *);
	nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
	struct cjc_nvrtc_queries q;
};

/* A program as the shim knows it: what went into nvrtcCreateProgram and
 * nvrtcAddNameExpression, and, after a compile served from the cache, what
 * it answers in NVRTC's place. */
struct shim_program {
	nvrtcProgram real;
	char *name;
	char *source;
	struct cjc_strvec header_names, headers;
	struct cjc_strvec expressions;
	bool unnoted; /* an expression could not be noted: never cached */
	bool served;
	struct cjc_nvrtc_outputs out;
};

/* cache.c: a compile through the cache: NVRTC's answer, having either
 * compiled p (served false) or filled p->out from an entry (served true);
 * out of memory before NVRTC compiled, NVRTC_ERROR_OUT_OF_MEMORY. */
nvrtcResult shim_compile(const struct shim_nvrtc *n, struct shim_program *p, int noptions,
			 const char *const *options);
/* cache.c: NVRTC's compile as if the shim were not there (its lookups not
 * watched, nor taken for another compile's). */
nvrtcResult shim_compile_uncached(const struct shim_nvrtc *n, nvrtcProgram prog, int noptions,
				  const char *const *options);

/* cache.c: whether the audit module bound NVRTC's calls to the recorder
 * (compile/watch.h, watch.h's handshake); else nothing can be watched. */
bool shim_watch_available(void);

#endif
