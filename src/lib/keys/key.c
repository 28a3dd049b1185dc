#include "keys/key.h"

#include <stdlib.h>
#include <string.h>


const char *const cjc_key_env[CJC_KEY_ENV_COUNT] = {
	"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN",
	"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
};

bool cjc_key_env_private(const char *name)
{
	return !strcmp(name, "NVCC_PREPEND_FLAGS") || !strcmp(name, "NVCC_APPEND_FLAGS");
}

void cjc_key_direct(const struct cjc_key_input *in, char out[CJC_HEX_LEN + 1])
{
	struct cjc_hash h;
	cjc_hash_init(&h);
	cjc_hash_str(&h, "cudajitcache-direct");
	cjc_hash_str(&h, CJC_STORE_FORMAT);
	cjc_hash_str(&h, in->kind);
	cjc_hash_str(&h, in->nvcc_digest);
	cjc_hash_str(&h, in->host_digest);
	cjc_hash_update(&h, in->source_sha, CJC_DIGEST_LEN);
	cjc_hash_str(&h, "args");
	for (size_t i = 0; i < in->nargs; i++)
		cjc_hash_str(&h, in->args[i]);
	cjc_hash_str(&h, "env");
	for (size_t i = 0; i < in->nenv; i++) {
		const char *v = getenv(in->env_names[i]);
		cjc_hash_str(&h, in->env_names[i]);
		cjc_hash_str(&h, v ? "set" : "unset");
		cjc_hash_str(&h, v ? v : "");
	}
	cjc_hash_str(&h, in->cwd ? in->cwd : "");
	cjc_hash_final_hex(&h, out);
}

void cjc_key_entry(const char *direct_key, const struct cjc_manifest_record *rec,
		   const struct cjc_place *place, char out[CJC_HEX_LEN + 1])
{
	const struct cjc_dep *deps = rec->deps;
	size_t n = rec->ndeps;
	struct cjc_hash h;
	cjc_hash_init(&h);
	cjc_hash_str(&h, "cudajitcache-entry");
	cjc_hash_str(&h, direct_key);
	for (size_t i = 0; i < n; i++) {
		char *resolved = cjc_place_resolve(place, deps[i].path);
		cjc_hash_str(&h, deps[i].path);
		cjc_hash_str(&h, resolved ? resolved : "");
		free(resolved);
		cjc_hash_update(&h, deps[i].sha, CJC_DIGEST_LEN);
	}
	/* the candidates that must stay absent: a record that lists fewer names
	 * another entry, so a poisoned manifest cannot drop one */
	cjc_hash_str(&h, "absent");
	for (size_t i = 0; i < rec->absent.n; i++)
		cjc_hash_str(&h, rec->absent.v[i]);
	cjc_hash_final_hex(&h, out);
}

void cjc_key_environment(struct cjc_strvec *env)
{
	for (size_t i = 0; i < CJC_KEY_ENV_COUNT; i++) {
		const char *v = getenv(cjc_key_env[i]);
		if (v) {
			char *kv = cjc_xasprintf("%s=%s", cjc_key_env[i], v);
			cjc_strvec_push(env, kv);
			free(kv);
		}
	}
}
