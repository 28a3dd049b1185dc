#include "keys/key.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"

/* Sorted by name (bsearch; unit_test.c checks).  docs/key.md says why each. */
const struct cjc_env_var cjc_env_vars[] = {
	{ "CICC_PATH", CJC_ENV_NO_EFFECT, false, NULL },
	{ "COMPILER_PATH", CJC_ENV_UNCACHEABLE, false, "COMPILER_PATH is set: gcc's program search is not keyed" },
	{ "CPATH", CJC_ENV_KEYED, false, NULL },
	{ "CPLUS_INCLUDE_PATH", CJC_ENV_KEYED, false, NULL },
	{ "CUDAFE_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "C_INCLUDE_PATH", CJC_ENV_KEYED, false, NULL },
	{ "DEPENDENCIES_OUTPUT", CJC_ENV_UNCACHEABLE, false, "DEPENDENCIES_OUTPUT is set: gcc writes a dependency file a hit would not" },
	{ "DUMP_KNOBS_TO_FILE", CJC_ENV_UNCACHEABLE, false, "DUMP_KNOBS_TO_FILE is set: ptxas writes a file a hit would not" },
	{ "GCC_COLORS", CJC_ENV_NO_EFFECT, false, NULL },
	{ "GCC_COMPARE_DEBUG", CJC_ENV_UNCACHEABLE, false, "GCC_COMPARE_DEBUG is set: gcc compiles twice and may fail" },
	{ "GCC_EXEC_PREFIX", CJC_ENV_UNCACHEABLE, false, "GCC_EXEC_PREFIX is set: gcc's program search is not keyed" },
	{ "GCC_EXTRA_DIAGNOSTIC_OUTPUT", CJC_ENV_NO_EFFECT, false, NULL },
	{ "GCC_URLS", CJC_ENV_NO_EFFECT, false, NULL },
	{ "INCLUDES", CJC_ENV_KEYED, true, NULL },
	{ "LANG", CJC_ENV_NO_EFFECT, false, NULL },
	{ "LC_ALL", CJC_ENV_NO_EFFECT, false, NULL },
	{ "LC_CTYPE", CJC_ENV_NO_EFFECT, false, NULL },
	{ "LC_MESSAGES", CJC_ENV_NO_EFFECT, false, NULL },
	{ "LIBRARIES", CJC_ENV_KEYED, false, NULL },
	{ "LIBRARY_PATH", CJC_ENV_NO_EFFECT, false, NULL },
	{ "LLVMC_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "LLVMDIS_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "MAKEFLAGS", CJC_ENV_NO_EFFECT, false, NULL },
	{ "NVASM_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "NVCC_APPEND_FLAGS", CJC_ENV_KEYED, true, NULL },
	{ "NVCC_CCBIN", CJC_ENV_KEYED, false, NULL },
	{ "NVCC_PREPEND_FLAGS", CJC_ENV_KEYED, true, NULL },
	{ "NVDISASM_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "NVLINK_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "NVVMIR_LIBRARY_DIR", CJC_ENV_NO_EFFECT, false, NULL },
	{ "NVVM_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "OBJC_INCLUDE_PATH", CJC_ENV_NO_EFFECT, false, NULL },
	{ "OCG_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "PTXAS_FLAGS", CJC_ENV_KEYED, false, NULL },
	{ "SOURCE_DATE_EPOCH", CJC_ENV_KEYED, false, NULL },
	{ "SUNPRO_DEPENDENCIES", CJC_ENV_UNCACHEABLE, false, "SUNPRO_DEPENDENCIES is set: gcc writes a dependency file a hit would not" },
	{ "SYSTEM_INCLUDES", CJC_ENV_KEYED, true, NULL },
	{ "TMPDIR", CJC_ENV_DIRECTORY, false, "TMPDIR is not a directory cjc can write: nvcc cannot make its temporary files" },
};
const size_t cjc_env_count = sizeof cjc_env_vars / sizeof *cjc_env_vars;

static int by_name(const void *key, const void *elem)
{
	return strcmp(key, ((const struct cjc_env_var *)elem)->name);
}

const struct cjc_env_var *cjc_env_find(const char *name)
{
	return bsearch(name, cjc_env_vars, cjc_env_count, sizeof *cjc_env_vars, by_name);
}

/* The table by a hash of its names: a request reads the environment three
 * times, and a binary search of every variable's name was a third of a
 * repeated JIT request's time. */
#define ENV_SLOTS 128
_Static_assert(sizeof cjc_env_vars / sizeof *cjc_env_vars * 2 <= ENV_SLOTS, "ENV_SLOTS");
static unsigned char env_slots[ENV_SLOTS]; /* 1 + the table's index; 0: free */
static pthread_once_t env_slots_once = PTHREAD_ONCE_INIT;

static void index_env(void)
{
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *name = cjc_env_vars[i].name;
		size_t at = cjc_table_hash(name, strlen(name)) % ENV_SLOTS;
		while (env_slots[at])
			at = (at + 1) % ENV_SLOTS;
		env_slots[at] = (unsigned char)(i + 1);
	}
}

/* The table's index of the variable named by the n bytes at name, or -1. */
static long env_index(const char *name, size_t n)
{
	pthread_once(&env_slots_once, index_env);
	for (size_t at = cjc_table_hash(name, n) % ENV_SLOTS; env_slots[at]; at = (at + 1) % ENV_SLOTS) {
		const char *t = cjc_env_vars[env_slots[at] - 1].name;
		if (!strncmp(t, name, n) && !t[n])
			return env_slots[at] - 1;
	}
	return -1;
}

void cjc_env_read(struct cjc_env *e)
{
	extern char **environ;
	memset(e, 0, sizeof *e);
	for (char **p = environ; p && *p; p++) {
		const char *eq = strchr(*p, '=');
		long i = eq ? env_index(*p, (size_t)(eq - *p)) : -1;
		if (i >= 0 && i < CJC_ENV_SLOTS && !e->value[i])
			e->value[i] = eq + 1; /* the first of a name, as getenv's */
	}
}

bool cjc_key_env_private(const char *name)
{
	const struct cjc_env_var *v = cjc_env_find(name);
	return v && v->private;
}

/* A temporary directory nvcc can use: a directory we may write and search. */
static bool usable_directory(const char *path)
{
	struct stat st;
	return path[0] && !stat(path, &st) && S_ISDIR(st.st_mode) && !access(path, W_OK | X_OK);
}

const char *cjc_key_env_uncacheable(void)
{
	struct cjc_env e;
	cjc_env_read(&e);
	for (size_t i = 0; i < cjc_env_count; i++) {
		const struct cjc_env_var *v = &cjc_env_vars[i];
		const char *value = e.value[i];
		if (!value)
			continue;
		if (v->rule == CJC_ENV_UNCACHEABLE ||
		    (v->rule == CJC_ENV_DIRECTORY && !usable_directory(value)))
			return v->why;
	}
	return NULL;
}

int cjc_key_env_words(const char *value, struct cjc_strvec *words)
{
	struct cjc_buf w = CJC_BUF_INIT;
	bool in_word = false;
	char quote = 0;
	int rc = 0;
	for (const char *p = value; *p && !rc; p++) {
		if (strchr("$`\\", *p))
			rc = -1;
		else if (quote && *p == quote)
			quote = 0;
		else if (quote)
			cjc_buf_add(&w, p, 1);
		else if (*p == '"' || *p == '\'')
			quote = *p, in_word = true;
		else if (*p == ' ' || *p == '\t' || *p == '\n') {
			if (in_word)
				cjc_strvec_push(words, w.data ? w.data : "");
			cjc_buf_release(&w);
			in_word = false;
		} else {
			cjc_buf_add(&w, p, 1);
			in_word = true;
		}
	}
	if (!rc && quote)
		rc = -1;
	if (!rc && in_word)
		cjc_strvec_push(words, w.data ? w.data : "");
	cjc_buf_release(&w);
	return rc;
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
	struct cjc_env e;
	cjc_env_read(&e);
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *v = e.value[i];
		if (v && cjc_env_vars[i].rule == CJC_ENV_KEYED) {
			cjc_hash_str(&h, cjc_env_vars[i].name);
			cjc_hash_str(&h, v);
		}
	}
	char *found = in->as ? NULL : cjc_find_program("as");
	cjc_hash_str(&h, "as");
	cjc_hash_str(&h, in->as ? in->as : found ? found : "");
	free(found);
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
	struct cjc_env e;
	cjc_env_read(&e);
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *v = e.value[i];
		if (v && cjc_env_vars[i].rule == CJC_ENV_KEYED) {
			char *kv = cjc_xasprintf("%s=%s", cjc_env_vars[i].name, v);
			cjc_strvec_push(env, kv);
			free(kv);
		}
	}
}
