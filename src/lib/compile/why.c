/*
 * The journal's records of compiles (why.h): made here, for cjc's launcher
 * and the JIT library alike; `cjc why` (the tool's why.c) reads and words them.
 */
#include "compile/why.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/hash.h"
#include "base/util.h"
#include "keys/metadata.h"
#include "keys/place.h"
#include "store/journal.h"

/* A string field, or "?" when a record lacks it (the journal is read, not trusted). */
static const char *field(json_t *o, const char *name)
{
	const char *v = json_string_value(json_object_get(o, name));
	return v ? v : "?";
}

json_t *cjc_why_path(const char *path, const char *cwd)
{
	char real[PATH_MAX];
	if (!path)
		return json_null();
	if (realpath(path, real))
		return cjc_json_bytes(real);
	if (path[0] == '/' || !cwd)
		return cjc_json_bytes(path);
	char *abs = cjc_path_join(cwd, path);
	json_t *s = cjc_json_bytes(abs);
	free(abs);
	return s;
}

json_t *cjc_why_record(const char *result, const char *cwd, const char *source,
		       const char *output, const char *target)
{
	char now[32];
	cjc_rfc3339_now(now);
	json_t *r = json_object();
	json_object_set_new(r, "time", json_string(now));
	json_object_set_new(r, "result", json_string(result));
	json_object_set_new(r, "source", cjc_why_path(source, cwd));
	json_object_set_new(r, "output", cjc_why_path(output, cwd));
	json_object_set_new(r, "target", target ? cjc_json_bytes(target) : json_null());
	json_object_set_new(r, "cwd", cwd ? cjc_json_bytes(cwd) : json_null());
	return r;
}

void cjc_why_set_jit(json_t *record, const char *prefix, const char *name, const char *compiler)
{
	json_object_set_new(record, "jit", json_pack("{s:o, s:o, s:s}", "prefix",
						      prefix ? cjc_json_bytes(prefix) : json_null(),
						      "name", cjc_json_bytes(name), "compiler", compiler));
}

static json_t *compiler_facts(const struct cjc_identity *id)
{
	const char *v = id->version ? id->version : "";
	size_t n = strlen(v);
	while (n && v[n - 1] == '\n')
		n--;
	const char *last = v + n;
	while (last > v && last[-1] != '\n')
		last--;
	char *line = cjc_xstrndup(last, (size_t)(v + n - last));
	json_t *facts = json_pack("{s:o, s:o, s:s}", "path",
				  cjc_json_bytes(id->realpath ? id->realpath : id->path), "version",
				  cjc_json_bytes(line), "digest", id->digest);
	free(line);
	return facts;
}

json_t *cjc_why_facts(const struct cjc_compile *c, const char *cwd,
		      const struct cjc_identity *nvcc, const struct cjc_identity *host,
		      char *const *env, size_t nenv)
{
	json_t *args = json_array(), *vars = cjc_environment_json(env, nenv);
	for (size_t i = 0; i < c->key_units.n; i++)
		json_array_append_new(args, cjc_json_bytes(c->key_units.v[i]));
	const char *base = c->place.base_dir;
	char *rule = cjc_place_rule(&c->place);
	json_t *facts = json_pack("{s:o, s:o, s:o, s:o, s:o?, s:s?, s:O, s:o?, s:o}", "args", args,
				  "env", vars, "nvcc", compiler_facts(nvcc), "host",
				  compiler_facts(host), "cwd", c->place.keys_cwd ? cjc_json_bytes(cwd) : NULL,
				  "cwd_keyed_by", c->place.keys_cwd, "resolved", c->resolved,
				  "base_dir", base ? cjc_json_bytes(*base ? base : "/") : NULL, "rule",
				  cjc_json_bytes(rule));
	free(rule);
	return facts;
}

/* NVRTC runs no host compiler and reads no file but the code: its key holds
 * no environment, and no working directory. */
json_t *cjc_why_facts_nvrtc(char *const *args, size_t nargs, const struct cjc_identity *library)
{
	json_t *words = json_array();
	for (size_t i = 0; i < nargs; i++)
		json_array_append_new(words, cjc_json_bytes(args[i]));
	return json_pack("{s:o, s:{}, s:s, s:o, s:{s:s, s:s, s:s}, s:{}}", "args", words, "env",
			 "compiler", "NVRTC", "nvcc", compiler_facts(library), "host", "path", "none",
			 "version", "", "digest", "none", "resolved");
}

static void add_change(json_t *changes, const char *kind, json_t *details)
{
	json_object_set_new(details, "kind", json_string(kind));
	json_array_append_new(changes, details);
}

/* Arguments in one list that the other lacks (as many times as they are missing). */
static void diff_args(json_t *from, json_t *to, const char *kind, json_t *changes)
{
	json_t *left = json_deep_copy(to);
	size_t i;
	json_t *a;
	json_array_foreach(from, i, a) {
		size_t k;
		json_t *b;
		bool found = false;
		json_array_foreach(left, k, b) {
			if (json_equal(a, b)) {
				json_array_remove(left, k);
				found = true;
				break;
			}
		}
		if (!found)
			add_change(changes, kind, json_pack("{s:O}", "argument", a));
	}
	json_decref(left);
}

static void diff_env(json_t *old, json_t *new, json_t *changes)
{
	const char *name;
	json_t *v;
	json_object_foreach(new, name, v) {
		json_t *was = json_object_get(old, name);
		if (!json_equal(was, v))
			add_change(changes, "environment", json_pack("{s:s, s:O, s:O}", "name", name,
								      "old", was ? was : json_null(), "new", v));
	}
	json_object_foreach(old, name, v)
		if (!json_object_get(new, name))
			add_change(changes, "environment", json_pack("{s:s, s:O, s:n}", "name", name,
								      "old", v, "new"));
}

static void diff_compiler(json_t *old, json_t *new, const char *which, json_t *changes)
{
	if (!json_equal(json_object_get(old, "digest"), json_object_get(new, "digest")))
		add_change(changes, "compiler", json_pack("{s:s, s:O, s:O}", "which", which, "old",
							   old, "new", new));
}

/* Relative paths that resolve elsewhere now (place.h). */
static void diff_resolved(json_t *old, json_t *new, json_t *changes)
{
	const char *path;
	json_t *to;
	json_object_foreach(new, path, to) {
		json_t *was = json_object_get(old, path);
		if (was && !json_equal(was, to))
			add_change(changes, "resolution", json_pack("{s:s, s:O, s:O}", "argument", path,
								     "old", was, "new", to));
	}
}

/* Where the compile happened, as far as the key holds it. */
static void diff_place(json_t *old, json_t *new, json_t *changes)
{
	json_t *was = json_object_get(old, "cwd"), *now = json_object_get(new, "cwd");
	json_t *ob = json_object_get(old, "base_dir"), *nb = json_object_get(new, "base_dir");
	if (!json_equal(ob ? ob : json_null(), nb ? nb : json_null()))
		add_change(changes, "base_dir", json_pack("{s:O, s:O}", "old", ob ? ob : json_null(),
							   "new", nb ? nb : json_null()));
	diff_resolved(json_object_get(old, "resolved"), json_object_get(new, "resolved"), changes);
	if (json_is_string(was) && json_is_string(now) && !json_equal(was, now))
		add_change(changes, "working_directory", json_pack("{s:O, s:O, s:O}", "old", was,
			"new", now, "recorded_by", json_object_get(new, "cwd_keyed_by")));
}

static void diff_facts(json_t *old, json_t *new, json_t *changes)
{
	diff_args(json_object_get(new, "args"), json_object_get(old, "args"), "argument_added", changes);
	diff_args(json_object_get(old, "args"), json_object_get(new, "args"), "argument_removed", changes);
	diff_env(json_object_get(old, "env"), json_object_get(new, "env"), changes);
	const char *compiler = json_string_value(json_object_get(new, "compiler"));
	diff_compiler(json_object_get(old, "nvcc"), json_object_get(new, "nvcc"),
		      compiler ? compiler : "nvcc", changes);
	diff_compiler(json_object_get(old, "host"), json_object_get(new, "host"), "host compiler", changes);
	diff_place(old, new, changes);
}

/*
 * The nearest earlier entry: among the records for the same source and
 * target (and JIT library prefix) that name an entry in the store, the one
 * whose facts differ least from this compile's, the latest of those.
 */
struct earlier {
	json_t *source;
	json_t *target;
	json_t *prefix; /* a JIT compile's library prefix (null for none), or NULL */
	json_t *facts;
	json_t *found;
	json_t *found_changes; /* how found's facts differ from this compile's */
};

/* The library prefix of a JIT compile's record; NULL for cjc's. */
static json_t *jit_prefix(json_t *record)
{
	json_t *jit = json_object_get(record, "jit");
	return jit ? json_object_get(jit, "prefix") : NULL;
}

static bool same_or_both_absent(json_t *x, json_t *y)
{
	return x == y || (x && y && json_equal(x, y));
}

static int match_earlier(json_t *r, void *ctx)
{
	struct earlier *e = ctx;
	const char *result = json_string_value(json_object_get(r, "result"));
	bool in_store = result && (!strcmp(result, "hit") ||
				   (!strcmp(result, "miss") && json_is_true(json_object_get(r, "published"))));
	if (!in_store || !json_is_string(json_object_get(r, "entry")) ||
	    !json_equal(json_object_get(r, "source"), e->source) ||
	    !json_equal(json_object_get(r, "target"), e->target) ||
	    !same_or_both_absent(jit_prefix(r), e->prefix))
		return 0;
	json_t *changes = json_array();
	diff_facts(json_object_get(r, "facts"), e->facts, changes);
	if (!e->found || json_array_size(changes) <= json_array_size(e->found_changes)) {
		json_decref(e->found);
		json_decref(e->found_changes);
		e->found = json_incref(r);
		e->found_changes = json_incref(changes);
	}
	json_decref(changes);
	return 0;
}

/* Only lines that name the source can be its records (paths are not escaped
 * in the journal unless they hold quotes, backslashes or control bytes). */
const char *cjc_why_needle(const char *source)
{
	if (!source) /* not UTF-8: the journal holds it as {"bytes": hex} */
		return NULL;
	for (const char *p = source; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			return NULL;
	return source;
}

/* Dependencies: the earlier entry's recorded inputs against this compile's. */
static void diff_deps(json_t *inputs, const struct cjc_dep *deps, size_t ndeps, json_t *changes)
{
	json_t *old = json_object();
	size_t i;
	json_t *in;
	json_array_foreach(inputs, i, in) {
		const char *path = json_string_value(json_object_get(in, "path"));
		if (path)
			json_object_set(old, path, json_object_get(in, "sha256"));
	}
	for (i = 0; i < ndeps; i++) {
		char hex[CJC_HEX_LEN + 1];
		cjc_hex(deps[i].sha, CJC_DIGEST_LEN, hex);
		json_t *was = json_object_get(old, deps[i].path);
		if (!was)
			add_change(changes, "dependency_added", json_pack("{s:s, s:s}", "path",
									   deps[i].path, "new", hex));
		else if (strcmp(json_string_value(was) ? json_string_value(was) : "", hex))
			add_change(changes, "dependency", json_pack("{s:s, s:O, s:s}", "path",
								     deps[i].path, "old", was, "new", hex));
		json_object_del(old, deps[i].path);
	}
	const char *path;
	json_t *sha;
	json_object_foreach(old, path, sha)
		add_change(changes, "dependency_removed", json_pack("{s:s, s:O}", "path", path, "old", sha));
	json_decref(old);
}

/* The earlier entry's recorded inputs, or NULL when it is gone or damaged. */
static json_t *entry_inputs(const struct cjc_store *s, const char *key)
{
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	json_t *inputs = NULL;
	if (cjc_is_hex64(key) && cjc_store_read_entry(s, key, &e, &why) == CJC_ENTRY_FOUND) {
		inputs = json_incref(json_object_get(e.meta, "inputs"));
		cjc_entry_release(&e);
	}
	cjc_buf_release(&why);
	return inputs;
}

/* A change of base_dir rewrites paths: it explains the path changes after it. */
static void base_dir_first(json_t *changes)
{
	size_t i;
	json_t *c;
	json_array_foreach(changes, i, c) {
		if (i && !strcmp(field(c, "kind"), "base_dir")) {
			json_array_insert(changes, 0, c);
			json_array_remove(changes, i + 1);
			return;
		}
	}
}

void cjc_why_miss(const struct cjc_store *s, json_t *record, const struct cjc_dep *deps,
		  size_t ndeps)
{
	struct earlier e = {
		.source = json_object_get(record, "source"),
		.target = json_object_get(record, "target"),
		.facts = json_object_get(record, "facts"),
		.prefix = jit_prefix(record),
	};
	json_t *changes = json_array();
	if (json_is_string(e.source))
		(void)cjc_journal_foreach(s, cjc_why_needle(json_string_value(e.source)), match_earlier,
					  &e, NULL);
	const char *key = e.found ? json_string_value(json_object_get(e.found, "entry")) : NULL;
	json_object_set_new(record, "compared_with", key ? json_string(key) : json_null());
	if (e.found) {
		json_t *inputs = entry_inputs(s, key);
		if (inputs)
			diff_deps(inputs, deps, ndeps, changes);
		else
			json_object_set_new(record, "note", json_sprintf(
				"entry %.12s is no longer in the store: dependencies not compared", key));
		json_decref(inputs);
		json_array_extend(changes, e.found_changes);
		base_dir_first(changes);
	}
	if (key && !json_array_size(changes) && json_equal(json_object_get(record, "entry"),
							    json_object_get(e.found, "entry")) &&
	    !cjc_starts_with(field(record, "reason"), "entry "))
		json_object_set_new(record, "note", json_sprintf(
			"entry %.12s was made before but the store no longer had it (cleaned or evicted)", key));
	json_object_set_new(record, "changes", changes);
	json_decref(e.found);
	json_decref(e.found_changes);
}

json_t *cjc_why_paths(const char *root, const char *keyed, const char *exact)
{
	json_t *o = json_object();
	json_object_set_new(o, "root", root ? cjc_json_bytes(root) : json_null());
	json_object_set_new(o, "keyed", cjc_json_bytes(keyed));
	json_object_set_new(o, "exact", exact ? cjc_json_bytes(exact) : json_null());
	return o;
}
