/*
 * audit_nvrtc.h - the compile `cjc audit` rebuilds an NVRTC entry of the
 * JIT library with (docs/jit.md): NVRTC loaded with dlopen, and one
 * program compiled in-process as the library compiles it (compile/nvrtc.h).
 *
 * Calling sequence: audit_trust.h's cjc_audit_trust_nvrtc() first, which
 * names the library that may be loaded; then cjc_audit_nvrtc_compile() in
 * the audit's child (the library stays loaded until the child exits).  It
 * loads that file, checks that nvrtcVersion() still says the recorded
 * version ("NVRTC 13.0"), compiles `code` as a program named `name` with
 * the options, and returns the cubin, or the ptx as text (without NVRTC's
 * trailing NUL, as the JIT library keeps it), and NVRTC's log.  0; or -1
 * with why in one sentence (the library cannot be loaded or lacks a
 * function, another version, NVRTC failed: its log then holds why).
 */
#ifndef CJC_AUDIT_NVRTC_H
#define CJC_AUDIT_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "compile/nvrtc.h"

struct cjc_audit_nvrtc {
	const char *library; /* the checked file to load */
	const char *version; /* as recorded: "NVRTC M.N" */
	const char *name;    /* the program's name: the request's */
	const char *code;
	char *const *options;
	size_t noptions;
	bool ptx; /* else cubin */
};

int cjc_audit_nvrtc_compile(const struct cjc_audit_nvrtc *in, struct cjc_buf *output,
			    struct cjc_buf *log, struct cjc_buf *why);

/* An NVRTC shim's program (docs/nvrtc-shim.md): the same, with its string
 * headers (names and texts, n of each) and name expressions, and every
 * output NVRTC holds for it (compile/nvrtc.h) in out.  0; or -1 with why. */
struct cjc_audit_program {
	struct cjc_strvec header_names, headers, expressions;
};
int cjc_audit_nvrtc_program(const struct cjc_audit_nvrtc *in, const struct cjc_audit_program *p,
			    struct cjc_nvrtc_outputs *out, struct cjc_buf *why);

#endif
