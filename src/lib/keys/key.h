/*
 * key.h - the two keys of a compile (docs/key.md).
 *
 * The direct key covers everything known before nvcc runs: the store format,
 * the output kind, the compiler identities (identity.h), the source's bytes,
 * every argument that bears on the output (outputs and dependency-file
 * options are left out by the caller), the contents of options files (given
 * as arguments; a relative path argument is followed by where it resolves,
 * place.h), the environment nvcc reads, and the working directory when the
 * output records it (place.h).  It names a manifest (manifest.h).
 *
 * The entry key adds the dependency set a miss observed: each file's path,
 * where a relative one resolves (place.h), and its SHA-256; and the include
 * candidates that must stay absent (includescan.h).  It names the
 * entry.  A hit recomputes it from the manifest record and its own place, so
 * a record made elsewhere whose relative paths resolve differently here is
 * not used, and a record naming another entry than its files give cannot
 * direct a hit to it.  Both are SHA-256 as 64 lowercase hex;
 * every string is hashed with its terminating NUL so fields cannot run into
 * each other.
 */
#ifndef CJC_KEY_H
#define CJC_KEY_H

#include "base/hash.h"
#include "keys/manifest.h"
#include "keys/place.h"

/* The environment nvcc reads (docs/key.md): what a compile's key covers, what
 * metadata.json records, and what `cjc audit` sets again. */
/* The store's format: in every key, and the namespace's first name (store.h). */
#define CJC_STORE_FORMAT "v1"

#define CJC_KEY_ENV_COUNT 6
extern const char *const cjc_key_env[CJC_KEY_ENV_COUNT];
/* Whether a variable's value may hold a secret (flags, such as -DTOKEN=...):
 * metadata and the journal record it by SHA-256 only (metadata.h). */
bool cjc_key_env_private(const char *name);
/* Those of cjc_key_env that are set, as NAME=value, pushed onto env. */
void cjc_key_environment(struct cjc_strvec *env);

struct cjc_key_input {
	const char *kind;
	const char *nvcc_digest;
	const char *host_digest;
	unsigned char source_sha[CJC_DIGEST_LEN];
	char *const *args;
	size_t nargs;
	char *const *env_names; /* the variables nvcc reads */
	size_t nenv;
	const char *cwd; /* "" when the output does not record it (place.h keys_cwd) */
};

/* Values are read with getenv() for each of in->env_names. */
void cjc_key_direct(const struct cjc_key_input *in, char out[CJC_HEX_LEN + 1]);
void cjc_key_entry(const char *direct_key, const struct cjc_manifest_record *rec,
		   const struct cjc_place *place, char out[CJC_HEX_LEN + 1]);

#endif
