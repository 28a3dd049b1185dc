/*
 * program.h - an NVRTC program that the JIT library did not create,
 * compiled through its cache: the NVRTC shim's (src/shim,
 * docs/nvrtc-shim.md), which an application made with NVRTC's own calls.
 * One call looks the program up in the process's store and remote stores
 * (compile/lookup.h) and, on a miss, lets NVRTC compile it, watched, and
 * publishes what it made (compile/publish.h).
 *
 * This is all the shim sees of the JIT library besides its public header
 * (tests/layers_test.sh): the handle, its store and its jobs stay private.
 */
#ifndef CJC_JIT_PROGRAM_H
#define CJC_JIT_PROGRAM_H

#include <stdbool.h>

#include "base/util.h"
#include "compile/nvrtc.h"

/* The NVRTC library the program was made with. */
struct jit_nvrtc {
	cjc_nvrtc_result (*version)(int *, int *);
	cjc_nvrtc_result (*compile)(cjc_nvrtc_program, int, const char *const *);
	struct cjc_nvrtc_queries q;
	/* Whether NVRTC's file calls reach the recorder (compile/watch.h);
	 * if not, nothing it reads can be keyed. */
	bool watched;
};

/* A program: what went into nvrtcCreateProgram and nvrtcAddNameExpression
 * (the caller's), and, after a compile served from the cache, what it
 * answers in NVRTC's place. */
struct jit_program {
	cjc_nvrtc_program real;
	char *name;
	char *source;
	struct cjc_strvec header_names, headers;
	struct cjc_strvec expressions;
	bool unnoted; /* an expression could not be noted: never cached */
	bool served;
	struct cjc_nvrtc_outputs out;
};

/* A compile through the cache: NVRTC's answer, having either compiled p
 * (served false) or filled p->out from an entry (served true); out of
 * memory before NVRTC compiled, CJC_NVRTC_OUT_OF_MEMORY.  It never fails
 * for the cache's reasons: what the cache cannot do, NVRTC does. */
cjc_nvrtc_result jit_program_compile(const struct jit_nvrtc *n, struct jit_program *p, int noptions,
				     const char *const *options);

/* NVRTC's compile as if the cache were not there (its lookups not
 * watched, nor taken for another compile's). */
cjc_nvrtc_result jit_program_compile_uncached(const struct jit_nvrtc *n, cjc_nvrtc_program prog,
					      int noptions, const char *const *options);

#endif
