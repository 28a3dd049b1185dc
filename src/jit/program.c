/*
 * An NVRTC program compiled through the cache (program.h): its key, its
 * lookup in the store and the remote ones, and its publication, with the
 * process's handle: its store, opened on first use, its remote stores, its
 * hash memo, counters and journal.  The handle is opened at the first
 * compile with the CJC_JIT_* and cjc settings and never closed.
 *
 * The direct key: NVRTC's identity (its realpath, version and the SHA-256
 * of the library and its builtins, remembered in the store: identity.h),
 * the program's name and source, each header given as a string (name and
 * SHA-256), every option, and the name expressions, each list framed by its
 * count.  It names a manifest (manifest.h) whose records list what the
 * compile read, as compile/watch.c watched it: the source, each file found,
 * by content, and each name looked up and not found, paths as NVRTC gave
 * them (a relative one is checked against the working directory of the
 * lookup, as NVRTC resolves it).  A record whose files are unchanged names
 * the entry.
 *
 * An entry (kind "nvrtc"): nvrtc.json (what each nvrtcGet<KIND>Size
 * answered, and each name expression with its lowered name), output.<kind>
 * for each kind NVRTC made (none when it made that kind empty), stderr (the
 * program log), source.cu and, when the program had any, headers.json (each
 * header's name and text).
 *
 * Not cached, with the reason in the log and the journal: a compile NVRTC
 * failed (its result is passed through), options that read or write files
 * besides the compile's own (precompiled headers, --time, timing traces),
 * a source, header or option that names __DATE__, __TIME__ or __TIMESTAMP__
 * (rules.h: line splices joined; NVRTC ignores SOURCE_DATE_EPOCH), and a
 * compile the watch could not key (compile/watch.c); when NVRTC's file
 * calls are not watched (jit_nvrtc.watched), any compile that could read a
 * file.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/oom.h"
#include "jit_internal.h"
#include "keys/key.h"
#include "keys/rules.h"
#include "program.h"
#include "store/records.h"
#include "store/stats.h"

#define NVRTC_JSON "nvrtc.json"
#define HEADERS_JSON "headers.json"
#define MAX_NVRTC_JSON (16u << 20)

/* ---- the process's handle and NVRTC's identity ---- */

static pthread_once_t handle_once = PTHREAD_ONCE_INIT;
static cjc_jit *handle;

static void open_handle(void)
{
	char err[512];
	handle = cjc_jit_open(NULL, err, sizeof err);
	if (!handle)
		fprintf(stderr, "cjc nvrtc shim: %s; NVRTC runs uncached\n", err);
}

static pthread_mutex_t identity_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cjc_identity identity;
static int identified; /* 0: not yet; 1: in identity; -1: cannot be */

static void identify_again(void *unused)
{
	(void)unused;
	cjc_identity_release(&identity);
	identified = 0;
}

/* NVRTC's identity: remembered in the store while its files keep their
 * stamps, else taken now (jit_nvrtc_identify). */
static const struct cjc_identity *identity_of(struct cjc_jit *h, const struct jit_nvrtc *n)
{
	cjc_oom_lock(&identity_lock);
	if (!identified) {
		Dl_info info;
		char real[PATH_MAX];
		struct cjc_buf why = CJC_BUF_INIT;
		identified = -1;
		cjc_oom_undo_push(identify_again, NULL); /* out of memory: not for good */
		if (!dladdr((void *)n->version, &info) || !info.dli_fname ||
		    !realpath(info.dli_fname, real))
			jit_note(h, "nvrtc shim: cannot tell which file NVRTC was loaded from");
		else if (!cjc_identity_library(&h->store, "nvrtc", real, NULL, NULL, 0,
					       &identity) ||
			 !jit_nvrtc_identify(h, n->version, real, &identity, &why))
			identified = 1;
		else
			jit_note(h, "nvrtc shim: %s", why.data);
		cjc_buf_release(&why);
		cjc_oom_undo_pop(identify_again, NULL);
	}
	cjc_oom_unlock(&identity_lock);
	return identified > 0 ? &identity : NULL;
}

/* ---- one compile ---- */

struct program_job {
	struct jit_job j;
	struct cjc_jit_request req;
	const struct jit_nvrtc *n;
	struct jit_program *p;
	int noptions;
	const char *const *options;
	const struct cjc_identity *id;
	struct cjc_strvec words; /* the key's arguments (facts for the journal) */
	char direct[CJC_HEX_LEN + 1];
	struct cjc_remotes *remotes;
	struct cjc_manifest_record rec;
	int64_t duration_ms;
	struct cjc_env env; /* read once: the rules' and the key's */
	struct program_call *call;
};

/* A compile under the guard (base/oom.h): whether NVRTC itself compiled
 * the program, and its answer, which stands if the rest is abandoned. */
struct program_call {
	const struct jit_nvrtc *n;
	struct jit_program *p;
	int noptions;
	const char *const *options;
	bool compiled;
	cjc_nvrtc_result rc;
};

/* Whether text names a time macro (rules.h: NVRTC ignores SOURCE_DATE_EPOCH). */
static bool names_clock(const char *text)
{
	return text && cjc_rules_time_macro(text, strlen(text), false);
}

/* Why a request cannot be cached, before anything is looked up; or NULL. */
static const char *unkeyable_request(const struct program_job *s)
{
	for (int i = 0; i < s->noptions; i++) {
		if (!s->options[i])
			return "an option is NULL";
		const char *why = cjc_rules_nvrtc_option(s->options[i]);
		if (why)
			return why;
	}
	if (names_clock(s->p->source))
		return "the source names __DATE__, __TIME__ or __TIMESTAMP__";
	for (size_t i = 0; i < s->p->headers.n; i++)
		if (names_clock(s->p->headers.v[i]))
			return "a header names __DATE__, __TIME__ or __TIMESTAMP__";
	const char *environment = cjc_key_env_uncacheable_in(&s->env, true);
	if (environment)
		return environment;
	if (!s->n->watched &&
	    (s->noptions || cjc_rules_may_include(s->p->source, strlen(s->p->source))))
		return "the shim's audit module is not loaded, so the files NVRTC reads cannot be "
		       "watched (run the program with `cjc run`)";
	return NULL;
}

static void push_count(struct cjc_strvec *v, const char *what, size_t n)
{
	/* framed: no word reads as one of the next list */
	char *w = cjc_xasprintf("%s:%zu", what, n);
	cjc_strvec_push(v, w);
	free(w);
}

/* The direct key, and the words it binds (for the journal). */
static void direct_key(struct program_job *s)
{
	struct jit_program *p = s->p;
	cjc_strvec_push(&s->words, "nvrtc-shim");
	cjc_strvec_push(&s->words, p->name);
	push_count(&s->words, "options", (size_t)s->noptions);
	for (int i = 0; i < s->noptions; i++)
		cjc_strvec_push(&s->words, s->options[i]);
	push_count(&s->words, "headers", p->headers.n);
	for (size_t i = 0; i < p->headers.n; i++) {
		char hex[CJC_HEX_LEN + 1];
		cjc_hash_buf_hex(p->headers.v[i], strlen(p->headers.v[i]), hex);
		cjc_strvec_push(&s->words, p->header_names.v[i]);
		cjc_strvec_push(&s->words, hex);
	}
	push_count(&s->words, "names", p->expressions.n);
	cjc_strvec_pushv(&s->words, p->expressions.v, p->expressions.n);
	struct cjc_key_input in = {
		.kind = "nvrtc",
		.nvcc_digest = s->id->digest,
		.host_digest = "nvrtc",
		.args = s->words.v,
		.nargs = s->words.n,
		.cwd = "",
		.as = "", /* NVRTC runs no assembler: no PATH search */
		.env = &s->env,
	};
	memcpy(in.source_sha, s->j.code_sha, CJC_DIGEST_LEN);
	cjc_key_direct(&in, s->direct);
	jit_journal_facts_nvrtc(&s->j, &s->words, s->id->realpath, s->id->version, s->id->digest);
}

/* ---- an entry to and from the outputs ---- */

/* lookup.h's deliver: what NVRTC gave, as nvrtc.json and the outputs hold it. */
static int read_outputs(void *ctx, const struct cjc_entry *e, const struct cjc_manifest_record *rec,
			struct cjc_buf *why)
{
	(void)rec;
	struct program_job *s = ctx;
	struct cjc_nvrtc_outputs *o = &s->p->out;
	struct cjc_buf text = CJC_BUF_INIT;
	int rc = cjc_entry_read(e, NVRTC_JSON, &text, why);
	if (!rc && (text.len > MAX_NVRTC_JSON ||
		    cjc_nvrtc_outputs_parse(text.data, text.len, &s->p->expressions, o)))
		rc = -1, cjc_buf_adds(why, NVRTC_JSON " is not what this program asks for");
	for (int k = 0; !rc && k < CJC_NVRTC_KINDS; k++) {
		char *name = cjc_xasprintf("output.%s", cjc_nvrtc_kind_name[k]);
		/* a kind made empty has no artifact */
		if (o->result[k] == CJC_NVRTC_SUCCESS && cjc_entry_artifact(e, name))
			rc = cjc_entry_read(e, name, &o->code[k], why);
		free(name);
	}
	if (!rc && cjc_entry_artifact(e, "stderr"))
		rc = cjc_entry_read(e, "stderr", &o->log, why);
	cjc_buf_release(&text);
	if (rc)
		cjc_nvrtc_outputs_release(o);
	return rc;
}

/* lookup.h's match: a record whose files are unchanged (deps.c). */
static long match(void *ctx, const struct cjc_manifest *m)
{
	struct program_job *s = ctx;
	return jit_deps_match(s->j.h, m, s->direct, NULL, s->j.source, s->j.code_sha);
}

/* 1: served from the store, or from a remote store and published here; 0: a miss. */
static int lookup(struct program_job *s)
{
	struct cjc_lookup_request q = jit_lookup_request(&s->j, s->direct);
	q.match = match;
	q.deliver = read_outputs;
	q.ctx = s;
	struct cjc_lookup_result r = { 0 };
	if (cjc_lookup_local(&q, &r) != CJC_LOOKUP_HIT &&
	    (q.remotes = s->remotes = jit_remote_open(s->j.h)))
		cjc_lookup_remote(&q, &r);
	int served = jit_lookup_served(&s->j, &r);
	cjc_lookup_result_release(&r);
	return served;
}

/* ---- a miss ---- */

/* The record of what the compile read (jit_deps_record), the source at a
 * path where no file can be, as the JIT library's NVRTC records name it. */
static int record_reads(struct program_job *s, struct cjc_watch *w, struct cjc_buf *why)
{
	if (jit_deps_record(&s->j, strlen(s->p->source), w, &s->rec, why))
		return -1;
	cjc_key_entry(s->direct, &s->rec, NULL, s->rec.entry_key);
	return 0;
}

static json_t *headers_json(const struct jit_program *p)
{
	json_t *a = json_array();
	for (size_t i = 0; i < p->headers.n; i++)
		json_array_append_new(a, json_pack("{s:o, s:o}", "name",
						   cjc_json_bytes(p->header_names.v[i]), "text",
						   cjc_json_bytes(p->headers.v[i])));
	return a;
}

static json_t *options_json(const struct program_job *s)
{
	json_t *extra = json_array();
	for (int i = 0; i < s->noptions; i++)
		json_array_append_new(extra, cjc_json_bytes(s->options[i]));
	return json_pack("{s:s, s:[], s:[], s:[], s:n, s:n, s:b, s:b, s:b, s:b, s:o}", "kind",
			 "nvrtc", "archs", "defines", "include_dirs", "std", "optimize", "debug",
			 false, "line_info", false, "fast_math", false, "rdc", false, "extra",
			 extra);
}

/* The entry's files: source.cu (none for an empty source, as CuPy's probes
 * compile: a store holds no empty file), output.<kind> for each kind made,
 * headers.json. */
static size_t entry_files(const struct program_job *s, struct cjc_publish_file *f, char **names,
			  char **headers_text)
{
	const struct jit_program *p = s->p;
	size_t n = 0;
	if (*p->source)
		f[n++] = (struct cjc_publish_file){ JIT_SOURCE_FILE, p->source, strlen(p->source) };
	for (int k = 0; k < CJC_NVRTC_KINDS; k++)
		if (p->out.result[k] == CJC_NVRTC_SUCCESS && p->out.code[k].len) { /* none: empty */
			names[k] = cjc_xasprintf("output.%s", cjc_nvrtc_kind_name[k]);
			f[n++] = (struct cjc_publish_file){ names[k], p->out.code[k].data,
							    p->out.code[k].len };
		}
	if (p->headers.n) {
		json_t *h = headers_json(p);
		*headers_text = json_dumps(h, JSON_COMPACT);
		json_decref(h);
		f[n++] = (struct cjc_publish_file){ HEADERS_JSON, *headers_text,
						    strlen(*headers_text) };
	}
	return n;
}

static bool publish(struct program_job *s)
{
	struct cjc_jit *h = s->j.h;
	struct jit_program *p = s->p;
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	cjc_strvec_push(&argv, "nvrtc");
	for (int i = 0; i < s->noptions; i++)
		cjc_strvec_push(&argv, s->options[i]);
	cjc_strvec_push(&argv, s->j.source);
	char cwd[PATH_MAX];
	json_t *options = options_json(s);
	json_t *results = cjc_nvrtc_outputs_json(&p->out, &p->expressions);
	char *results_text = json_dumps(results, JSON_COMPACT), *headers_text = NULL;
	char *names[CJC_NVRTC_KINDS] = { 0 };
	struct cjc_publish_file files[CJC_NVRTC_KINDS + 2];
	struct cjc_metadata md = {
		.argv = argv.v,
		.argc = argv.n,
		.cwd = cjc_getpwd(cwd, sizeof cwd) ? cwd : "/",
		.compiler_path = s->id->path,
		.compiler_realpath = s->id->realpath,
		.compiler_version = s->id->version,
		.host_path = "none",
		.host_version = "NVRTC runs no host compiler",
		.options = options,
		.inputs = s->rec.deps,
		.ninputs = s->rec.ndeps,
		.target = "nvrtc",
		.duration_ms = s->duration_ms,
		.jit = s->j.meta,
	};
	struct cjc_publish pub = jit_publish_of(h, s->rec.entry_key, p->name, &md);
	pub.direct_key = s->direct;
	pub.rec = &s->rec;
	pub.artifact = NVRTC_JSON;
	pub.artifact_data = results_text;
	pub.artifact_size = strlen(results_text);
	pub.err = &p->out.log;
	pub.extra = files;
	pub.nextra = entry_files(s, files, names, &headers_text);
	bool won;
	enum cjc_published rc = cjc_publish(&pub, &won);
	if (rc != CJC_PUBLISHED)
		jit_count(&s->j, CJC_STAT_ERRORS, 0);
	if (rc != CJC_PUBLISH_FAILED)
		(void)cjc_remote_publish(s->remotes, s->rec.entry_key, s->direct, &s->rec);
	for (int k = 0; k < CJC_NVRTC_KINDS; k++)
		free(names[k]);
	free(headers_text);
	free(results_text);
	json_decref(results);
	json_decref(options);
	cjc_strvec_clear(&argv);
	return rc != CJC_PUBLISH_FAILED;
}

/* Compiles with NVRTC, watched; publishes what it made when it can be keyed. */
static cjc_nvrtc_result compile_miss(struct program_job *s)
{
	struct cjc_jit *h = s->j.h;
	struct cjc_watch w;
	struct cjc_buf why = CJC_BUF_INIT;
	cjc_remote_hang_up(s->remotes); /* no connection idles through the compile */
	int64_t t0 = cjc_now_ms();
	cjc_watch_begin(&w);
	cjc_nvrtc_result rc = s->n->compile(s->p->real, s->noptions, s->options);
	cjc_watch_end(&w);
	s->call->compiled = true;
	s->call->rc = rc;
	s->duration_ms = cjc_now_ms() - t0;
	if (rc != CJC_NVRTC_SUCCESS) {
		jit_count(&s->j, CJC_STAT_COMPILE_FAILED, 0);
		jit_fail(h, "NVRTC failed (%d)", rc);
		jit_journal_compiled(&s->j, -1, NULL, false, s->duration_ms, NULL);
		cjc_watch_release(&w);
		return rc;
	}
	bool keyed = !record_reads(s, &w, &why);
	bool published = false;
	if (keyed) {
		cjc_nvrtc_outputs_take(&s->n->q, s->p->real, &s->p->expressions, &s->p->out);
		published = !h->cfg.readonly && publish(s);
		cjc_nvrtc_outputs_release(&s->p->out); /* NVRTC answers for its program */
	} else {
		jit_note(h, "%s: miss, not published: %s", s->j.name, why.data);
	}
	jit_count(&s->j, CJC_STAT_MISSES, 0);
	jit_journal_compiled(&s->j, 0, keyed ? &s->rec : NULL, published, s->duration_ms, why.data);
	jit_deps_save(h);
	cjc_watch_release(&w);
	cjc_buf_release(&why);
	return rc;
}

/* ---- the compile ---- */

static void job_release(struct program_job *s)
{
	cjc_remote_close(s->remotes);
	cjc_manifest_record_release(&s->rec);
	cjc_strvec_clear(&s->words);
	free(s->j.source);
	json_decref(s->j.meta);
}

static void job_start(struct program_job *s)
{
	struct jit_program *p = s->p;
	s->req = (struct cjc_jit_request){ .name = p->name,
					   .code = p->source,
					   .options = s->options,
					   .noptions = (size_t)s->noptions };
	s->j = (struct jit_job){ .h = handle,
				 .req = &s->req,
				 .name = p->name,
				 .arch = "",
				 .ext = "nvrtc",
				 .compiler = "nvrtc-shim" };
	s->j.source = cjc_xasprintf("%s/%s", JIT_KEYED_SOURCE_DIR, p->name);
	cjc_hash_buf(p->source, strlen(p->source), s->j.code_sha);
	json_t *exprs = json_array();
	for (size_t i = 0; i < p->expressions.n; i++)
		json_array_append_new(exprs, cjc_json_bytes(p->expressions.v[i]));
	s->j.meta = json_pack("{s:o, s:s, s:b, s:o}", "name", cjc_json_bytes(p->name), "source",
			      JIT_SOURCE_FILE, "shim", true, "name_expressions", exprs);
	if (p->headers.n)
		json_object_set_new(s->j.meta, "headers", json_string(HEADERS_JSON));
}

cjc_nvrtc_result jit_program_compile_uncached(const struct jit_nvrtc *n, cjc_nvrtc_program prog,
					      int noptions, const char *const *options)
{
	cjc_watch_ignore(true); /* its lookups are its own (compile/watch.c) */
	cjc_nvrtc_result rc = n->compile(prog, noptions, options);
	cjc_watch_ignore(false);
	return rc;
}

/* NVRTC's compile, unwatched, within a cached one. */
static cjc_nvrtc_result uncached(struct program_call *c)
{
	c->rc = jit_program_compile_uncached(c->n, c->p->real, c->noptions, c->options);
	c->compiled = true;
	return c->rc;
}

static cjc_nvrtc_result compile(struct program_call *c)
{
	const struct jit_nvrtc *n = c->n;
	struct jit_program *p = c->p;
	int noptions = c->noptions;
	const char *const *options = c->options;
	cjc_nvrtc_outputs_release(&p->out);
	p->served = false;
	pthread_once(&handle_once, open_handle);
	if (!handle || noptions < 0 || (noptions && !options))
		return uncached(c);
	struct program_job s = {
		.n = n, .p = p, .noptions = noptions, .options = options, .call = c
	};
	job_start(&s);
	cjc_env_read(&s.env);
	const char *reason = unkeyable_request(&s);
	cjc_nvrtc_result rc;
	if (reason) {
		jit_note(handle, "%s: not cached: %s", p->name, reason);
		if (jit_store_ready(handle))
			jit_count(&s.j, CJC_STAT_UNCACHEABLE, 0);
		jit_journal_uncacheable(&s.j, reason);
		rc = uncached(c);
	} else if (!jit_cacheable(&s.j) || !(s.id = identity_of(handle, n))) {
		rc = uncached(c);
	} else {
		direct_key(&s);
		if (lookup(&s)) {
			p->served = true;
			rc = CJC_NVRTC_SUCCESS;
		} else {
			rc = compile_miss(&s);
		}
	}
	job_release(&s);
	return rc;
}

static int compile_call(void *ctx)
{
	struct program_call *c = ctx;
	c->rc = compile(c);
	return 0;
}

cjc_nvrtc_result jit_program_compile(const struct jit_nvrtc *n, struct jit_program *p, int noptions,
				     const char *const *options)
{
	struct program_call c = { n, p, noptions, options, false, CJC_NVRTC_SUCCESS };
	if (cjc_oom_run(compile_call, &c) != CJC_OOM_RAN_OUT)
		return c.rc;
	p->served = false; /* NVRTC answers for its program */
	return c.compiled ? c.rc : CJC_NVRTC_OUT_OF_MEMORY;
}
