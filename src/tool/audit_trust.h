/*
 * audit_trust.h - which programs `cjc audit` may run for an entry, decided
 * before it runs any (docs/store.md, trust).
 *
 * A store may be written by others, so an entry's metadata.json is a
 * request, not an instruction: the audit runs nvcc and the host compiler it
 * names only when they are the programs this machine would run for that
 * compile, and only when nothing else the entry records makes them run
 * another program.  The rule, all of it checked with stat, lstat and
 * readlink, nothing executed:
 *
 *   nvcc           compiler.path, found as the launcher found it (a bare
 *                  name on PATH, a relative path from the recorded working
 *                  directory), resolves to the recorded compiler.realpath,
 *                  and that file is named nvcc.
 *   host compiler  what nvcc would use: the last -ccbin/--compiler-bindir
 *                  (in NVCC_PREPEND_FLAGS, the command, its options files,
 *                  NVCC_APPEND_FLAGS, in nvcc's order; `=`, separate and
 *                  attached spellings), else the recorded NVCC_CCBIN, else
 *                  gcc on PATH; a directory means <dir>/gcc.  Its name is a
 *                  C or C++ compiler's (gcc, g++, cc, c++, clang, clang++,
 *                  nvc, nvc++, icx, icpx; a target prefix such as
 *                  x86_64-linux-gnu- and a version suffix such as -12
 *                  allowed), and it is the file the recorded
 *                  host_compiler.path resolves to.  Every -ccbin value seen
 *                  passes the same test, not only the last.
 *   trusted file   each program, and each options file nvcc would read, is
 *                  a regular file; it, every directory and every symbolic
 *                  link met while resolving it (symbolic links are followed
 *                  by hand, each target's directories checked too) is owned
 *                  by root or by this user, and no directory or file is
 *                  writable by group or others, except a directory with
 *                  the sticky bit (like /tmp), where others cannot rename
 *                  what they do not own.  So nobody else can change what
 *                  the checked path runs between the check and the run.
 *   arguments      nvcc runs its tools through /bin/sh, pasting some values
 *                  in unquoted and others in double quotes, so no recorded
 *                  word (in the command, its options files, or
 *                  NVCC_PREPEND_FLAGS, NVCC_APPEND_FLAGS, NVCC_CCBIN) may hold
 *                  a character the shell acts on: $ ` \ " ' ; & | < > ( )
 *                  * ? [ ] { } ~ # ! or a control character.  [ and ] are
 *                  allowed in the value of -gencode, -arch and -code
 *                  (code=[sm_80,compute_80]), which nvcc parses itself.
 *                  No token of a word (words split at blanks, commas and
 *                  after each '=') may start with a host-compiler option
 *                  that names a program, plugin, program directory, specs
 *                  or response file (cjc_host_program_option(), nvcc_args.h: -B,
 *                  -wrapper, -fplugin, -specs, @file, ...): this covers
 *                  -Xcompiler, --compiler-options, options forwarded by
 *                  -forward-unknown-to-host-compiler, and the -X values of
 *                  nvcc's own tools alike.  Values for those tools
 *                  (-Xptxas, -Xnvlink, -Xfatbin, -Xcudafe) meet these rules
 *                  and no more: the tools are the trusted nvcc's siblings,
 *                  none of their options is known to run or load a
 *                  program, and files they may read or write are outside a
 *                  rule about what runs (the recorded -o and dependency
 *                  options are replaced by the audit's own anyway).
 *                  With NVCC_PREPEND_FLAGS or NVCC_APPEND_FLAGS recorded,
 *                  the command they make must still be one cjc caches, and
 *                  ask for no output or dependency file the command alone
 *                  does not.  The recorded working directory is absolute.
 *
 * NVRTC entries of the JIT library (argv[0] "nvrtc", docs/jit.md) run no
 * program: the audit loads NVRTC into its child (audit_nvrtc.h), so the
 * rule is a library's (cjc_audit_trust_nvrtc()):
 *
 *   library        compiler.realpath, absolute and a trusted file as above,
 *                  with no symbolic link on its way (it is a realpath),
 *                  named libnvrtc.so[.N...] (or libnvrtc.<variant>.so...);
 *                  the libnvrtc-builtins.so.M.N beside it (M.N from the
 *                  recorded version), which NVRTC loads, trusted likewise
 *                  when it is there.  No other NVRTC, the toolkit's say, is
 *                  loaded instead: the library's identity is in the entry's
 *                  key, so another's output would prove nothing.
 *   arguments      no option names an include directory or a file to
 *                  include (-I, --include-path, -include, --pre-include):
 *                  they would make NVRTC read files the entry does not
 *                  hold, so it cannot be rebuilt from it alone.  The NVRTC
 *                  shim's entries ("jit": {"shim": true}) may: their
 *                  inputs are what NVRTC read, each checked before the
 *                  rebuild.
 *
 * Programs are looked up on PATH as it is when the check runs; the caller
 * drops PATH's relative entries first, since the audit runs in a working
 * directory the entry names.  cuobjdump (keep_sass) is found beside the
 * trusted nvcc or on PATH, never where the entry says.  nvcc's own tools
 * (cicc, ptxas, ...) are the ones beside the trusted nvcc.
 *
 * Calling sequence: chdir() to the recorded working directory, then
 * cjc_audit_trust_check(); on 0 the struct holds the absolute paths to run
 * nvcc and the host compiler by (as they are named, so that --version prints
 * what it printed then), and cjc_audit_trust_release() frees them.  On -1,
 * `why` says in one sentence why the entry cannot be rebuilt.
 */
#ifndef CJC_AUDIT_TRUST_H
#define CJC_AUDIT_TRUST_H

#include <jansson.h>

#include "base/util.h"

struct cjc_audit_trust {
	char *nvcc;          /* absolute path to run nvcc by */
	char *nvcc_realpath; /* where it resolves (equal to the recorded one) */
	char *host;          /* absolute path of the host compiler, as nvcc names it */
};

/* meta: the entry's parsed metadata.json; cwd: its recorded working
 * directory, which is the current directory.  0, or -1 with why. */
int cjc_audit_trust_check(json_t *meta, const char *cwd, struct cjc_audit_trust *t,
			  struct cjc_buf *why);
void cjc_audit_trust_release(struct cjc_audit_trust *t);
/* An NVRTC entry: 0 with *library, the file to load (free it), or -1 with why. */
int cjc_audit_trust_nvrtc(json_t *meta, char **library, struct cjc_buf *why);

#endif
