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

#include <stdint.h>

#include "base/hash.h"
#include "base/util.h"
#include "keys/place.h"

/* The store's format: in every key, and the namespace's first name (store.h). */
#define CJC_STORE_FORMAT "v1"

/*
 * The environment nvcc, its stages and the host compiler read, one sorted
 * table (docs/key.md has it with the evidence): each variable is
 *   KEYED        its value is in the direct key when set (metadata.json
 *                records it, `cjc audit` sets it again);
 *   UNCACHEABLE  set at all, the compile runs uncached (gcc's program search,
 *                variables that make a stage write a file);
 *   DIRECTORY    a temporary directory: no effect on what is cached while it
 *                names a directory we can write, else uncacheable (nvcc
 *                fails, and a hit must not succeed where nvcc would not);
 *   NO_EFFECT    read, but shown to leave outputs and status unchanged
 *                (tests/closed_world_test.sh sets them all and compares).
 * Every name the compilers are seen to read is in it, or the suite fails
 * (tests/closed_world_test.sh): a new toolkit or gcc that reads a new
 * variable fails the tests, not a user.  nvrtc marks the variables NVRTC
 * reads too: its paths apply the rule of those alone.
 * SOURCE_DATE_EPOCH is keyed: it fixes __DATE__, __TIME__ and __TIMESTAMP__
 * (a compile that uses them without it is uncacheable, miss.h).
 */
enum cjc_env_rule { CJC_ENV_KEYED, CJC_ENV_UNCACHEABLE, CJC_ENV_DIRECTORY, CJC_ENV_NO_EFFECT };

struct cjc_env_var {
	const char *name;
	enum cjc_env_rule rule;
	bool private; /* the value may hold a secret (-DTOKEN=...): recorded by SHA-256 only */
	const char *why; /* UNCACHEABLE, DIRECTORY: the reason `cjc why` and the counters give */
	bool nvrtc;      /* NVRTC reads it too */
};

extern const struct cjc_env_var cjc_env_vars[];
extern const size_t cjc_env_count;
/* The table's entry for name (bsearch), or NULL when nvcc reads no such variable. */
const struct cjc_env_var *cjc_env_find(const char *name);
/* The table's variables as the environment has them now, by the table's
 * index (NULL: not set): what getenv() answers for each, found in one pass
 * over the environment (a JIT's repeated request reads them all three
 * times; getenv for each would walk the environment ~120 times). */
#define CJC_ENV_SLOTS 128
struct cjc_env {
	const char *value[CJC_ENV_SLOTS];
};
void cjc_env_read(struct cjc_env *e);
/* Whether a variable's value may hold a secret: metadata and the journal
 * record it by SHA-256 only (metadata.h). */
bool cjc_key_env_private(const char *name);
/* Those KEYED variables that are set in e, as NAME=value, pushed onto env. */
void cjc_key_environment(const struct cjc_env *e, struct cjc_strvec *env);
/* Why the environment e (cjc_env_read) makes a compile uncacheable
 * ("COMPILER_PATH is set: gcc's program search is not keyed"), or NULL; a
 * static string.  nvrtc: an NVRTC compile's, by the variables NVRTC reads
 * alone. */
const char *cjc_key_env_uncacheable_in(const struct cjc_env *e, bool nvrtc);
/* The words of a flags variable (INCLUDES, ...) as nvcc splits them: blanks
 * separate, double and single quotes group; -1 when the value holds a
 * character whose meaning there we do not know ($, `, \). */
int cjc_key_env_words(const char *value, struct cjc_strvec *words);

struct cjc_key_input {
	const char *kind;
	const char *nvcc_digest;
	const char *host_digest;
	unsigned char source_sha[CJC_DIGEST_LEN];
	char *const *args;
	size_t nargs;
	const char *cwd; /* "" when the output does not record it (place.h keys_cwd) */
	const char *as;  /* where PATH finds `as`, "" for nowhere; NULL: looked up here */
	const struct cjc_env *env; /* the environment as read (cjc_env_read); NULL: read here */
};

/* The KEYED variables (cjc_env_vars) that are set are read with getenv(),
 * and where PATH finds `as` (gcc runs the first `as` on PATH when it has
 * none of its own) is keyed too. */
void cjc_key_direct(const struct cjc_key_input *in, char out[CJC_HEX_LEN + 1]);

/* What an entry key is made of, as a manifest records it (manifest.h):
 * the dependency set of one miss, the candidates absent then, and the
 * entry key it gave. */
struct cjc_dep {
	char *path;
	uint64_t size;
	unsigned char sha[CJC_DIGEST_LEN];
};

struct cjc_manifest_record {
	char entry_key[CJC_HEX_LEN + 1];
	struct cjc_dep *deps;
	size_t ndeps;
	struct cjc_strvec absent;
	char *root; /* path-free keys: the root the paths were made under (place.h); NULL: none */
	bool exact; /* a path can reach this output: the entry key holds the place itself */
};

/* The entry key of rec's files in this place (rec's own entry_key is not
 * read; the direct key is the compile's).  With place->root, a path under
 * it is keyed by its layout under the root (place.h); a record that is
 * exact adds the root and the source's absolute name, so that it names
 * another entry anywhere else. */
void cjc_key_entry(const char *direct_key, const struct cjc_manifest_record *rec,
		   const struct cjc_place *place, char out[CJC_HEX_LEN + 1]);

#endif
