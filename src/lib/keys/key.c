#include "keys/key.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"

/* Sorted by name (bsearch; unit_test.c checks).  docs/key.md says why each. */
const struct cjc_env_var cjc_env_vars[] = {
	{ "AS_SECURE_LOG_FILE", CJC_ENV_UNCACHEABLE, false, "AS_SECURE_LOG_FILE is set: the assembler may write a file a hit would not", true },
	{ "BINUTILS_ROOT", CJC_ENV_UNCACHEABLE, false, "BINUTILS_ROOT is set: gcc's assembler and linker are looked for elsewhere, not keyed", false },
	{ "CAN_FINALIZE_DEBUG", CJC_ENV_UNCACHEABLE, false, "CAN_FINALIZE_DEBUG is set: an undocumented switch of nvcc's stages", false },
	{ "CCC_OVERRIDE_OPTIONS", CJC_ENV_UNCACHEABLE, false, "CCC_OVERRIDE_OPTIONS is set: clang rewrites its own options, not keyed", false },
	{ "CC_LOG_DIAGNOSTICS", CJC_ENV_UNCACHEABLE, false, "CC_LOG_DIAGNOSTICS is set: clang writes a file a hit would not", false },
	{ "CC_PRINT_HEADERS", CJC_ENV_UNCACHEABLE, false, "CC_PRINT_HEADERS is set: clang writes a file a hit would not", false },
	{ "CC_PRINT_OPTIONS", CJC_ENV_UNCACHEABLE, false, "CC_PRINT_OPTIONS is set: clang writes a file a hit would not", false },
	{ "CC_PRINT_PROC_STAT", CJC_ENV_UNCACHEABLE, false, "CC_PRINT_PROC_STAT is set: clang writes a file a hit would not", false },
	{ "CICC_PATH", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "COMPILER_PATH", CJC_ENV_UNCACHEABLE, false, "COMPILER_PATH is set: gcc's program search is not keyed", false },
	{ "CPATH", CJC_ENV_KEYED, false, NULL, false },
	{ "CPLUS_INCLUDE_PATH", CJC_ENV_KEYED, false, NULL, false },
	{ "CUDAFE_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "CUDA_CACHE_DISABLE", CJC_ENV_NO_EFFECT, false, NULL, true },
	{ "C_INCLUDE_PATH", CJC_ENV_KEYED, false, NULL, false },
	{ "DEPENDENCIES_OUTPUT", CJC_ENV_UNCACHEABLE, false, "DEPENDENCIES_OUTPUT is set: gcc writes a dependency file a hit would not", false },
	{ "DUMP_KNOBS_TO_FILE", CJC_ENV_UNCACHEABLE, false, "DUMP_KNOBS_TO_FILE is set: ptxas writes a file a hit would not", true },
	{ "EDG_BASE", CJC_ENV_UNCACHEABLE, false, "EDG_BASE is set: cudafe++'s own files are looked for elsewhere, not keyed", true },
	{ "EDG_MODULES_PATH", CJC_ENV_UNCACHEABLE, false, "EDG_MODULES_PATH is set: cudafe++'s modules are looked for elsewhere, not keyed", true },
	{ "EDG_SUPPRESS_ASSERTION_LINE_NUMBER", CJC_ENV_UNCACHEABLE, false, "EDG_SUPPRESS_ASSERTION_LINE_NUMBER is set: an undocumented switch of cudafe++", false },
	{ "FORCE_CLANG_DIAGNOSTICS_CRASH", CJC_ENV_UNCACHEABLE, false, "FORCE_CLANG_DIAGNOSTICS_CRASH is set: clang crashes on purpose", false },
	{ "G++_ROOT", CJC_ENV_UNCACHEABLE, false, "G++_ROOT is set: g++'s own headers and programs are looked for elsewhere, not keyed", false },
	{ "GCC_COLORS", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "GCC_COMPARE_DEBUG", CJC_ENV_UNCACHEABLE, false, "GCC_COMPARE_DEBUG is set: gcc compiles twice and may fail", false },
	{ "GCC_EXEC_PREFIX", CJC_ENV_UNCACHEABLE, false, "GCC_EXEC_PREFIX is set: gcc's program search is not keyed", false },
	{ "GCC_EXTRA_DIAGNOSTIC_OUTPUT", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "GCC_ROOT", CJC_ENV_UNCACHEABLE, false, "GCC_ROOT is set: gcc's own headers and programs are looked for elsewhere, not keyed", false },
	{ "GCC_URLS", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "INCLUDES", CJC_ENV_KEYED, true, NULL, false },
	{ "LANG", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "LC_ALL", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "LC_CTYPE", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "LC_MESSAGES", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "LD_LIBRARY_PATH", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "LIBNVVM_DISABLE_CONCURRENT_API", CJC_ENV_NO_EFFECT, false, NULL, true },
	{ "LIBRARIES", CJC_ENV_KEYED, false, NULL, false },
	{ "LIBRARY_PATH", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "LLVMC_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "LLVMDIS_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "LLVM_OVERRIDE_PRODUCER", CJC_ENV_KEYED, false, NULL, true },
	{ "LPATH", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "MAKEFLAGS", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "MALLOC_CONF", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "NOCOLOR", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "NVASM_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "NVCC_APPEND_FLAGS", CJC_ENV_KEYED, true, NULL, false },
	{ "NVCC_CCBIN", CJC_ENV_KEYED, false, NULL, false },
	{ "NVCC_PREPEND_FLAGS", CJC_ENV_KEYED, true, NULL, false },
	{ "NVDISASM_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "NVLINK_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "NVRTCWIZ", CJC_ENV_UNCACHEABLE, false, "NVRTCWIZ is set: an undocumented switch of NVRTC", true },
	{ "NVRTC_APPEND_FLAGS", CJC_ENV_UNCACHEABLE, false, "NVRTC_APPEND_FLAGS is set: NVRTC reads it, and what it adds is not seen", true },
	{ "NVRTC_DISABLE_CONCURRENT_NVVM", CJC_ENV_NO_EFFECT, false, NULL, true },
	{ "NVRTC_DISABLE_PCH", CJC_ENV_NO_EFFECT, false, NULL, true },
	{ "NVRTC_INTERNAL_GLOBAL_LOCK", CJC_ENV_NO_EFFECT, false, NULL, true },
	{ "NVRTC_PCH_HEAP_SIZE", CJC_ENV_NO_EFFECT, false, NULL, true },
	{ "NVVMCCWIZ", CJC_ENV_UNCACHEABLE, false, "NVVMCCWIZ is set: an undocumented switch of cicc", false },
	{ "NVVMIR_LIBRARY_DIR", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "NVVM_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "NVVM_IR_VER_CHK", CJC_ENV_UNCACHEABLE, false, "NVVM_IR_VER_CHK is set: an undocumented switch of NVVM", true },
	{ "NV_NVVM_VERSION", CJC_ENV_UNCACHEABLE, false, "NV_NVVM_VERSION is set: an undocumented switch of NVVM", true },
	{ "OBJCPLUS_INCLUDE_PATH", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "OBJC_INCLUDE_PATH", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "OCG_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "PTXAS_FLAGS", CJC_ENV_KEYED, false, NULL, false },
	{ "ROCM_PATH", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "SOURCE_DATE_EPOCH", CJC_ENV_KEYED, false, NULL, false },
	{ "SUNPRO_DEPENDENCIES", CJC_ENV_UNCACHEABLE, false, "SUNPRO_DEPENDENCIES is set: gcc writes a dependency file a hit would not", false },
	{ "SYSTEM_INCLUDES", CJC_ENV_KEYED, true, NULL, false },
	{ "TEMP", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "TEMPDIR", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "TERM", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "TMP", CJC_ENV_NO_EFFECT, false, NULL, false },
	{ "TMPDIR", CJC_ENV_DIRECTORY, false, "TMPDIR is not a directory cjc can write: nvcc cannot make its temporary files", false },
	{ "TOP", CJC_ENV_UNCACHEABLE, false, "TOP is set: a variable of nvcc.profile; what it moves is not keyed", false },
	{ "USR_INCLUDE", CJC_ENV_UNCACHEABLE, false, "USR_INCLUDE is set: a variable of nvcc.profile; what it moves is not keyed", false },
	{ "_HERE_", CJC_ENV_UNCACHEABLE, false, "_HERE_ is set: a variable of nvcc.profile; what it moves is not keyed", false },
	{ "_SPACE_", CJC_ENV_UNCACHEABLE, false, "_SPACE_ is set: a variable of nvcc.profile; what it moves is not keyed", false },
	{ "_TARGET_DIR_", CJC_ENV_UNCACHEABLE, false, "_TARGET_DIR_ is set: a variable of nvcc.profile; what it moves is not keyed", false },
	{ "_TARGET_SIZE_", CJC_ENV_UNCACHEABLE, false, "_TARGET_SIZE_ is set: a variable of nvcc.profile; what it moves is not keyed", false },
	{ "bar", CJC_ENV_UNCACHEABLE, false, "bar is set: nvcc and NVRTC read it, for a purpose not documented", true },
	{ "compiler-bindir", CJC_ENV_UNCACHEABLE, false, "compiler-bindir is set: a variable of nvcc.profile that chooses the host compiler, not keyed", false },
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
#define ENV_SLOTS 256
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

const char *cjc_key_env_uncacheable_in(const struct cjc_env *e, bool nvrtc)
{
	for (size_t i = 0; i < cjc_env_count; i++) {
		const struct cjc_env_var *v = &cjc_env_vars[i];
		const char *value = e->value[i];
		if (!value || (nvrtc && !v->nvrtc))
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
	struct cjc_env read;
	const struct cjc_env *e = in->env;
	if (!e)
		cjc_env_read(&read), e = &read;
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *v = e->value[i];
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

/* A dependency's path as the key holds it: its layout under the root
 * (path-free keys), else as written and where a relative one resolves. */
static void hash_path(struct cjc_hash *h, const struct cjc_place *place, const char *path)
{
	char *keyed = cjc_place_key_path(place, path);
	char *resolved = keyed ? NULL : cjc_place_resolve(place, path);
	cjc_hash_str(h, keyed ? keyed : path);
	cjc_hash_str(h, resolved ? resolved : "");
	free(keyed);
	free(resolved);
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
		hash_path(&h, place, deps[i].path);
		cjc_hash_update(&h, deps[i].sha, CJC_DIGEST_LEN);
	}
	/* the candidates that must stay absent: a record that lists fewer names
	 * another entry, so a poisoned manifest cannot drop one */
	cjc_hash_str(&h, "absent");
	for (size_t i = 0; i < rec->absent.n; i++) {
		char *keyed = cjc_place_key_path(place, rec->absent.v[i]);
		cjc_hash_str(&h, keyed ? keyed : rec->absent.v[i]);
		free(keyed);
	}
	if (rec->exact) {
		char *source = cjc_place_source_name(place);
		cjc_hash_str(&h, "exact");
		cjc_hash_str(&h, place && place->root ? place->root : "");
		cjc_hash_str(&h, source ? source : "");
		free(source);
	}
	cjc_hash_final_hex(&h, out);
}

void cjc_key_environment(const struct cjc_env *e, struct cjc_strvec *env)
{
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *v = e->value[i];
		if (v && cjc_env_vars[i].rule == CJC_ENV_KEYED) {
			char *kv = cjc_xasprintf("%s=%s", cjc_env_vars[i].name, v);
			cjc_strvec_push(env, kv);
			free(kv);
		}
	}
}
