/*
 * verify.h - sampled re-verification (the verify_rate setting, docs/key.md):
 * the net for an input that no rule knows.  After a hit was served, a
 * sampled one is compiled again as a miss would compile it, in the same
 * directory and environment, by a process of its own that the build does
 * not wait for, and the output is compared with the entry's by audit.h's
 * rules (cubin, fatbin and ptx byte for byte; objects by their device code
 * and symbols, nvcc's temporary names normalised).
 *
 *   the same       counted `verified`
 *   different      (or nvcc fails where the hit succeeded) counted
 *                  `verify_mismatches`; the entry is marked unsound
 *                  (maintain.h), so it is never served again, and a journal
 *                  record (result "mismatch": the entry, what differed, the
 *                  command) says so to `cjc why`
 *   not sampled    counted `verify_skipped`: a -G compile (nvcc writes its
 *                  temporary file names into device debug information, so
 *                  two compiles never match), or no verifier slot free: at
 *                  most CJC_VERIFY_SLOTS run at once per user and store
 *                  (slot files of this user's, locked: store.h
 *                  cjc_store_own_file), so a build is never flooded
 *
 * The verifier is a child in a session of its own, with /dev/null for its
 * standard streams and every other descriptor closed, so that make, ninja
 * or a CI runner reading the build's output do not wait for it; it works
 * in a private directory under TMPDIR, removed when it is done.  Nothing
 * here fails the compile: a verifier that cannot start is skipped, counted.
 */
#ifndef CJC_TOOL_VERIFY_H
#define CJC_TOOL_VERIFY_H

#include <stdbool.h>

#include "store/store.h"

#define CJC_VERIFY_SLOTS 2

struct cjc_verify {
	const struct cjc_store *store;
	double rate;               /* the setting: the fraction of hits sampled */
	const char *key;           /* the entry served */
	char *const *argv;         /* nvcc and its arguments, as a miss runs them, less -o */
	const char *artifact;      /* the entry's output ("output.o") */
	bool object;               /* an object: compared by its device code */
	bool device_debug;         /* -G: never sampled */
	/* for the journal's record (why.h) */
	const char *cwd, *source, *output, *target;
};

/* After a hit was served: samples it, and for a sample starts the verifier. */
void cjc_verify_sample(const struct cjc_verify *v);

#endif
