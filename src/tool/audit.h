/*
 * audit.h - `cjc audit KEY|all [--json] [--jobs N]`: proves how an entry
 * was built by building it again.
 *
 * For each entry: the entry must verify (metadata.h, every byte); before
 * anything runs, nvcc and the host compiler must be the ones this machine
 * would run for that compile, and nothing recorded may make them run another
 * program (audit_trust.h: the rule, checked without running anything);
 * every recorded input must still hash as recorded, and the checked nvcc
 * and host compiler must still print the recorded --version.  Else the
 * entry "cannot rebuild" and the audit says why.  Then the recorded argv runs in
 * the recorded working directory with exactly the recorded key-relevant
 * environment and diagnostics settings, writing to a scratch directory, and
 * the result is compared with the stored artifacts:
 *
 *   cubin, fatbin, ptx, kept ptx, SASS   byte for byte
 *   objects                              the device code sections (.nv_fatbin,
 *                                        __nv_relfatbin, __nv_module_id, via
 *                                        objcopy) and the symbol table (nm -a),
 *                                        with nvcc's temporary file names
 *                                        (tmpxft_<pid>_<n>-<k>) normalised
 *   stderr                               with the same normalisation
 *
 * JIT entries (metadata.h "jit") are rebuilt from the code they hold,
 * written into the scratch directory for the command's
 * CJC_JIT_SOURCE_DIR/<name>: nvcc's as above, NVRTC's by loading the
 * recorded NVRTC into the child when audit_trust.h allows that file
 * (audit_nvrtc.h).  One made with a post-compile hook cannot be rebuilt.
 *
 * An entry that another user wrote (its directory or metadata.json owned by
 * neither you nor root, sign.h) is a request from that user: its recorded
 * command, options and working directory are run only when a key in
 * trusted_keys signed it; else it "cannot rebuild", with that reason, and
 * nothing of it runs (docs/trust.md, audit).
 *
 * Each entry is "reproducible", "differs" (with what) or "cannot rebuild"
 * (with why).  Entries are audited in child processes (--jobs at a time),
 * each in its own scratch directory under one
 * $TMPDIR/cjc-audit.<host>.<pid>.<random>, removed afterwards, at exit and on
 * SIGINT, SIGTERM and SIGHUP; the children die with the audit.  What a
 * SIGKILLed audit leaves there, the next audit on the host removes.  Paths
 * (CJC_DIR, TMPDIR) are made absolute first: the audit works in the recorded
 * directory.  The exit status is 0 when everything audited reproduced, 1
 * otherwise, 2 for bad usage.
 */
#ifndef CJC_AUDIT_H
#define CJC_AUDIT_H

#include <jansson.h>
#include <stdbool.h>

#include "store/store.h"

struct cjc_audit_options {
	const char *what; /* a key, a unique key prefix, or "all" */
	bool json;
	int jobs;
	const char *trusted_keys; /* the setting, or NULL: see below */
};

int cjc_audit(const struct cjc_store *s, const struct cjc_audit_options *o);

/* The comparison above, of one output made anew (rebuilt, a file) with
 * the entry's artifact name (an object's by its device code and symbols,
 * anything else byte for byte), scratch a private directory to work in:
 * a JSON array of the differences found, empty when none (verify.h). */
json_t *cjc_audit_compare_output(const struct cjc_entry *e, const char *name, bool object,
				 const char *rebuilt, const char *scratch);

#endif
