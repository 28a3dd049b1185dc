/*
 * key.h - the two keys of a compile (SPEC §3).
 *
 * The direct key covers everything known before nvcc runs: the store format,
 * the output kind, the compiler identities (identity.h), the source's bytes,
 * every argument that bears on the output (outputs and dependency-file
 * options are left out by the caller), the contents of options files (given
 * as arguments), the environment nvcc reads, and the working directory when
 * the output embeds it.  It names a manifest (manifest.h).
 *
 * The entry key adds the dependency set a miss observed: each file's path
 * and SHA-256.  It names the entry.  Both are SHA-256 as 64 lowercase hex;
 * every string is hashed with its terminating NUL so fields cannot run into
 * each other.
 */
#ifndef CJC_KEY_H
#define CJC_KEY_H

#include "hash.h"
#include "manifest.h"

/* The environment nvcc reads (SPEC §3): what a compile's key covers, what
 * metadata.json records, and what `cjc audit` sets again. */
#define CJC_KEY_ENV_COUNT 6
extern const char *const cjc_key_env[CJC_KEY_ENV_COUNT];

struct cjc_key_input {
	const char *kind;
	const char *nvcc_digest;
	const char *host_digest;
	unsigned char source_sha[CJC_DIGEST_LEN];
	char *const *args;
	size_t nargs;
	char *const *env_names; /* the variables nvcc reads */
	size_t nenv;
	const char *cwd; /* "" when the output does not embed it */
};

/* Values are read with getenv() for each of in->env_names. */
void cjc_key_direct(const struct cjc_key_input *in, char out[CJC_HEX_LEN + 1]);
void cjc_key_entry(const char *direct_key, const struct cjc_dep *deps, size_t n,
		   char out[CJC_HEX_LEN + 1]);

#endif
