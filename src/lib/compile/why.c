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
	json_t *facts = json_pack("{s:o, s:o, s:o, s:o, s:o?, s:s?, s:O, s:o?, s:o, s:b}", "args",
				  args, "env", vars, "nvcc", compiler_facts(nvcc), "host",
				  compiler_facts(host), "cwd",
				  c->place.keys_cwd ? cjc_json_bytes(cwd) : NULL, "cwd_keyed_by",
				  c->place.keys_cwd, "resolved", c->resolved, "base_dir",
				  base ? cjc_json_bytes(*base ? base : "/") : NULL, "rule",
				  cjc_json_bytes(rule), "records_dirs", c->place.records_dirs);
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
	bool elsewhere;        /* also look for the same source in another directory */
	json_t *near;          /* the nearest such record, when found is NULL */
	json_t *near_changes;  /* how its facts differ, its directory taken for this one's */
	size_t near_tail;      /* how many trailing path components it shares */
	size_t need_tail;      /* how many it must share: the source's path under its root */
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

/*
 * Another directory's compile of the same source (a second checkout, a
 * random build directory): the record whose source shares the most trailing
 * path components with this one (at least its path under the deepest
 * directory that holds it and the working directory, as place.h's root is
 * found, so that src/a/k.cu is not taken for src/b/k.cu), then the one whose
 * facts differ least, the latest of those.  The journal bounds the search
 * (journal.h: about twice CJC_JOURNAL_MAX_BYTES a file, the latest few
 * thousand compiles); the store's entries are not scanned.
 */

/* How many trailing components the two paths share; *old_dir and *new_dir
 * (the caller frees them) get what precedes those, "" for the root. */
static size_t shared_tail(const char *old, const char *new, char **old_dir, char **new_dir)
{
	size_t i = strlen(old), k = strlen(new), n = 0;
	while (i && k && old[i - 1] == new[k - 1])
		i--, k--;
	size_t j = i;
	while (old[j] && old[j] != '/')
		j++;
	if (!old[j] || !old[j + 1])
		return 0;
	for (const char *p = old + j; *p; p++)
		n += *p == '/';
	*old_dir = cjc_xstrndup(old, j);
	*new_dir = cjc_xstrndup(new, k + (j - i));
	return n;
}

/* s with each path that starts with the directory from moved under to. */
static json_t *moved(json_t *v, const char *from, const char *to)
{
	const char *s = json_string_value(v), *p;
	size_t n = strlen(from);
	if (!s || !n)
		return json_incref(v);
	struct cjc_buf b = CJC_BUF_INIT;
	while ((p = strstr(s, from))) {
		bool whole = p[n] == '/' || !p[n];
		cjc_buf_add(&b, s, (size_t)(p - s));
		cjc_buf_adds(&b, whole ? to : from);
		s = p + n;
	}
	cjc_buf_adds(&b, s);
	json_t *out = cjc_json_bytes(b.data);
	cjc_buf_release(&b);
	return out;
}

/* An earlier record's facts as they would read in this directory. */
static json_t *moved_facts(json_t *facts, const char *from, const char *to)
{
	json_t *copy = json_deep_copy(facts), *args = json_object_get(copy, "args");
	json_t *resolved = json_object_get(copy, "resolved"), *v;
	const char *name;
	size_t i;
	json_array_foreach(args, i, v)
		json_array_set_new(args, i, moved(v, from, to));
	json_object_foreach(resolved, name, v)
		json_object_set_new(resolved, name, moved(v, from, to));
	if (json_is_string(json_object_get(copy, "cwd")))
		json_object_set_new(copy, "cwd", moved(json_object_get(copy, "cwd"), from, to));
	return copy;
}

static void match_elsewhere(json_t *r, struct earlier *e)
{
	const char *old = json_string_value(json_object_get(r, "source"));
	char *old_dir = NULL, *new_dir = NULL;
	size_t tail = old ? shared_tail(old, json_string_value(e->source), &old_dir, &new_dir) : 0;
	if (!tail || tail < e->need_tail || tail < e->near_tail)
		goto out;
	json_t *changes = json_array();
	json_t *facts = moved_facts(json_object_get(r, "facts"), old_dir, new_dir);
	diff_facts(facts, e->facts, changes);
	json_decref(facts);
	if (!e->near || tail > e->near_tail ||
	    json_array_size(changes) <= json_array_size(e->near_changes)) {
		json_decref(e->near);
		json_decref(e->near_changes);
		e->near = json_incref(r);
		e->near_changes = json_incref(changes);
		e->near_tail = tail;
	}
	json_decref(changes);
out:
	free(old_dir);
	free(new_dir);
}

static int match_earlier(json_t *r, void *ctx)
{
	struct earlier *e = ctx;
	const char *result = json_string_value(json_object_get(r, "result"));
	bool in_store = result && (!strcmp(result, "hit") ||
				   (!strcmp(result, "miss") && json_is_true(json_object_get(r, "published"))));
	if (!in_store || !json_is_string(json_object_get(r, "entry")) ||
	    !json_equal(json_object_get(r, "target"), e->target) ||
	    !same_or_both_absent(jit_prefix(r), e->prefix))
		return 0;
	if (!json_equal(json_object_get(r, "source"), e->source)) {
		if (e->elsewhere && !e->found)
			match_elsewhere(r, e);
		return 0;
	}
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

/* Dependencies: the earlier entry's recorded inputs (their paths under the
 * directory from taken as under to; from may be NULL) against this compile's. */
static void diff_deps(json_t *inputs, const char *from, const char *to, const struct cjc_dep *deps,
		      size_t ndeps, json_t *changes)
{
	json_t *old = json_object();
	size_t i;
	json_t *in;
	json_array_foreach(inputs, i, in) {
		json_t *path = from ? moved(json_object_get(in, "path"), from, to)
				    : json_incref(json_object_get(in, "path"));
		if (json_is_string(path))
			json_object_set(old, json_string_value(path),
					json_object_get(in, "sha256"));
		json_decref(path);
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

/*
 * Whether the directory of another checkout's compile is in the key, and
 * which setting would share entries between the two (docs/key.md): the
 * first rule that applies decides.
 */
struct checkout {
	json_t *old, *new; /* the two records */
	const char *old_dir, *new_dir;
	const char *old_cwd, *new_cwd; /* each working directory inside its directory, or NULL */
};

static const char *paths_member(json_t *r, const char *name)
{
	return json_string_value(json_object_get(json_object_get(r, "paths"), name));
}

static json_t *facts_member(json_t *r, const char *name)
{
	return json_object_get(json_object_get(r, "facts"), name);
}

/* path inside dir: "" for dir itself, the rest after "dir/", else NULL. */
static const char *inside(const char *path, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;
	if (!path || !dir || strncmp(path, dir, n))
		return NULL;
	if (!path[n])
		return "";
	if (path[n] == '/')
		return path + n + 1;
	return n && dir[n - 1] == '/' ? path + n : NULL;
}

static bool names_internal(const struct checkout *c)
{
	const char *o = paths_member(c->old, "exact"), *n = paths_member(c->new, "exact");
	return (o && strstr(o, "_INTERNAL_")) || (n && strstr(n, "_INTERNAL_"));
}

static bool path_free(json_t *r)
{
	const char *keyed = paths_member(r, "keyed");
	return keyed && cjc_starts_with(keyed, "relative to the root") && !paths_member(r, "exact");
}

static bool same_layout(const struct checkout *c)
{
	return c->old_cwd && c->new_cwd && !strcmp(c->old_cwd, c->new_cwd);
}

/* Paths keyed relative to a root, or base_dir set alike above both with
 * no directory the output records: the directory is not in the key. */
static bool not_keyed(const struct checkout *c)
{
	json_t *base = facts_member(c->new, "base_dir");
	const char *b = json_string_value(base);
	if (path_free(c->old) && path_free(c->new))
		return true;
	return b && json_equal(base, facts_member(c->old, "base_dir")) && inside(c->old_dir, b) &&
	       inside(c->new_dir, b) && same_layout(c) &&
	       !json_is_true(facts_member(c->new, "records_dirs"));
}

static bool apart(const struct checkout *c)
{
	return !same_layout(c);
}

/* A -D or -Xcompiler value naming the directory: base_dir rewrites neither. */
static bool option_names_dir(const struct checkout *c)
{
	size_t i;
	json_t *a;
	json_array_foreach(facts_member(c->new, "args"), i, a) {
		const char *s = json_string_value(a);
		if (s && strstr(s, c->new_dir) && *c->new_dir &&
		    (cjc_starts_with(s, "-D") || cjc_starts_with(s, "-X") ||
		     cjc_starts_with(s, "--define-macro") ||
		     cjc_starts_with(s, "--compiler-options")))
			return true;
	}
	return false;
}

static bool records_dirs(const struct checkout *c)
{
	return json_is_true(facts_member(c->new, "records_dirs"));
}

static bool always(const struct checkout *c)
{
	(void)c;
	return true;
}

static const struct sharing_rule {
	bool (*applies)(const struct checkout *c);
	bool keyed;          /* the directory is in the key */
	const char *setting; /* printf format of the base directory; NULL: none shares */
	const char *why;
} sharing_rules[] = {
	{ names_internal, true, NULL,
	  "the output names an _INTERNAL_ symbol, whose prefix nvcc "
	  "derives from the source's absolute path" },
	{ option_names_dir, true, NULL,
	  "an option (-D or -Xcompiler) names the directory, and neither a root nor base_dir "
	  "rewrites it" },
	{ not_keyed, false, NULL, "the directory is not in the key" },
	{ apart, true, NULL,
	  "the compiles ran from different places in their directories, and "
	  "base_dir keys paths relative to the working directory" },
	{ records_dirs, true, "base_dir=%s with hash_dir=false",
	  "the debug information (-g, -G, -lineinfo) then names the directories of the compile "
	  "that made the entry" },
	{ always, true, "base_dir=%s",
	  "paths under it are keyed relative to the working directory" },
};

/* The directory above both: their longest shared leading components. */
static char *common_dir(const char *a, const char *b)
{
	size_t n = 0;
	for (size_t i = 0; a[i] && a[i] == b[i]; i++)
		if ((a[i + 1] == '/' || !a[i + 1]) && (b[i + 1] == '/' || !b[i + 1]))
			n = i + 1;
	return n > 1 ? cjc_xstrndup(a, n) : cjc_xstrdup("/");
}

/* The "checkout" change: {"old", "new" (the two directories), "source"
 * (the other's), "keyed", "shared_by" (a setting, or null), "why"}. */
static json_t *checkout_change(json_t *old, json_t *new, const char *old_dir, const char *new_dir)
{
	char *base = common_dir(old_dir, new_dir);
	struct checkout c = {
		.old = old,
		.new = new,
		.old_dir = old_dir,
		.new_dir = new_dir,
		.old_cwd = inside(json_string_value(json_object_get(old, "cwd")), old_dir),
		.new_cwd = inside(json_string_value(json_object_get(new, "cwd")), new_dir),
	};
	const struct sharing_rule *r = sharing_rules;
	while (!r->applies(&c))
		r++;
	json_t *setting = r->setting ? json_sprintf(r->setting, base) : json_null();
	json_t *change = json_pack("{s:s, s:o, s:o, s:O, s:b, s:o, s:s}", "kind", "checkout", "old",
				   cjc_json_bytes(*old_dir ? old_dir : "/"), "new",
				   cjc_json_bytes(*new_dir ? new_dir : "/"), "source",
				   json_object_get(old, "source"), "keyed", r->keyed, "shared_by",
				   setting, "why", r->why);
	free(base);
	return change;
}

/* The trailing components another directory's source must share with
 * this one: its path under the root (place.h), or its name when none. */
static size_t tail_needed(json_t *record)
{
	const char *cwd = json_string_value(json_object_get(record, "cwd"));
	const char *source = json_string_value(json_object_get(record, "source"));
	char *root = cwd && source ? cjc_place_root(cwd, source) : NULL;
	const char *rel = root ? inside(source, root) : NULL;
	size_t n = 1;
	for (const char *p = rel; p && *p; p++)
		n += *p == '/';
	free(root);
	return n;
}

/* The journal lines to read: those naming the source, or, when another
 * directory's compile of it may be the nearest, those naming its file name. */
static const char *needle_of(const struct earlier *e)
{
	const char *source = json_string_value(e->source);
	const char *name = e->elsewhere ? strrchr(source, '/') : NULL;
	return cjc_why_needle(name && name[1] ? name + 1 : source);
}

/* An earlier record's entry compared with this compile: its dependencies
 * (their paths under from taken as under to; from may be NULL), then its
 * facts' changes. */
static void compare_entry(const struct cjc_store *s, json_t *record, json_t *earlier,
			  json_t *fact_changes, const char *from, const char *to,
			  const struct cjc_dep *deps, size_t ndeps, json_t *changes)
{
	const char *key = json_string_value(json_object_get(earlier, "entry"));
	json_t *inputs = entry_inputs(s, key);
	json_object_set_new(record, "compared_with", json_string(key));
	if (inputs)
		diff_deps(inputs, from, to, deps, ndeps, changes);
	else
		json_object_set_new(
			record, "note",
			json_sprintf(
				"entry %.12s is no longer in the store: dependencies not compared",
				key));
	json_decref(inputs);
	json_array_extend(changes, fact_changes);
	base_dir_first(changes);
}

/* The nearest compile was another directory's: its directory first when
 * it is in the key (last when it is not: the others explain the miss). */
static void compare_elsewhere(const struct cjc_store *s, json_t *record, const struct earlier *e,
			      const struct cjc_dep *deps, size_t ndeps, json_t *changes)
{
	char *old_dir = NULL, *new_dir = NULL;
	(void)shared_tail(json_string_value(json_object_get(e->near, "source")),
			  json_string_value(e->source), &old_dir, &new_dir);
	json_t *checkout = checkout_change(e->near, record, old_dir, new_dir);
	compare_entry(s, record, e->near, e->near_changes, old_dir, new_dir, deps, ndeps, changes);
	json_object_set(record, "compared_source", json_object_get(e->near, "source"));
	if (json_is_true(json_object_get(checkout, "keyed")))
		json_array_insert_new(changes, 0, checkout);
	else
		json_array_append_new(changes, checkout);
	free(old_dir);
	free(new_dir);
}

size_t cjc_why_explaining(json_t *changes)
{
	size_t n = json_array_size(changes);
	json_t *last = n ? json_array_get(changes, n - 1) : NULL;
	bool context = last && !strcmp(field(last, "kind"), "checkout") &&
		       !json_is_true(json_object_get(last, "keyed"));
	return context ? n - 1 : n;
}

void cjc_why_miss(const struct cjc_store *s, json_t *record, const struct cjc_dep *deps,
		  size_t ndeps)
{
	struct earlier e = {
		.source = json_object_get(record, "source"),
		.target = json_object_get(record, "target"),
		.facts = json_object_get(record, "facts"),
		.prefix = jit_prefix(record),
		.elsewhere = json_object_get(record, "paths") != NULL,
		.need_tail = tail_needed(record),
	};
	json_t *changes = json_array();
	if (json_is_string(e.source))
		(void)cjc_journal_foreach(s, needle_of(&e), match_earlier, &e, NULL);
	json_t *earlier = e.found ? e.found : e.near;
	const char *key = earlier ? json_string_value(json_object_get(earlier, "entry")) : NULL;
	if (e.found)
		compare_entry(s, record, e.found, e.found_changes, NULL, NULL, deps, ndeps,
			      changes);
	else if (e.near)
		compare_elsewhere(s, record, &e, deps, ndeps, changes);
	else
		json_object_set_new(record, "compared_with", json_null());
	if (key && !cjc_why_explaining(changes) &&
	    json_equal(json_object_get(record, "entry"), json_object_get(earlier, "entry")) &&
	    !cjc_starts_with(field(record, "reason"), "entry "))
		json_object_set_new(record, "note", json_sprintf(
			"entry %.12s was made before but the store no longer had it (cleaned or evicted)", key));
	json_object_set_new(record, "changes", changes);
	json_decref(e.found);
	json_decref(e.found_changes);
	json_decref(e.near);
	json_decref(e.near_changes);
}

json_t *cjc_why_paths(const char *root, const char *keyed, const char *exact)
{
	json_t *o = json_object();
	json_object_set_new(o, "root", root ? cjc_json_bytes(root) : json_null());
	json_object_set_new(o, "keyed", cjc_json_bytes(keyed));
	json_object_set_new(o, "exact", exact ? cjc_json_bytes(exact) : json_null());
	return o;
}
