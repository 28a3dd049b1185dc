/*
 * The cjc journal's records of JIT compiles (jit_internal.h, "journal.c"):
 * the records cjc's launcher writes (compile/why.h), with a "jit" member
 * naming the library's prefix, the request's name and the compiler, the
 * source keyed as CJC_JIT_SOURCE_DIR/<name>, no output, and target "jit".
 * So `cjc why --jit NAME` says whether the request's last lookup hit, and
 * for a miss what changed since the nearest earlier entry of that library:
 * the code (the source's hash), an option, the request's extra_signature
 * or hook, nvcc or NVRTC.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/why.h"
#include "jit_internal.h"
#include "store/journal.h"

void jit_journal_facts_nvcc(struct jit_job *j, const struct cjc_compile *c, const char *cwd,
			    const struct cjc_identity *nvcc, const struct cjc_identity *host,
			    const struct cjc_strvec *env)
{
	j->why = (struct jit_why){ .set = true, .c = c, .cwd = cwd, .nvcc = nvcc, .host = host,
				   .env = env };
}

void jit_journal_facts_nvrtc(struct jit_job *j, const struct cjc_strvec *options,
			     const char *realpath, const char *version, const char *digest)
{
	j->why = (struct jit_why){ .set = true, .options = options };
	j->why.library.path = j->why.library.realpath = (char *)realpath;
	j->why.library.version = (char *)version;
	snprintf(j->why.library.digest, sizeof j->why.library.digest, "%s", digest);
}

static const char *compiler_of(const struct jit_job *j)
{
	if (j->compiler)
		return j->compiler;
	return j->h->set.compiler == JIT_NVRTC ? "nvrtc" : "nvcc";
}

static json_t *record_of(const struct jit_job *j, const char *result, const char *reason)
{
	json_t *r = cjc_why_record(result, j->why.cwd, j->source, NULL, "jit");
	cjc_why_set_jit(r, j->h->prefix, j->name, compiler_of(j));
	if (reason)
		json_object_set_new(r, "reason", cjc_json_bytes(reason));
	return r;
}

/* What went into the key, the request's own words (jit_key_request) among the arguments. */
static json_t *facts_of(const struct jit_job *j)
{
	const struct jit_why *w = &j->why;
	struct cjc_strvec words = CJC_STRVEC_INIT;
	json_t *facts;
	if (w->c)
		facts = cjc_why_facts(w->c, w->cwd, w->nvcc, w->host, w->env->v, w->env->n);
	else
		facts = cjc_why_facts_nvrtc(w->options->v, w->options->n, &w->library);
	jit_key_request(j, &words);
	json_t *args = json_object_get(facts, "args");
	for (size_t i = 0; i < words.n; i++)
		json_array_append_new(args, cjc_json_bytes(words.v[i]));
	cjc_strvec_clear(&words);
	return facts;
}

/* Written where cjc would write it: not when the store is unusable or disable is set. */
static void write_record(const struct jit_job *j, json_t *r)
{
	if (jit_store_open(j->h) && !j->h->cfg.disable && cjc_journal_append(&j->h->store, r))
		jit_note(j->h, "cannot write the journal: %s", strerror(errno));
	json_decref(r);
}

void jit_journal_uncacheable(struct jit_job *j, const char *reason)
{
	if (reason)
		write_record(j, record_of(j, "uncacheable", reason));
}

void jit_journal_hit(struct jit_job *j, const char *key, int64_t saved_ms)
{
	if (!j->why.set)
		return;
	json_t *r = record_of(j, "hit", NULL);
	json_object_set_new(r, "entry", json_string(key));
	json_object_set_new(r, "saved_ms", json_integer(saved_ms));
	json_object_set_new(r, "facts", facts_of(j));
	write_record(j, r);
}

/* The first line of the call's error, for the record. */
static char *error_line(const struct jit_job *j)
{
	const char *e = cjc_jit_error(j->h);
	return cjc_xstrndup(e, strcspn(e, "\n"));
}

void jit_journal_compiled(struct jit_job *j, int rc, const struct cjc_manifest_record *rec,
			  bool published, int64_t duration_ms, const char *unstable)
{
	if (!j->why.set)
		return;
	if (rc) {
		char *reason = error_line(j);
		write_record(j, record_of(j, "failed", reason));
		free(reason);
		return;
	}
	bool stable = rec && rec->entry_key[0];
	json_t *r = record_of(j, "miss", NULL);
	json_object_set_new(r, "entry", stable ? json_string(rec->entry_key) : json_null());
	json_object_set_new(r, "published", json_boolean(published));
	if (!published)
		json_object_set_new(r, "not_published", cjc_json_bytes(
			!stable ? (unstable && *unstable ? unstable : "?")
			: j->h->cfg.readonly ? "readonly is set" : "the store refused it (see the log)"));
	json_object_set_new(r, "duration_ms", json_integer(duration_ms));
	json_object_set_new(r, "facts", facts_of(j));
	if (jit_store_open(j->h))
		cjc_why_miss(&j->h->store, r, rec ? rec->deps : NULL, rec ? rec->ndeps : 0);
	write_record(j, r);
}
