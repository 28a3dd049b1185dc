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
 * remembered in the store's ids/ directory (a blob, magic "CJI3") together
 * with the (device, inode, size, mtime, ctime) of every file it depends on.
 * A remembered identity is used only while every one of those files is
 * unchanged and was already older than 2 seconds when it was recorded (git's
 * racy-clean rule: a file changed in the same instant it was examined is not
 * trusted).  Otherwise it is worked out afresh.
 *
 * A record is a memo (blob.h): it is used only from a file of yours or
 * root's that no one else can write, and written into one of yours
 * (ids/<hash>.<uid> where someone else's is at ids/<hash>).  Nor does it
 * ever name a program to run: nvcc's realpath is worked out now, on every
 * lookup (a record naming another is stale), and only that realpath's
 * directory is where cuobjdump is looked for (diagnostics.h).  The host
 * compiler's recorded realpath is only hashed and shown.  A record says
 * what it identifies (the kind, nvcc or host compiler, and the path its
 * file's name is hashed from), so that one renamed onto another's name is
 * no record: worked out afresh and written into your own.
 *
 * Returns 0, or -1 with errno (e.g. the compiler cannot be found or run).
 */
#ifndef CJC_IDENTITY_H
#define CJC_IDENTITY_H

#include "base/hash.h"
#include "store/store.h"

struct cjc_identity {
	char *path;     /* as resolved on PATH */
	char *realpath;
	char *version;  /* --version output */
	char digest[CJC_HEX_LEN + 1];
	int save_errno; /* non-zero: worked out, but could not be remembered */
};

/* The files beside nvcc's realpath that its identity hashes, relative to
 * its directory; NULL-terminated. */
extern const char *const cjc_identity_nvcc_tools[];

/* store may be NULL: then nothing is remembered. */
int cjc_identity_nvcc(const struct cjc_store *store, const char *nvcc, struct cjc_identity *id);
int cjc_identity_host(const struct cjc_store *store, const char *compiler, struct cjc_identity *id);
/* A library's identity (kind "nvrtc": NVRTC, which the JIT library loads):
 * path as the caller found it, its realpath, version as the caller read it
 * from the library, and the SHA-256 of files (the library and what it
 * loads), remembered as a compiler's is.  With version NULL: only a
 * remembered identity, so that a hit needs no library loaded; -1 when there
 * is none (or it is stale). */
int cjc_identity_library(const struct cjc_store *store, const char *kind, const char *path,
			 const char *version, char *const *files, size_t n, struct cjc_identity *id);
void cjc_identity_release(struct cjc_identity *id);
/* A remembered identity's payload (after the blob frame): fills realpath,
 * version and digest when every file it names still has its stamp; else -1.
 * For the fuzzers: whatever kind and path the record names (the lookups
 * above also require their own). */
int cjc_identity_decode(const void *payload, size_t len, struct cjc_identity *id);

#endif
