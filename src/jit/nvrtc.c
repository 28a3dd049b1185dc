/*
 * A compile with NVRTC (COMPILER=nvrtc), loaded with dlopen so that the
 * library has no link-time CUDA dependency.
 *
 * The key: the store format, the output kind, the NVRTC library's identity
 * (its path, its realpath, nvrtcVersion(), and the SHA-256 of the library
 * and of the libnvrtc-builtins beside it, whose built-in headers it
 * compiles with), the code's bytes, the name, the arch, every option, and
 * the request's extra_signature and hook.  The identity is remembered in
 * the store (identity.h, kind "nvrtc") while the library's files keep
 * their stamps, so a hit loads no NVRTC and hashes no library: the library
 * is loaded when a miss needs it, and must then be the file identified.
 * The direct key names a manifest (manifest.h) whose records list what
 * the compile read, as nvcc's do: the source (at a path where no file can
 * be), each file NVRTC opened or looked up and found, by content, and
 * each name it looked up and did not find (an include candidate earlier
 * on the path), paths as NVRTC gave them.  NVRTC does not say which files
 * it read, so they are observed: once loaded, NVRTC's calls of the C
 * library's file functions are bound to the recorder (compile/watch.h,
 * the NVRTC shim's too) by writing its import slots (compile/got.h), and
 * each compile is watched on its thread.  A record whose files are
 * unchanged names the entry, here and in the handle's memory (memory.c).
 * When NVRTC's imports cannot be bound (an object not as expected), or a
 * compile's reads cannot be keyed (it wrote or listed a directory, a file
 * changed during it, another thread's NVRTC looked something up), nothing
 * is cached, noted in the log, with an empty key.
 *
 * Nor is a compile whose code or options name a time macro: NVRTC ignores
 * SOURCE_DATE_EPOCH.
 * NVRTC makes cubin and ptx; a fatbin request is an error.  DUMP_PTX shows
 * the output of a ptx request, DUMP_SASS the listing of a cubin (jit.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "compile/diagnostics.h"
#include "compile/nvrtc.h"
#include "compile/watch.h"
#include "jit_internal.h"
#include "keys/key.h"
#include "keys/metadata.h"
#include "keys/rules.h"
#include "store/identity.h"
#include "store/stats.h"

struct nvrtc {
	void *lib;               /* NULL until a miss needs it (nvrtc_loaded) */
	struct cjc_identity id;  /* path, realpath, version, digest (identity.h) */
	struct cjc_nvrtc fn;     /* its functions, once loaded */
	bool stale;              /* the file loaded is not the one identified: nothing cached */
	char *unwatched;         /* why NVRTC's reads cannot be observed, or NULL (watch.h) */
};

/* The library stays loaded (no dlclose): NVRTC and the C++ runtime it
 * brings do not expect to be unloaded, and dlopen counts references. */
void jit_nvrtc_release(struct nvrtc *n)
{
	if (!n)
		return;
	cjc_identity_release(&n->id);
	free(n->unwatched);
	free(n);
}

/* The library a handle uses, when it can be named without loading it:
 * NVRTC_LIBRARY, else the toolkit's beside nvcc; NULL when the loader's
 * search path must find it. */
static char *library_path(const struct cjc_jit *h)
{
	const char *set = h->set.text[JIT_NVRTC_LIBRARY];
	if (*set)
		return cjc_xstrdup(set);
	char real[PATH_MAX], *found = NULL;
	char *nvcc = cjc_find_program(h->set.text[JIT_NVCC_COMPILER]);
	if (nvcc && realpath(nvcc, real)) {
		char *bin = cjc_dirname(real), *root = cjc_dirname(bin);
		static const char *const under[] = { "lib64/libnvrtc.so", "lib/libnvrtc.so" };
		for (size_t i = 0; i < 2 && !found; i++) {
			char *p = cjc_path_join(root, under[i]);
			if (!access(p, R_OK))
				found = p;
			else
				free(p);
		}
		free(bin);
		free(root);
	}
	free(nvcc);
	return found;
}

/* Where NVRTC's identity is remembered: the store, unless the handle
 * compiles without it (disable set, or the store unusable). */
static const struct cjc_store *identity_store(struct cjc_jit *h)
{
	return !h->cfg.disable && jit_store_ready(h) ? &h->store : NULL;
}

/* The file of the NVRTC that holds version: its realpath into real, the
 * name it was loaded by into *loaded, and the path of the builtins beside
 * it (malloc'd); NULL when it cannot be told. */
static char *builtins_of(int (*version)(int *, int *), char real[PATH_MAX], const char **loaded)
{
	Dl_info info;
	int major = 0, minor = 0;
	if (!dladdr((void *)version, &info) || !info.dli_fname || !realpath(info.dli_fname, real))
		return NULL;
	*loaded = info.dli_fname;
	version(&major, &minor);
	char *dir = cjc_dirname(real);
	char *builtins = cjc_xasprintf("%s/libnvrtc-builtins.so.%d.%d", dir, major, minor);
	free(dir);
	return builtins;
}

/* NVRTC's calls of the C library's file functions, and its builtins',
 * bound to the recorder (compile/watch.h); else why, in n->unwatched. */
static void watch_reads(struct nvrtc *n)
{
	char real[PATH_MAX];
	const char *loaded;
	struct cjc_buf why = CJC_BUF_INIT;
	char *builtins = builtins_of(n->fn.nvrtcVersion, real, &loaded);
	if (!builtins)
		cjc_buf_adds(&why, "cannot tell which file NVRTC was loaded from");
	else
		(void)cjc_watch_bind(n->lib, builtins, &why);
	n->unwatched = why.len ? cjc_buf_detach(&why) : NULL;
	cjc_buf_release(&why);
	free(builtins);
}

/* Loads the library (path, or the loader's libnvrtc.so) and its functions,
 * its reads watched (watch_reads). */
static int load(struct nvrtc *n, const char *path, struct cjc_buf *why)
{
	const char *name = path ? path : "libnvrtc.so";
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	const char *missing;
	if (!lib)
		return cjc_buf_addf(why, "cannot load NVRTC (%s): %s", name, dlerror()), -1;
	if (cjc_nvrtc_resolve(lib, &n->fn, &missing))
		return cjc_buf_addf(why, "%s lacks %s", name, missing), -1;
	n->lib = lib;
	watch_reads(n);
	return 0;
}

int jit_nvrtc_identify(struct cjc_jit *h, int (*version)(int *, int *), const char *path,
		       struct cjc_identity *id, struct cjc_buf *why)
{
	char real[PATH_MAX];
	const char *loaded;
	int major = 0, minor = 0;
	char *builtins = builtins_of(version, real, &loaded);
	if (!builtins)
		return cjc_buf_addf(why, "cannot tell which file NVRTC was loaded from"), -1;
	version(&major, &minor);
	char *text = cjc_xasprintf("NVRTC %d.%d", major, minor);
	char *files[] = { real, builtins };
	size_t nfiles = access(builtins, F_OK) ? 1 : 2;
	/* a bare name was found on the loader's path, not in the working directory */
	bool named = path && strchr(path, '/');
	int rc = cjc_identity_library(identity_store(h), "nvrtc", named ? path : loaded, text,
				      files, nfiles, id);
	if (rc)
		cjc_buf_addf(why, "cannot identify %s: %s", real, strerror(errno));
	free(text);
	free(builtins);
	return rc;
}

/* The loaded library's identity (jit_nvrtc_identify), under path when given. */
static int identify_loaded(struct cjc_jit *h, struct nvrtc *n, const char *path,
			   struct cjc_buf *why)
{
	return jit_nvrtc_identify(h, n->fn.nvrtcVersion, path, &n->id, why);
}

/* The handle's NVRTC, identified: from the store's record while the
 * library's files are unchanged (not loaded until a miss needs it:
 * nvrtc_loaded), else loaded and identified now. */
static struct nvrtc *nvrtc_of(struct cjc_jit *h)
{
	jit_lock(h);
	struct nvrtc *n = h->nvrtc;
	jit_unlock(h);
	if (n)
		return n;
	struct cjc_buf why = CJC_BUF_INIT;
	char *path = library_path(h);
	n = cjc_xcalloc(1, sizeof *n);
	if (!path || !identity_store(h) ||
	    cjc_identity_library(identity_store(h), "nvrtc", path, NULL, NULL, 0, &n->id))
		(void)(load(n, path, &why) || identify_loaded(h, n, path, &why));
	free(path);
	if (why.len) {
		jit_fail(h, "%s", why.data);
		cjc_buf_release(&why);
		jit_nvrtc_release(n);
		return NULL;
	}
	jit_lock(h);
	if (h->nvrtc)
		jit_nvrtc_release(n), n = h->nvrtc;
	else
		h->nvrtc = n;
	jit_unlock(h);
	return n;
}

/* Before a compile: the identified library loaded, and still the one
 * identified: 0; 1 when the file at its realpath is another now (upgraded in
 * place since the handle identified it: the keys made with the old identity
 * would name this compile's output wrongly); -1 (error set). */
static int nvrtc_loaded(struct cjc_jit *h, struct nvrtc *n)
{
	jit_lock(h);
	bool loaded = n->lib != NULL;
	jit_unlock(h);
	if (loaded)
		return 0;
	struct nvrtc fresh = { 0 };
	struct cjc_buf why = CJC_BUF_INIT;
	Dl_info info = { 0 };
	char real[PATH_MAX];
	if (!load(&fresh, n->id.realpath, &why) &&
	    (!dladdr((void *)fresh.fn.nvrtcVersion, &info) || !info.dli_fname ||
	     !realpath(info.dli_fname, real) || strcmp(real, n->id.realpath)))
		cjc_buf_addf(&why, "NVRTC loaded from %s is not the library identified (%s)",
			     info.dli_fname ? info.dli_fname : n->id.path, n->id.realpath);
	bool same = !why.len && !identify_loaded(h, &fresh, n->id.path, &why) &&
		    !strcmp(fresh.id.digest, n->id.digest);
	cjc_identity_release(&fresh.id);
	if (why.len) {
		int rc = jit_fail(h, "%s", why.data);
		cjc_buf_release(&why);
		free(fresh.unwatched);
		return rc;
	}
	jit_lock(h);
	if (!n->lib) {
		n->fn = fresh.fn;
		n->lib = fresh.lib;
		n->unwatched = fresh.unwatched, fresh.unwatched = NULL;
		n->stale = !same; /* this handle's keys name the library it identified */
	}
	free(fresh.unwatched);
	bool stale = n->stale;
	jit_unlock(h);
	return stale ? 1 : 0;
}

/* Why the request cannot be cached (rules.h), or NULL: the output would
 * depend on the clock (NVRTC ignores SOURCE_DATE_EPOCH), or on a file
 * whose contents are not keyed. */
static const char *uncacheable_request(const struct cjc_jit_request *req,
				       const struct cjc_strvec *options, const struct cjc_env *env)
{
	if (cjc_rules_time_macro(req->code, req->code ? strlen(req->code) : 0, false))
		return "the code names __DATE__, __TIME__ or __TIMESTAMP__ (NVRTC ignores "
		       "SOURCE_DATE_EPOCH)";
	for (size_t i = 0; i < options->n; i++) {
		const char *why = cjc_rules_nvrtc_option(options->v[i]);
		if (why)
			return why;
	}
	return cjc_key_env_uncacheable_in(env, true);
}

/* NVRTC's options: the arch, the settings', the request's. */
static void build_options(const struct jit_job *j, struct cjc_strvec *o)
{
	const struct jit_settings *s = &j->h->set;
	const char *arch = j->arch;
	char *a = j->req->format == CJC_JIT_PTX && cjc_starts_with(arch, "sm_")
		? cjc_xasprintf("--gpu-architecture=compute_%s", arch + 3)
		: cjc_xasprintf("--gpu-architecture=%s", arch);
	cjc_strvec_push(o, a);
	free(a);
	if (*s->text[JIT_CPP_STANDARD]) {
		char *std = cjc_xasprintf("--std=%s", s->text[JIT_CPP_STANDARD]);
		cjc_strvec_push(o, std);
		free(std);
	}
	if (s->flag[JIT_WITH_LINEINFO])
		cjc_strvec_push(o, "--generate-line-info");
	if (s->flag[JIT_DEBUG])
		cjc_strvec_push(o, "--device-debug");
	if (s->flag[JIT_PTXAS_VERBOSE])
		cjc_strvec_push(o, "--ptxas-options=-v");
	if (s->flag[JIT_CHECK_NO_SPILLS])
		cjc_strvec_push(o, "--ptxas-options=-warn-spills");
	if (s->flag[JIT_CHECK_NO_LOCAL_MEMORY])
		cjc_strvec_push(o, "--ptxas-options=-warn-lmem-usage");
	for (size_t i = 0; i < j->req->noptions; i++)
		if (j->req->options[i])
			cjc_strvec_push(o, j->req->options[i]);
}

struct nvrtc_job {
	struct jit_job *j;
	struct nvrtc *n;
	struct cjc_strvec options;
	char direct[CJC_HEX_LEN + 1];   /* the direct key: names the manifest */
	char memory[CJC_HEX_LEN + 1];   /* the memory tier's: the direct key and cwd */
	char cwd[PATH_MAX];             /* getcwd(), "" when it fails */
	struct cjc_manifest_record rec; /* what the compile read, served or made */
	char key[CJC_HEX_LEN + 1];      /* the entry served or published, or "" */
	struct cjc_remotes *remotes;    /* after a local miss (jit_remote_open) */
	int64_t duration_ms;
	struct cjc_buf data, log;
	struct cjc_buf unkeyable; /* why what a miss read cannot be keyed */
	struct cjc_env env;       /* read once: the rules' and the key's */
};

static void direct_key(struct nvrtc_job *r)
{
	struct cjc_strvec args = CJC_STRVEC_INIT;
	cjc_strvec_push(&args, "nvrtc");
	cjc_strvec_push(&args, "reads:observed"); /* not an entry of the text rules before */
	cjc_strvec_push(&args, r->j->name);
	char *count = cjc_xasprintf("options:%zu", r->options.n); /* framed: no option reads as a word after */
	cjc_strvec_push(&args, count);
	free(count);
	cjc_strvec_pushv(&args, r->options.v, r->options.n);
	jit_key_request(r->j, &args);
	struct cjc_key_input in = {
		.kind = r->j->ext,
		.nvcc_digest = r->n->id.digest,
		.host_digest = "nvrtc",
		.args = args.v,
		.nargs = args.n,
		.cwd = "",
		.as = "", /* NVRTC runs no assembler: no PATH search */
		.env = &r->env,
	};
	memcpy(in.source_sha, r->j->code_sha, CJC_DIGEST_LEN);
	cjc_key_direct(&in, r->direct);
	jit_journal_facts_nvrtc(r->j, &r->options, r->n->id.realpath, r->n->id.version, r->n->id.digest);
	cjc_strvec_clear(&args);
}

/* lookup.h's deliver: the entry's code and log (both left empty when not). */
static int read_entry(void *ctx, const struct cjc_entry *e, const struct cjc_manifest_record *rec,
		      struct cjc_buf *why)
{
	struct nvrtc_job *r = ctx;
	(void)rec;
	char *name = cjc_xasprintf("output.%s", r->j->ext);
	int rc = cjc_entry_read(e, name, &r->data, why);
	if (!rc && cjc_entry_artifact(e, "stderr"))
		rc = cjc_entry_read(e, "stderr", &r->log, why);
	if (rc) {
		cjc_buf_reset(&r->data);
		cjc_buf_reset(&r->log);
	}
	free(name);
	return rc;
}

/* NVRTC's compile, watched (compile/watch.h) when it is to be cached; its
 * record then in r->rec, or why it cannot be keyed in r->unkeyable. */
static int run_nvrtc(struct nvrtc_job *r, bool watch)
{
	struct cjc_jit *h = r->j->h;
	if (h->set.flag[JIT_PRINT_COMPILER_COMMAND]) {
		struct cjc_strvec argv = CJC_STRVEC_INIT;
		cjc_strvec_push(&argv, "nvrtc");
		cjc_strvec_pushv(&argv, r->options.v, r->options.n);
		cjc_strvec_push(&argv, r->j->name);
		cjc_diagnostics_print_command(argv.v);
		cjc_strvec_clear(&argv);
	}
	struct cjc_buf why = CJC_BUF_INIT;
	struct cjc_watch w;
	int64_t t0 = cjc_now_ms();
	if (watch)
		cjc_watch_begin(&w);
	else
		cjc_watch_ignore(true); /* its lookups are its own */
	int rc = cjc_nvrtc_compile(&r->n->fn, r->j->name, r->j->req->code, r->options.v,
				   r->options.n, r->j->req->format == CJC_JIT_PTX, &r->data, &r->log,
				   &why);
	if (watch)
		cjc_watch_end(&w);
	else
		cjc_watch_ignore(false);
	r->duration_ms = cjc_now_ms() - t0;
	if (rc)
		jit_fail(h, "%s: %s", r->j->name, why.data);
	else if (watch &&
		 !jit_deps_record(r->j, strlen(r->j->req->code), &w, &r->rec, &r->unkeyable))
		cjc_key_entry(r->direct, &r->rec, NULL, r->rec.entry_key);
	if (watch)
		cjc_watch_release(&w);
	cjc_buf_release(&why);
	return rc;
}

static json_t *options_json(const struct nvrtc_job *r)
{
	json_t *extra = json_array();
	for (size_t i = 0; i < r->options.n; i++)
		json_array_append_new(extra, cjc_json_bytes(r->options.v[i]));
	return json_pack("{s:s, s:[s], s:[], s:[], s:n, s:n, s:b, s:b, s:b, s:b, s:o}", "kind",
			 r->j->ext, "archs", r->j->arch, "defines", "include_dirs", "std", "optimize",
			 "debug", r->j->h->set.flag[JIT_DEBUG], "line_info",
			 r->j->h->set.flag[JIT_WITH_LINEINFO], "fast_math", false, "rdc", false,
			 "extra", extra);
}

/* The entry of r->rec, and the record in the direct key's manifest;
 * r->key then names it, or is "" when it could not be published. */
static void publish(struct nvrtc_job *r)
{
	struct cjc_jit *h = r->j->h;
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	cjc_strvec_push(&argv, "nvrtc");
	cjc_strvec_pushv(&argv, r->options.v, r->options.n);
	cjc_strvec_push(&argv, r->j->source);
	char cwd[PATH_MAX];
	char *name = cjc_xasprintf("output.%s", r->j->ext);
	json_t *options = options_json(r);
	struct cjc_metadata md = {
		.argv = argv.v, .argc = argv.n,
		.cwd = cjc_getpwd(cwd, sizeof cwd) ? cwd : "/",
		.compiler_path = r->n->id.path, .compiler_realpath = r->n->id.realpath,
		.compiler_version = r->n->id.version,
		.host_path = "none", .host_version = "NVRTC runs no host compiler",
		.options = options, .inputs = r->rec.deps, .ninputs = r->rec.ndeps,
		.target = "jit", .duration_ms = r->duration_ms,
	};
	memcpy(r->key, r->rec.entry_key, CJC_HEX_LEN + 1);
	struct cjc_publish p = jit_publish_of(h, r->key, r->j->name, &md);
	struct cjc_publish_file kept_source;
	jit_publish_request(r->j, &p, &kept_source, &md);
	p.direct_key = r->direct;
	p.rec = &r->rec;
	p.artifact = name;
	p.artifact_data = r->data.data;
	p.artifact_size = r->data.len;
	p.err = &r->log;
	bool won;
	if (cjc_publish(&p, &won) == CJC_PUBLISH_FAILED) {
		jit_count(r->j, CJC_STAT_ERRORS, 0);
		r->key[0] = '\0';
	} else {
		(void)cjc_remote_publish(r->remotes, r->key, r->direct, &r->rec);
	}
	json_decref(options);
	cjc_strvec_clear(&argv);
	free(name);
}

/* lookup.h's match: the first record of m whose files are unchanged (deps.c). */
static long match(void *ctx, const struct cjc_manifest *m)
{
	const struct nvrtc_job *r = ctx;
	return jit_deps_match(r->j->h, m, r->direct, NULL, r->j->source, r->j->code_sha);
}

/*
 * The memory tier's key: the direct key and the working directory, which
 * the names NVRTC looked up relative to it (its own probes, the program's
 * name, -Iinc) resolve against.  One item per directory, so that an item's
 * check (below) holds for the directory it was made in.
 */
static void memory_key(struct nvrtc_job *r)
{
	if (!getcwd(r->cwd, sizeof r->cwd) || r->cwd[0] != '/')
		r->cwd[0] = '\0';
	struct cjc_hash h;
	cjc_hash_init(&h);
	cjc_hash_str(&h, r->direct);
	cjc_hash_str(&h, r->cwd);
	cjc_hash_final_hex(&h, r->memory);
}

/* rec with its relative names made absolute under cwd: what the change
 * signal watches (changes.c takes absolute paths).  false where a name
 * climbs (..), which a link on the way would make mean somewhere else. */
static bool absolute_record(const char *cwd, const struct cjc_manifest_record *rec,
			    struct cjc_manifest_record *abs)
{
	bool ok = cwd[0] != '\0';
	abs->deps = cjc_xcalloc(rec->ndeps + 1, sizeof *abs->deps);
	for (size_t i = 0; i < rec->ndeps; i++) {
		const char *p = rec->deps[i].path;
		ok = ok && !strstr(p, "..");
		abs->deps[abs->ndeps++].path = p[0] == '/' ? cjc_xstrdup(p) : cjc_path_join(cwd, p);
	}
	for (size_t i = 0; i < rec->absent.n; i++) {
		const char *p = rec->absent.v[i];
		ok = ok && !strstr(p, "..");
		char *a = p[0] == '/' ? cjc_xstrdup(p) : cjc_path_join(cwd, p);
		cjc_strvec_push(&abs->absent, a);
		free(a);
	}
	return ok;
}

/* The watches on a remembered record's paths, made absolute (changes.c),
 * where the handle watches and the request has a working directory. */
static uint64_t watch_record(void *ctx, const struct cjc_manifest_record *rec)
{
	struct nvrtc_job *r = ctx;
	struct cjc_jit *h = r->j->h;
	struct cjc_manifest_record abs = { 0 };
	char *source = r->cwd[0] ? cjc_path_join(r->cwd, r->j->source) : NULL;
	bool absolute = r->cwd[0] && jit_changes_generation(h) &&
			absolute_record(r->cwd, rec, &abs);
	/* the generation the watches were in place in: the check after is in it */
	uint64_t gen = absolute ? jit_changes_watch(h, &abs,
						    r->j->source[0] == '/' ? r->j->source : source,
						    NULL)
				: 0;
	cjc_manifest_record_release(&abs);
	free(source);
	return gen;
}

/* Whether a remembered item's record still holds (memory.c). */
static bool still_holds(struct nvrtc_job *r, struct jit_memory_item *it)
{
	const struct jit_memory_check c = { watch_record, match, r };
	return jit_memory_holds(r->j->h, it, r->cwd[0] ? jit_changes_generation(r->j->h) : 0, &c);
}

/* A hit from the handle's memory (memory.c), its record's files unchanged:
 * 1, served; 0: not there. */
static int memory_hit(struct nvrtc_job *r)
{
	struct jit_memory_item *it = jit_memory_find(r->j->h, r->memory);
	if (!it)
		return 0;
	bool same = still_holds(r, it);
	if (same)
		jit_memory_serve(r->j, it);
	jit_memory_release(r->j->h, it);
	return same;
}

/* From the store by the direct key's manifest, or, after a local miss,
 * from a remote store (remote.h), published here; 1: served (r->key and
 * r->rec the entry's); 0: a miss. */
static int store_hit(struct nvrtc_job *r)
{
	struct cjc_lookup_request q = jit_lookup_request(r->j, r->direct);
	q.match = match;
	q.deliver = read_entry;
	q.ctx = r;
	struct cjc_lookup_result res = { 0 };
	if (cjc_lookup_local(&q, &res) != CJC_LOOKUP_HIT &&
	    (q.remotes = r->remotes = jit_remote_open(r->j->h)))
		cjc_lookup_remote(&q, &res);
	int served = jit_lookup_served(r->j, &res);
	if (served) {
		r->duration_ms = res.duration_ms;
		memcpy(r->key, res.entry_key, CJC_HEX_LEN + 1);
		r->rec = res.rec; /* moved out */
		memset(&res.rec, 0, sizeof res.rec);
	}
	cjc_lookup_result_release(&res);
	return served;
}

static void note_stale(struct jit_job *j, const struct nvrtc *n)
{
	jit_note(j->h,
		 "%s: not cached: NVRTC at %s changed since this handle identified it "
		 "(open a new handle)",
		 j->name, n->id.realpath);
}

/* Whether NVRTC, loaded for a miss, can be cached: the file identified,
 * its reads observed; else the log says why not. */
static bool still_cacheable(struct nvrtc_job *r)
{
	struct cjc_jit *h = r->j->h;
	jit_lock(h);
	bool stale = r->n->stale; /* set once loaded, as unwatched (nvrtc_loaded) */
	jit_unlock(h);
	if (stale) {
		note_stale(r->j, r->n);
		return false;
	}
	if (r->n->unwatched) {
		jit_note(h, "%s: not cached: the files NVRTC reads cannot be observed: %s",
			 r->j->name, r->n->unwatched);
		return false;
	}
	return true;
}

/* A miss: NVRTC runs, watched when cached, and what it made is published
 * when what it read can be keyed. */
static int compile_miss(struct nvrtc_job *r, bool cached)
{
	struct jit_job *j = r->j;
	struct cjc_jit *h = j->h;
	cjc_remote_hang_up(r->remotes);
	int loaded = nvrtc_loaded(h, r->n);
	if (loaded >= 0 && cached)
		cached = still_cacheable(r);
	int rc = loaded < 0 ? -1 : run_nvrtc(r, cached);
	if (!rc)
		rc = jit_run_hook(j, &r->data);
	if (!rc && cached)
		jit_count(j, CJC_STAT_MISSES, 0);
	bool keyed = !rc && cached && !r->unkeyable.len;
	if (!rc && cached && !keyed)
		jit_note(h, "%s: miss, not published: %s", j->name, r->unkeyable.data);
	if (keyed && !h->cfg.readonly)
		publish(r);
	if (!rc)
		jit_print_miss(j, &r->log, &r->data, r->key[0] ? r->key : NULL);
	jit_journal_compiled(j, rc, keyed ? &r->rec : NULL, r->key[0] != '\0', r->duration_ms,
			     r->unkeyable.len ? r->unkeyable.data : NULL);
	return rc;
}

int jit_nvrtc_compile(struct jit_job *j)
{
	struct cjc_jit *h = j->h;
	if (j->req->format == CJC_JIT_FATBIN)
		return jit_fail(h, "NVRTC makes cubin or ptx, not fatbin");
	struct nvrtc_job r = { .j = j, .n = nvrtc_of(h) };
	if (!r.n)
		return -1;
	build_options(j, &r.options);
	cjc_env_read(&r.env);
	const char *uncached = uncacheable_request(j->req, &r.options, &r.env);
	jit_lock(h);
	bool stale = r.n->stale;
	jit_unlock(h);
	if (stale)
		note_stale(j, r.n);
	bool cached = !uncached && !stale && jit_cacheable(j);
	if (uncached)
		jit_note(h, "%s: not cached: %s", j->name, uncached);
	jit_journal_uncacheable(j, uncached);
	if (cached) {
		direct_key(&r);
		memory_key(&r);
	}
	if (cached && memory_hit(&r)) {
		cjc_strvec_clear(&r.options);
		const char *log = j->out->log;
		return jit_check_ptxas(j, log, log ? strlen(log) : 0);
	}
	int rc = 0;
	if (cached && store_hit(&r))
		j->out->hit = 1;
	else
		rc = compile_miss(&r, cached);
	if (!rc)
		rc = jit_check_ptxas(j, r.log.data, r.log.len);
	memcpy(j->out->key, r.key, CJC_HEX_LEN + 1);
	j->out->size = r.data.len;
	j->out->data = r.data.len ? cjc_buf_detach(&r.data) : NULL;
	j->out->log = r.log.len ? cjc_buf_detach(&r.log) : NULL;
	if (r.key[0]) /* the record moved in */
		jit_memory_put(h, r.memory, r.key, &r.rec, j->out->data, j->out->size, j->out->log,
			       r.duration_ms);
	cjc_buf_release(&r.data);
	cjc_buf_release(&r.log);
	cjc_buf_release(&r.unkeyable);
	cjc_strvec_clear(&r.options);
	cjc_remote_close(r.remotes);
	cjc_manifest_record_release(&r.rec);
	return rc;
}
