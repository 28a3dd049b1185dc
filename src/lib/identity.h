/*
 * identity.h - who the compilers are, cheaply and never stale.
 *
 * nvcc's identity is its resolved path and realpath, its `--version` output,
 * and the SHA-256 of the toolkit's compiler binaries beside it (cicc, ptxas,
 * fatbinary, nvlink, cudafe++, nvcc.profile).  The host compiler's is its
 * resolved path and realpath, its `--version` output and the SHA-256 of its
 * binary.  `digest` sums all of it and goes into the key.
 *
 * Working that out costs a subprocess and hashing ~150 MB, so it is
 * remembered in the store's ids/ directory (a blob, magic "CJCI") together
 * with the (device, inode, size, mtime, ctime) of every file it depends on.
 * A remembered identity is used only while every one of those files is
 * unchanged and was already older than 2 seconds when it was recorded (git's
 * racy-clean rule: a file changed in the same instant it was examined is not
 * trusted).  Otherwise it is worked out afresh.
 *
 * Returns 0, or -1 with errno (e.g. the compiler cannot be found or run).
 */
#ifndef CJC_IDENTITY_H
#define CJC_IDENTITY_H

#include "hash.h"
#include "store.h"

struct cjc_identity {
	char *path;     /* as resolved on PATH */
	char *realpath;
	char *version;  /* --version output */
	char digest[CJC_HEX_LEN + 1];
	int save_errno; /* non-zero: worked out, but could not be remembered */
};

/* store may be NULL: then nothing is remembered. */
int cjc_identity_nvcc(const struct cjc_store *store, const char *nvcc, struct cjc_identity *id);
int cjc_identity_host(const struct cjc_store *store, const char *compiler, struct cjc_identity *id);
void cjc_identity_release(struct cjc_identity *id);
/* A remembered identity's payload (after the blob frame): fills realpath,
 * version and digest when every file it names still has its stamp; else -1.
 * For the fuzzers; the lookups above call it. */
int cjc_identity_decode(const void *payload, size_t len, struct cjc_identity *id);

#endif
