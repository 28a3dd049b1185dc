/*
 * `cjc why` (why.h): finds a record and words it.  The records themselves
 * are made by compile/why.c.
 */
#include "why.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "compile/why.h"
#include "keys/metadata.h"
#include "output.h"
#include "store/journal.h"
#include "store/store.h"

/* A string field, or "?" when a record lacks it (the journal is read, not trusted). */
static const char *field(json_t *o, const char *name)
{
	const char *v = json_string_value(json_object_get(o, name));
	return v ? v : "?";
}

/* The request's name when path is where the JIT library keys a request's
 * code (keys/metadata.h); else NULL. */
static const char *jit_name(const char *path)
{
	const char *dir = CJC_JIT_SOURCE_DIR "/";
	return cjc_starts_with(path, dir) ? path + strlen(dir) : NULL;
}

/* The record's compiler, for the words: NVRTC for the JIT's NVRTC compiles,
 * ptxas for `cjc ptxas`'s (ptxas.h). */
static const char *compiler_word(json_t *r)
{
	const char *f = json_string_value(json_object_get(json_object_get(r, "facts"), "compiler"));
	if (f && !strcmp(f, "ptxas"))
		return "ptxas";
	const char *c = json_string_value(json_object_get(json_object_get(r, "jit"), "compiler"));
	if (c && !strcmp(c, "nvrtc-shim"))
		return "NVRTC";
	return c && !strcmp(c, "nvrtc") ? "NVRTC" : "nvcc";
}

/* A path as the user sees it: relative to the compile's directory when under it. */
static const char *shown(const char *path, const char *cwd)
{
	size_t n = cwd ? strlen(cwd) : 0;
	if (n && !strncmp(path, cwd, n) && path[n] == '/')
		return path + n + 1;
	return path;
}

static void describe_compiler(struct cjc_buf *b, json_t *c, const char *cwd)
{
	json_t *old = json_object_get(c, "old"), *new = json_object_get(c, "new");
	const char *op = json_string_value(json_object_get(old, "path"));
	const char *np = json_string_value(json_object_get(new, "path"));
	const char *ov = json_string_value(json_object_get(old, "version"));
	const char *nv = json_string_value(json_object_get(new, "version"));
	(void)cwd;
	cjc_buf_addf(b, "%s changed", field(c, "which"));
	if (op && np && strcmp(op, np))
		cjc_buf_addf(b, " from %s to %s", op, np);
	else if (ov && nv && strcmp(ov, nv))
		cjc_buf_addf(b, " (version '%s', was '%s')", nv, ov);
	else
		cjc_buf_adds(b, " (its binaries differ)");
}

static void describe_env(struct cjc_buf *b, json_t *c, const char *cwd)
{
	const char *name = field(c, "name");
	json_t *was = json_object_get(c, "old"), *now = json_object_get(c, "new");
	(void)cwd;
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

static void describe_base_dir(struct cjc_buf *b, json_t *c, const char *cwd)
{
	const char *old = json_string_value(json_object_get(c, "old"));
	const char *new = json_string_value(json_object_get(c, "new"));
	(void)cwd;
	if (!old)
		cjc_buf_addf(b, "base_dir set to %s", new ? new : "?");
	else if (!new)
		cjc_buf_addf(b, "base_dir unset (was %s)", old);
	else
		cjc_buf_addf(b, "base_dir changed from %s to %s", old, new);
}

/* "-DFOO=1 added"; the diagnostics settings in the key (diagnostics.h) by name. */
static void describe_argument(struct cjc_buf *b, json_t *c, bool added)
{
	const char *arg = field(c, "argument");
	if (cjc_starts_with(arg, "cjc:"))
		cjc_buf_addf(b, "%s turned %s", arg + 4, added ? "on" : "off");
	else
		cjc_buf_addf(b, "%s %s", arg, added ? "added" : "removed");
}

static void describe_added(struct cjc_buf *b, json_t *c, const char *cwd)
{
	(void)cwd;
	describe_argument(b, c, true);
}

static void describe_removed(struct cjc_buf *b, json_t *c, const char *cwd)
{
	(void)cwd;
	describe_argument(b, c, false);
}

/* A dependency as the user knows it: a JIT request's code, or a path. */
static void describe_path(struct cjc_buf *b, json_t *c, const char *cwd, const char *what)
{
	const char *path = field(c, "path"), *name = jit_name(path);
	if (name)
		cjc_buf_addf(b, "the code of %s %s", name, what);
	else
		cjc_buf_addf(b, "%s %s", shown(path, cwd), what);
}

static void describe_dependency(struct cjc_buf *b, json_t *c, const char *cwd)
{
	describe_path(b, c, cwd, "changed");
}

static void describe_dependency_added(struct cjc_buf *b, json_t *c, const char *cwd)
{
	describe_path(b, c, cwd, "is now read");
}

static void describe_dependency_removed(struct cjc_buf *b, json_t *c, const char *cwd)
{
	describe_path(b, c, cwd, "is no longer read");
}

static void describe_working_directory(struct cjc_buf *b, json_t *c, const char *cwd)
{
	(void)cwd;
	cjc_buf_addf(b, "working directory changed from %s (%s records it in the output)",
		     field(c, "old"), field(c, "recorded_by"));
}

static void describe_resolution(struct cjc_buf *b, json_t *c, const char *cwd)
{
	(void)cwd;
	cjc_buf_addf(b, "%s now resolves to %s (was %s)", field(c, "argument"), field(c, "new"),
		     field(c, "old"));
}

/* Another directory's compile of the same source (compile/why.h): whether
 * its directory is in the key, and what would share entries between them. */
static void describe_checkout(struct cjc_buf *b, json_t *c, const char *cwd)
{
	const char *setting = json_string_value(json_object_get(c, "shared_by"));
	(void)cwd;
	if (!json_is_true(json_object_get(c, "keyed")))
		cjc_buf_addf(b, "compared with %s, another directory's (%s)", field(c, "source"),
			     field(c, "why"));
	else if (setting)
		cjc_buf_addf(
			b,
			"the directory differs: compiled before in %s, now in %s; %s would share "
			"entries between them (%s)",
			field(c, "old"), field(c, "new"), setting, field(c, "why"));
	else
		cjc_buf_addf(b,
			     "the directory differs: compiled before in %s, now in %s; no setting "
			     "shares entries between them: %s",
			     field(c, "old"), field(c, "new"), field(c, "why"));
}

/* Each kind of change a miss records (compile/why.h): its words, and the
 * cause it names in a report. */
static const struct change_kind {
	const char *kind;
	const char *cause;
	void (*describe)(struct cjc_buf *b, json_t *change, const char *cwd);
} change_kinds[] = {
	{ "argument_added", "an argument was added", describe_added },
	{ "argument_removed", "an argument was removed", describe_removed },
	{ "base_dir", "base_dir changed", describe_base_dir },
	{ "checkout", "the directory differs", describe_checkout },
	{ "compiler", "the compiler changed", describe_compiler },
	{ "dependency", "a source or header changed", describe_dependency },
	{ "dependency_added", "a file is now read", describe_dependency_added },
	{ "dependency_removed", "a file is no longer read", describe_dependency_removed },
	{ "environment", "the environment changed", describe_env },
	{ "resolution", "a relative path resolves elsewhere", describe_resolution },
	{ "working_directory", "the working directory changed", describe_working_directory },
};

static const struct change_kind *change_kind_of(json_t *c)
{
	const char *kind = field(c, "kind");
	for (size_t i = 0; i < sizeof change_kinds / sizeof *change_kinds; i++)
		if (!strcmp(change_kinds[i].kind, kind))
			return &change_kinds[i];
	return NULL;
}

/* One change in plain words. */
static void describe(struct cjc_buf *b, json_t *c, const char *cwd)
{
	const struct change_kind *k = change_kind_of(c);
	if (k)
		k->describe(b, c, cwd);
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
	if (cjc_why_explaining(changes))
		return;
	cjc_buf_adds(b, n ? "; " : "");
	const char *name = jit_name(field(r, "source"));
	if (json_is_null(json_object_get(r, "compared_with")) && name)
		cjc_buf_addf(b, "no earlier compile of %s by this library is recorded", name);
	else if (json_is_null(json_object_get(r, "compared_with")))
		cjc_buf_addf(b, "no earlier compile of %s for this target is recorded",
			     shown(field(r, "source"), cwd));
	else if (note)
		cjc_buf_adds(b, note);
	else
		cjc_buf_adds(b, reason ? reason : "nothing recorded differs");
}

char *cjc_why_summary(json_t *r)
{
	struct cjc_buf b = CJC_BUF_INIT;
	const char *result = field(r, "result");
	const char *reason = json_string_value(json_object_get(r, "reason"));
	cjc_buf_addf(&b, "%s: ", result);
	if (!strcmp(result, "hit"))
		cjc_buf_addf(&b, "served from entry %.12s", field(r, "entry"));
	else if (!strcmp(result, "miss"))
		miss_summary(&b, r);
	else if (!strcmp(result, "failed") && reason) /* the JIT's: the call's error */
		cjc_buf_addf(&b, "%s; nothing was cached", reason);
	else if (!strcmp(result, "failed"))
		cjc_buf_addf(&b, "%s failed; nothing was cached", compiler_word(r));
	else
		cjc_buf_adds(&b, reason ? reason : "?");
	return cjc_buf_detach(&b);
}

/* What a miss's note or lookup says (launcher.c, compile/why.c), as a cause. */
static const struct {
	const char *words;
	const char *cause;
} lookup_causes[] = {
	{ "no longer had it", "the entry was evicted or cleaned" },
	{ "evicted", "the entry was evicted or cleaned" },
	{ "no longer in the store", "the entry was evicted or cleaned" },
	{ "was damaged", "the entry was damaged" },
	{ "not trusted", "the entry is not trusted" },
	{ "could not be served", "the entry could not be served" },
};

static const char *lookup_cause(const char *words)
{
	for (size_t i = 0; words && i < sizeof lookup_causes / sizeof *lookup_causes; i++)
		if (strstr(words, lookup_causes[i].words))
			return lookup_causes[i].cause;
	return NULL;
}

/* The same choice as miss_summary()'s: the first change, else what the
 * lookup found. */
const char *cjc_why_cause(json_t *r)
{
	json_t *changes = json_object_get(r, "changes");
	const char *found;
	if (cjc_why_explaining(changes)) {
		const struct change_kind *k = change_kind_of(json_array_get(changes, 0));
		return k ? k->cause : "something else changed";
	}
	if (json_is_null(json_object_get(r, "compared_with")))
		return "no earlier compile is recorded";
	if ((found = lookup_cause(json_string_value(json_object_get(r, "note")))) ||
	    (found = lookup_cause(json_string_value(json_object_get(r, "reason")))))
		return found;
	return "nothing recorded differs";
}

/* The plain words of a record, derived from its fields when it is shown. */
static void set_summary(json_t *r)
{
	char *words = cjc_why_summary(r);
	json_object_set_new(r, "summary", cjc_json_bytes(words));
	free(words);
}

/* The last record of an output or source, or of a JIT request. */
struct lookup {
	json_t *path;   /* an output or source, resolved */
	json_t *name;   /* a JIT request's name */
	json_t *prefix; /* and its library's prefix (JSON null: none); NULL: any */
	json_t *found;
};

static bool matches(json_t *r, const struct lookup *l)
{
	json_t *jit = json_object_get(r, "jit");
	if (l->path)
		return json_equal(json_object_get(r, "output"), l->path) ||
		       json_equal(json_object_get(r, "source"), l->path);
	return json_equal(json_object_get(jit, "name"), l->name) &&
	       (!l->prefix || json_equal(json_object_get(jit, "prefix"), l->prefix));
}

static int match_record(json_t *r, void *ctx)
{
	struct lookup *l = ctx;
	if (matches(r, l)) {
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
		char *shown = cjc_printable(b.data ? b.data : ""); /* paths and arguments the journal holds */
		printf("  %s\n", shown);
		free(shown);
		cjc_buf_release(&b);
	}
}

/* "  LABEL VALUE" for a field of o, escaped as every field the journal holds. */
static void print_shown(const char *label, json_t *o, const char *name)
{
	char *shown = cjc_json_shown(json_object_get(o, name), "?");
	printf("  %s %s\n", label, shown);
	free(shown);
}

static void print_output_line(json_t *r, const char *target)
{
	char *output = cjc_json_shown(json_object_get(r, "output"), "?");
	char *time = cjc_json_shown(json_object_get(r, "time"), "?");
	char *label = target ? cjc_printable(target) : NULL;
	printf("  compiled %s at %s%s%s\n", output, time, label ? " for target " : "",
	       label ? label : "");
	free(output);
	free(time);
	free(label);
}

/* "compiled k.cu by the JIT library (prefix MYLIB, nvcc) at ...", or
 * "compiled saxpy through the NVRTC shim at ..." */
static void print_jit_line(json_t *r)
{
	const char *c = json_string_value(json_object_get(json_object_get(r, "jit"), "compiler"));
	if (c && !strcmp(c, "nvrtc-shim")) {
		char *program = cjc_json_shown(json_object_get(json_object_get(r, "jit"), "name"), "?");
		char *time = cjc_json_shown(json_object_get(r, "time"), "?");
		printf("  compiled %s through the NVRTC shim at %s\n", program, time);
		free(program);
		free(time);
		return;
	}
	json_t *jit = json_object_get(r, "jit"), *prefix = json_object_get(jit, "prefix");
	char *name = cjc_json_shown(json_object_get(jit, "name"), "?");
	char *shown_prefix = json_is_null(prefix) ? NULL : cjc_json_shown(prefix, "?");
	char *time = cjc_json_shown(json_object_get(r, "time"), "?");
	printf("  compiled %s by the JIT library (%s%s, %s) at %s\n", name,
	       shown_prefix ? "prefix " : "no prefix", shown_prefix ? shown_prefix : "",
	       compiler_word(r), time);
	free(time);
	free(name);
	free(shown_prefix);
}

/* How the paths were keyed (path-free keys), and why they stayed exact. */
static void print_paths(json_t *paths)
{
	if (!json_is_object(paths))
		return;
	print_shown("paths keyed", paths, "keyed");
	if (json_is_string(json_object_get(paths, "root")))
		print_shown("root:", paths, "root");
	if (json_is_string(json_object_get(paths, "exact")))
		print_shown("paths kept exact:", paths, "exact");
}

static void print_record(json_t *r)
{
	const char *target = json_string_value(json_object_get(r, "target"));
	json_t *saved = json_object_get(r, "saved_ms"), *took = json_object_get(r, "duration_ms");
	char *summary = cjc_json_shown(json_object_get(r, "summary"), "?");
	printf("%s\n", summary);
	free(summary);
	if (json_object_get(r, "jit"))
		print_jit_line(r);
	else
		print_output_line(r, target);
	if (json_is_string(json_object_get(r, "entry")))
		print_shown("entry", r, "entry");
	if (json_object_get(r, "not_published"))
		print_shown("not published:", r, "not_published");
	if (saved)
		printf("  saved %.3f s of %s\n", (double)json_integer_value(saved) / 1000.0,
		       compiler_word(r));
	if (took)
		printf("  %s ran %.3f s\n", compiler_word(r), (double)json_integer_value(took) / 1000.0);
	if (json_is_string(json_object_get(r, "compared_with")))
		print_shown("compared with entry", r, "compared_with");
	if (json_is_string(json_object_get(r, "compared_source")))
		print_shown("made from", r, "compared_source");
	if (json_is_string(json_object_get(json_object_get(r, "facts"), "rule")))
		print_shown("working directory:", json_object_get(r, "facts"), "rule");
	print_paths(json_object_get(r, "paths"));
	print_details(r);
}

/* What to look for: a path, or ([PREFIX]:)NAME of a JIT request; the
 * needle, which the caller frees. */
static char *lookup_of(const char *what, bool jit, struct lookup *l)
{
	char cwd[PATH_MAX];
	if (!jit) {
		l->path = cjc_why_path(what, getcwd(cwd, sizeof cwd));
		const char *needle = cjc_why_needle(json_string_value(l->path));
		return needle ? cjc_xstrdup(needle) : NULL;
	}
	const char *colon = strrchr(what, ':'), *name = colon ? colon + 1 : what;
	char *prefix = colon ? cjc_xstrndup(what, (size_t)(colon - what)) : NULL;
	l->name = cjc_json_bytes(name);
	l->prefix = !colon ? NULL : *prefix ? cjc_json_bytes(prefix) : json_null();
	free(prefix);
	char *source = cjc_xasprintf("%s/%s", CJC_JIT_SOURCE_DIR, name);
	const char *needle = cjc_why_needle(source);
	char *copy = needle ? cjc_xstrdup(needle) : NULL;
	free(source);
	return copy;
}

/* A store this user cannot write records none of their compiles: said,
 * rather than leaving "never compiled" or an old record to mislead. */
static void note_readonly(const struct cjc_store *s)
{
	if (!faccessat(AT_FDCWD, s->dir, W_OK, AT_EACCESS) ||
	    (errno != EACCES && errno != EROFS && errno != EPERM))
		return;
	fprintf(stderr, "cjc why: the store %s is read-only for you (%s): your compiles through it "
		"are not recorded, nor kept\n", s->dir, strerror(errno));
}

int cjc_why_print(const struct cjc_store *s, const char *what, bool jit, bool json)
{
	struct lookup l = { 0 };
	char *needle = lookup_of(what, jit, &l);
	size_t skipped = 0;
	if (cjc_journal_foreach(s, needle, match_record, &l, &skipped))
		fprintf(stderr, "cjc why: cannot read the journal: %s\n", strerror(errno));
	if (skipped)
		fprintf(stderr, "cjc why: %zu damaged journal lines skipped\n", skipped);
	free(needle);
	json_decref(l.path);
	json_decref(l.name);
	json_decref(l.prefix);
	if (!l.found) {
		fprintf(stderr, "cjc why: no %scompile of %s is recorded in %s\n", jit ? "JIT " : "",
			what, s->dir);
		note_readonly(s);
		return 1;
	}
	note_readonly(s);
	set_summary(l.found);
	if (json) {
		cjc_print_json(json_incref(l.found));
	} else {
		print_record(l.found);
	}
	json_decref(l.found);
	return 0;
}
