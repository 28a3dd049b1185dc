#include "why.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/hash.h"
#include "base/util.h"
#include "keys/manifest.h"
#include "keys/metadata.h"
#include "keys/place.h"
#include "output.h"
#include "store/identity.h"
#include "store/journal.h"
#include "store/store.h"

/* A string field, or "?" when a record lacks it (the journal is read, not trusted). */
static const char *field(json_t *o, const char *name)
{
	const char *v = json_string_value(json_object_get(o, name));
	return v ? v : "?";
}

/* The resolved path, or the path made absolute when it cannot be resolved. */
static json_t *resolved(const char *path, const char *cwd)
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
	json_object_set_new(r, "source", resolved(source, cwd));
	json_object_set_new(r, "output", resolved(output, cwd));
	json_object_set_new(r, "target", target ? cjc_json_bytes(target) : json_null());
	json_object_set_new(r, "cwd", cwd ? cjc_json_bytes(cwd) : json_null());
	return r;
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
	diff_compiler(json_object_get(old, "nvcc"), json_object_get(new, "nvcc"), "nvcc", changes);
	diff_compiler(json_object_get(old, "host"), json_object_get(new, "host"), "host compiler", changes);
	diff_place(old, new, changes);
}

/*
 * The nearest earlier entry: among the records for the same source and
 * target that name an entry in the store, the one whose facts differ least
 * from this compile's, the latest of those.
 */
struct earlier {
	json_t *source;
	json_t *target;
	json_t *facts;
	json_t *found;
	json_t *found_changes; /* how found's facts differ from this compile's */
};

static int match_earlier(json_t *r, void *ctx)
{
	struct earlier *e = ctx;
	const char *result = json_string_value(json_object_get(r, "result"));
	bool in_store = result && (!strcmp(result, "hit") ||
				   (!strcmp(result, "miss") && json_is_true(json_object_get(r, "published"))));
	if (!in_store || !json_is_string(json_object_get(r, "entry")) ||
	    !json_equal(json_object_get(r, "source"), e->source) ||
	    !json_equal(json_object_get(r, "target"), e->target))
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
static const char *journal_needle(const char *source)
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
	};
	json_t *changes = json_array();
	if (json_is_string(e.source))
		(void)cjc_journal_foreach(s, journal_needle(json_string_value(e.source)), match_earlier,
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

/* A path as the user sees it: relative to the compile's directory when under it. */
static const char *shown(const char *path, const char *cwd)
{
	size_t n = cwd ? strlen(cwd) : 0;
	if (n && !strncmp(path, cwd, n) && path[n] == '/')
		return path + n + 1;
	return path;
}

static void describe_compiler(struct cjc_buf *b, json_t *c)
{
	json_t *old = json_object_get(c, "old"), *new = json_object_get(c, "new");
	const char *op = json_string_value(json_object_get(old, "path"));
	const char *np = json_string_value(json_object_get(new, "path"));
	const char *ov = json_string_value(json_object_get(old, "version"));
	const char *nv = json_string_value(json_object_get(new, "version"));
	cjc_buf_addf(b, "%s changed", field(c, "which"));
	if (op && np && strcmp(op, np))
		cjc_buf_addf(b, " from %s to %s", op, np);
	else if (ov && nv && strcmp(ov, nv))
		cjc_buf_addf(b, " (version '%s', was '%s')", nv, ov);
	else
		cjc_buf_adds(b, " (its binaries differ)");
}

static void describe_env(struct cjc_buf *b, json_t *c)
{
	const char *name = field(c, "name");
	json_t *was = json_object_get(c, "old"), *now = json_object_get(c, "new");
	if (json_object_get(was, "sha256") || json_object_get(now, "sha256")) {
		/* recorded by hash only: it may hold a secret */
		cjc_buf_addf(b, "%s %s", name, json_is_null(now) ? "unset" : json_is_null(was) ? "set" : "changed");
		return;
	}
	const char *old = json_string_value(was);
	const char *new = json_string_value(now);
	if (!old)
		cjc_buf_addf(b, "%s set to '%s'", name, new ? new : "?");
	else if (!new)
		cjc_buf_addf(b, "%s unset (was '%s')", name, old);
	else
		cjc_buf_addf(b, "%s changed from '%s' to '%s'", name, old, new);
}

static void describe_base_dir(struct cjc_buf *b, json_t *c)
{
	const char *old = json_string_value(json_object_get(c, "old"));
	const char *new = json_string_value(json_object_get(c, "new"));
	if (!old)
		cjc_buf_addf(b, "base_dir set to %s", new ? new : "?");
	else if (!new)
		cjc_buf_addf(b, "base_dir unset (was %s)", old);
	else
		cjc_buf_addf(b, "base_dir changed from %s to %s", old, new);
}

/* "-DFOO=1 added"; the diagnostics settings in the key (diagnostics.h) by name. */
static void describe_argument(struct cjc_buf *b, const char *arg, bool added)
{
	if (cjc_starts_with(arg, "cjc:"))
		cjc_buf_addf(b, "%s turned %s", arg + 4, added ? "on" : "off");
	else
		cjc_buf_addf(b, "%s %s", arg, added ? "added" : "removed");
}

/* One change in plain words. */
static void describe(struct cjc_buf *b, json_t *c, const char *cwd)
{
	const char *kind = field(c, "kind"), *path = field(c, "path"), *arg = field(c, "argument");
	if (!strcmp(kind, "dependency"))
		cjc_buf_addf(b, "%s changed", shown(path, cwd));
	else if (!strcmp(kind, "dependency_added"))
		cjc_buf_addf(b, "%s is now read", shown(path, cwd));
	else if (!strcmp(kind, "dependency_removed"))
		cjc_buf_addf(b, "%s is no longer read", shown(path, cwd));
	else if (!strcmp(kind, "argument_added") || !strcmp(kind, "argument_removed"))
		describe_argument(b, arg, !strcmp(kind, "argument_added"));
	else if (!strcmp(kind, "environment"))
		describe_env(b, c);
	else if (!strcmp(kind, "compiler"))
		describe_compiler(b, c);
	else if (!strcmp(kind, "working_directory"))
		cjc_buf_addf(b, "working directory changed from %s (%s records it in the output)",
			     field(c, "old"), field(c, "recorded_by"));
	else if (!strcmp(kind, "resolution"))
		cjc_buf_addf(b, "%s now resolves to %s (was %s)", arg, field(c, "new"), field(c, "old"));
	else if (!strcmp(kind, "base_dir"))
		describe_base_dir(b, c);
}

#define SUMMARY_CHANGES 6

static void miss_summary(struct cjc_buf *b, json_t *r)
{
	json_t *changes = json_object_get(r, "changes");
	const char *cwd = json_string_value(json_object_get(r, "cwd"));
	const char *note = json_string_value(json_object_get(r, "note"));
	const char *reason = json_string_value(json_object_get(r, "reason"));
	size_t n = json_array_size(changes);
	for (size_t i = 0; i < n && i < SUMMARY_CHANGES; i++) {
		cjc_buf_adds(b, i ? "; " : "");
		describe(b, json_array_get(changes, i), cwd);
	}
	if (n > SUMMARY_CHANGES)
		cjc_buf_addf(b, "; and %zu more", n - SUMMARY_CHANGES);
	if (n)
		return;
	if (json_is_null(json_object_get(r, "compared_with")))
		cjc_buf_addf(b, "no earlier compile of %s for this target is recorded",
			     shown(field(r, "source"), cwd));
	else if (note)
		cjc_buf_adds(b, note);
	else
		cjc_buf_adds(b, reason ? reason : "nothing recorded differs");
}

/* The plain words of a record, derived from its fields when it is shown. */
static void set_summary(json_t *r)
{
	struct cjc_buf b = CJC_BUF_INIT;
	const char *result = field(r, "result");
	const char *reason = json_string_value(json_object_get(r, "reason"));
	cjc_buf_addf(&b, "%s: ", result);
	if (!strcmp(result, "hit"))
		cjc_buf_addf(&b, "served from entry %.12s", field(r, "entry"));
	else if (!strcmp(result, "miss"))
		miss_summary(&b, r);
	else if (!strcmp(result, "failed"))
		cjc_buf_adds(&b, "nvcc failed; nothing was cached");
	else
		cjc_buf_adds(&b, reason ? reason : "?");
	json_object_set_new(r, "summary", cjc_json_bytes(b.data));
	cjc_buf_release(&b);
}

/* The last record of an output or source. */
struct lookup {
	json_t *path;
	json_t *found;
};

static int match_path(json_t *r, void *ctx)
{
	struct lookup *l = ctx;
	if (json_equal(json_object_get(r, "output"), l->path) ||
	    json_equal(json_object_get(r, "source"), l->path)) {
		json_decref(l->found);
		l->found = json_incref(r);
	}
	return 0;
}

static void print_details(json_t *r)
{
	const char *cwd = json_string_value(json_object_get(r, "cwd"));
	json_t *changes = json_object_get(r, "changes"), *c;
	size_t i;
	json_array_foreach(changes, i, c) {
		struct cjc_buf b = CJC_BUF_INIT;
		describe(&b, c, cwd);
		const char *old = json_string_value(json_object_get(c, "old"));
		const char *new = json_string_value(json_object_get(c, "new"));
		if (json_object_get(c, "path") && !json_object_get(c, "argument"))
			cjc_buf_addf(&b, ": sha256 %.16s -> %.16s", old ? old : "(none)", new ? new : "(none)");
		printf("  %s\n", b.data);
		cjc_buf_release(&b);
	}
}

static void print_record(json_t *r)
{
	const char *entry = json_string_value(json_object_get(r, "entry"));
	const char *target = json_string_value(json_object_get(r, "target"));
	const char *with = json_string_value(json_object_get(r, "compared_with"));
	json_t *saved = json_object_get(r, "saved_ms"), *took = json_object_get(r, "duration_ms");
	char *summary = cjc_json_shown(json_object_get(r, "summary"), "?");
	char *output = cjc_json_shown(json_object_get(r, "output"), "?");
	char *label = target ? cjc_printable(target) : NULL;
	printf("%s\n", summary);
	printf("  compiled %s at %s%s%s\n", output, field(r, "time"), label ? " for target " : "",
	       label ? label : "");
	free(summary);
	free(output);
	free(label);
	if (entry)
		printf("  entry %s\n", entry);
	if (json_object_get(r, "not_published"))
		printf("  not published: %s\n", field(r, "not_published"));
	if (saved)
		printf("  saved %.3f s of nvcc\n", (double)json_integer_value(saved) / 1000.0);
	if (took)
		printf("  nvcc ran %.3f s\n", (double)json_integer_value(took) / 1000.0);
	if (with)
		printf("  compared with entry %s\n", with);
	if (json_is_string(json_object_get(json_object_get(r, "facts"), "rule")))
		printf("  working directory: %s\n", field(json_object_get(r, "facts"), "rule"));
	print_details(r);
}

int cjc_why_print(const struct cjc_store *s, const char *path, bool json)
{
	char cwd[PATH_MAX];
	struct lookup l = { .path = resolved(path, getcwd(cwd, sizeof cwd)) };
	size_t skipped = 0;
	if (cjc_journal_foreach(s, journal_needle(json_string_value(l.path)), match_path, &l, &skipped))
		fprintf(stderr, "cjc why: cannot read the journal: %s\n", strerror(errno));
	if (skipped)
		fprintf(stderr, "cjc why: %zu damaged journal lines skipped\n", skipped);
	json_decref(l.path);
	if (!l.found) {
		fprintf(stderr, "cjc why: no compile of %s is recorded in %s\n", path, s->dir);
		return 1;
	}
	set_summary(l.found);
	if (json) {
		cjc_print_json(json_incref(l.found));
	} else {
		print_record(l.found);
	}
	json_decref(l.found);
	return 0;
}
