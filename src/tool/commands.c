#include "commands.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "base/fs.h"
#include "base/util.h"
#include "compile/config.h"
#include "compile/diagnostics.h"
#include "config_cmd.h"
#include "helper_cmd.h"
#include "keys/key.h"
#include "keys/metadata.h"
#include "keys/nvcc_args.h"
#include "metrics.h"
#include "output.h"
#include "remote_cmd.h"
#include "report.h"
#include "run_cmd.h"
#include "store/evict.h"
#include "store/index.h"
#include "store/maintain.h"
#include "store/sign.h"
#include "store/stats.h"
#include "store/store.h"
#include "watch_cmd.h"
#include "why.h"

/* A subcommand's flags, settings and store; problems with settings are printed. */
struct session {
	const char *cmd;
	struct cjc_config cfg;
	struct cjc_store store;
	bool json, fix, zero, by_target, jit;
	uint64_t max_size;  /* gc --max-size; 0: max_size */
	int64_t age;        /* gc --older-than; -1: none */
	int jobs;           /* audit --jobs */
	const char *arg;    /* the one argument of show, why, audit */
	bool env;           /* run --env */
	char **rest;        /* run: the program and its arguments */
	size_t nrest;
	const char *format; /* stats --format; NULL: text (or json with --json) */
	bool markdown;      /* report --markdown */
	struct cjc_strvec merge; /* report --merge DIR... */
};

/* What a flag sets in the session: one table per subcommand, one parser.
 * FLAG_WORD keeps its value (the command checks it); FLAG_LIST takes the
 * words after it up to the next flag, at least one. */
enum flag_kind { FLAG_BOOL, FLAG_SIZE, FLAG_AGE, FLAG_JOBS, FLAG_WORD, FLAG_LIST };

struct flag {
	const char *name;
	enum flag_kind kind;
	size_t offset;     /* of its field in struct session */
	const char *value; /* its value, for --help; NULL for a boolean */
};

#define FLAG(name, kind, field, value) { name, kind, offsetof(struct session, field), value }
#define JSON FLAG("--json", FLAG_BOOL, json, NULL)
#define END { NULL, FLAG_BOOL, 0, NULL }

struct cjc_command {
	const char *name;
	int (*fn)(struct session *s);
	const char *help;
	const struct flag *flags; /* ends with END (a NULL name) */
	const char *arg;          /* its one required argument, for --help; NULL: none */
	bool store;               /* opens the settings and the store first */
	bool rest;                /* after `--` or the first word not a flag: a program (run) */
};

static int usage_error(const char *cmd, const char *word)
{
	fprintf(stderr, "cjc %s: unexpected argument '%s'; see 'cjc --help'\n", cmd, word);
	return 2;
}

static int flag_value(const struct flag *f, const char *cmd, const char *v, struct session *s)
{
	void *field = (char *)s + f->offset;
	char *end;
	long n;
	switch (f->kind) {
	case FLAG_SIZE:
		if (!cjc_parse_size(v, field))
			return 0;
		fprintf(stderr, "cjc %s: %s: '%s' is not a size such as 20G or 512M; see 'cjc --help'\n",
			cmd, f->name, v);
		return 2;
	case FLAG_AGE:
		if (!cjc_parse_age(v, field))
			return 0;
		fprintf(stderr, "cjc %s: %s: '%s' is not a duration such as 7d, 12h, 30m; see 'cjc --help'\n",
			cmd, f->name, v);
		return 2;
	case FLAG_JOBS:
		n = strtol(v, &end, 10);
		if (!*end && n >= 1 && n <= 256)
			return *(int *)field = (int)n, 0;
		fprintf(stderr, "cjc %s: %s takes a number from 1 to 256, not '%s'; see 'cjc --help'\n",
			cmd, f->name, v);
		return 2;
	case FLAG_WORD:
		return *(const char **)field = v, 0;
	case FLAG_LIST:
		return cjc_strvec_push(field, v), 0;
	case FLAG_BOOL:
		break;
	}
	return *(bool *)field = true, 0;
}

/* The flag a word names, as --name or --name=value (*value: after the '='). */
static const struct flag *find_flag(const struct flag *f, const char *word, const char **value)
{
	const char *eq = strchr(word, '=');
	size_t n = eq ? (size_t)(eq - word) : strlen(word);
	*value = eq ? eq + 1 : NULL;
	for (; f && f->name; f++)
		if (strlen(f->name) == n && !strncmp(f->name, word, n))
			return f;
	return NULL;
}

/* The words of a FLAG_LIST from argv[*i + 1] up to the next flag. */
static int flag_list(const struct flag *f, const char *cmd, int argc, char **argv, int *i,
		     struct session *s)
{
	int first = *i + 1;
	while (*i + 1 < argc && argv[*i + 1][0] != '-')
		flag_value(f, cmd, argv[++*i], s);
	if (*i >= first)
		return 0;
	fprintf(stderr, "cjc %s: %s needs at least one %s; see 'cjc --help'\n", cmd, f->name, f->value);
	return 2;
}

/* One flag's value: after its '=', or the next word (or words, for a list). */
static int flag_at(const struct flag *f, const char *cmd, const char *inline_value, int argc,
		   char **argv, int *i, struct session *s)
{
	if (inline_value && (f->kind == FLAG_BOOL || f->kind == FLAG_LIST))
		return usage_error(cmd, argv[*i]);
	if (f->kind == FLAG_BOOL)
		return flag_value(f, cmd, NULL, s);
	if (inline_value)
		return flag_value(f, cmd, inline_value, s);
	if (f->kind == FLAG_LIST)
		return flag_list(f, cmd, argc, argv, i, s);
	if (*i + 1 < argc)
		return flag_value(f, cmd, argv[++*i], s);
	fprintf(stderr, "cjc %s: %s needs a value; see 'cjc --help'\n", cmd, f->name);
	return 2;
}

/* Parses the words after the subcommand's name; 0, or an exit status. */
static int parse_flags(const struct cjc_command *c, int argc, char **argv, struct session *s)
{
	for (int i = 1; i < argc; i++) {
		if (c->rest && (!strcmp(argv[i], "--") || argv[i][0] != '-')) {
			i += !strcmp(argv[i], "--");
			s->rest = argv + i;
			s->nrest = (size_t)(argc - i);
			break;
		}
		const char *inline_value;
		const struct flag *f = find_flag(c->flags, argv[i], &inline_value);
		int rc = 0;
		if (f)
			rc = flag_at(f, c->name, inline_value, argc, argv, &i, s);
		else if (c->arg && !s->arg && argv[i][0] != '-')
			s->arg = argv[i];
		else
			rc = usage_error(c->name, argv[i]);
		if (rc)
			return rc;
	}
	if (c->arg && !s->arg) {
		fprintf(stderr, "cjc %s: missing %s; see 'cjc --help'\n", c->name, c->arg);
		return 2;
	}
	return 0;
}

static int open_session(struct session *s)
{
	struct cjc_buf problems = CJC_BUF_INIT;
	if (cjc_config_load(&s->cfg, &problems))
		fputs(problems.data, stderr);
	if (s->cfg.notes)
		fputs(s->cfg.notes, stderr);
	cjc_buf_release(&problems);
	if (s->cfg.umask >= 0)
		umask((mode_t)s->cfg.umask);
	if (cjc_store_open(&s->store, s->cfg.dir)) {
		char *why = cjc_store_unusable(s->cfg.dir, errno);
		fprintf(stderr, "cjc: %s\n", why);
		free(why);
		cjc_config_release(&s->cfg);
		return 1;
	}
	return 0;
}

static void close_session(struct session *s)
{
	cjc_store_close(&s->store);
	cjc_config_release(&s->cfg);
}

/* For the commands that change the store: one clear message when they cannot. */
static int require_writable(const struct session *s, const char *cmd)
{
	if (!access(s->store.dir, W_OK))
		return 0;
	fprintf(stderr, "cjc %s: cannot change the store %s: %s\n", cmd, s->store.dir, strerror(errno));
	return 1;
}

static double hit_rate(const uint64_t *v)
{
	return report_hit_rate(v[CJC_STAT_HITS], v[CJC_STAT_MISSES]);
}

/* The counters; store_wide: with those of the whole store (size, evictions). */
static json_t *counters_json(const uint64_t *v, bool store_wide)
{
	json_t *o = json_object();
	for (int i = 0; i < CJC_STAT_COUNT; i++)
		if (store_wide || !cjc_stats_store_wide(i))
			json_object_set_new(o, cjc_stats_name(i), json_integer((json_int_t)v[i]));
	json_object_set_new(o, "hit_rate", json_real(hit_rate(v)));
	return o;
}

/* Named counters as {name: counters}. */
static json_t *breakdown_json(const struct cjc_stats_row *rows, size_t n, enum cjc_counter only)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, rows[i].name, only == CJC_STAT_COUNT ? counters_json(rows[i].v, false)
					: json_integer((json_int_t)rows[i].v[only]));
	return o;
}

/* The store's size on disk first (issue 51: the entries' line alone was
 * read as the total), then its two parts: the entries' files, against
 * max_size, and the bookkeeping beside them. */
static void print_size_lines(const uint64_t *v, uint64_t bookkeeping, uint64_t max_size)
{
	printf("%-16s %.1f MB on disk: the entries and their bookkeeping\n", "store size",
	       (double)(v[CJC_STAT_BYTES] + bookkeeping) / 1e6);
	printf("  %-14s %.1f MB in %llu entries", "entries", (double)v[CJC_STAT_BYTES] / 1e6,
	       (unsigned long long)v[CJC_STAT_ENTRIES]);
	if (max_size)
		printf(" of max_size %.1f MB (%.1f %%)\n", (double)max_size / 1e6,
		       100.0 * (double)v[CJC_STAT_BYTES] / (double)max_size);
	else
		printf(", no max_size\n");
	printf("  %-14s %.1f MB (manifests and hash caches)\n", "bookkeeping",
	       (double)bookkeeping / 1e6);
}

/* What every compile counts under its --target label too (launcher.c's
 * count()), where the totals are the rows' sum: the "(no target)" row. */
static const enum cjc_counter per_compile[] = { CJC_STAT_HITS, CJC_STAT_MISSES,
	CJC_STAT_UNCACHEABLE, CJC_STAT_ERRORS, CJC_STAT_COMPILE_FAILED, CJC_STAT_SAVED_MS };
#define NPER_COMPILE (sizeof per_compile / sizeof *per_compile)

/* The compiles without a --target label: the totals less every label's
 * counts (none below zero: a label's row may outlive a --zero), so that
 * the rows of --by-target sum to the totals.  Whether any was counted. */
static bool unlabeled(const uint64_t *total, const struct cjc_stats_row *rows, size_t n,
		      uint64_t *out)
{
	bool any = false;
	memset(out, 0, sizeof(uint64_t) * CJC_STAT_COUNT);
	for (size_t k = 0; k < NPER_COMPILE; k++) {
		enum cjc_counter c = per_compile[k];
		uint64_t labeled = 0;
		for (size_t i = 0; i < n; i++)
			labeled += rows[i].v[c];
		out[c] = labeled > total[c] ? 0 : total[c] - labeled;
		any = any || out[c];
	}
	return any;
}

static json_t *unlabeled_json(const uint64_t *v)
{
	json_t *o = json_object();
	for (size_t k = 0; k < NPER_COMPILE; k++)
		json_object_set_new(o, cjc_stats_name(per_compile[k]),
				    json_integer((json_int_t)v[per_compile[k]]));
	json_object_set_new(o, "hit_rate", json_real(hit_rate(v)));
	return o;
}

static void print_target(const char *name, const uint64_t *v)
{
	printf("%-24s %8llu %8llu %11llu %8llu %7.1f %% %10.3f s\n", name,
	       (unsigned long long)v[CJC_STAT_HITS], (unsigned long long)v[CJC_STAT_MISSES],
	       (unsigned long long)v[CJC_STAT_UNCACHEABLE], (unsigned long long)v[CJC_STAT_ERRORS],
	       hit_rate(v), (double)v[CJC_STAT_SAVED_MS] / 1000.0);
}

static void print_targets(const uint64_t *total, const struct cjc_stats_row *rows, size_t n)
{
	uint64_t rest[CJC_STAT_COUNT];
	printf("\n%-24s %8s %8s %11s %8s %9s %12s\n", "target", "hits", "misses", "uncacheable",
	       "errors", "hit rate", "time saved");
	for (size_t i = 0; i < n; i++) {
		char *name = cjc_printable(rows[i].name);
		print_target(name, rows[i].v);
		free(name);
	}
	if (unlabeled(total, rows, n, rest))
		print_target("(no target)", rest);
	else if (!n)
		printf("(no compile is counted)\n");
}

/* The remote counters, per store (stats.h). */
static const enum cjc_counter remote_counters[] = {
	CJC_STAT_REMOTE_HITS, CJC_STAT_REMOTE_MISSES, CJC_STAT_REMOTE_ERRORS, CJC_STAT_REMOTE_TIMEOUTS,
	CJC_STAT_UNTRUSTED, CJC_STAT_REMOTE_READ, CJC_STAT_REMOTE_WRITTEN,
};
#define NREMOTE (sizeof remote_counters / sizeof *remote_counters)

static json_t *remotes_json(const struct cjc_stats_row *rows, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; i < n; i++) {
		json_t *row = json_object();
		for (size_t k = 0; k < NREMOTE; k++)
			json_object_set_new(row, cjc_stats_name(remote_counters[k]),
					    json_integer((json_int_t)rows[i].v[remote_counters[k]]));
		json_object_set_new(o, rows[i].name, row);
	}
	return o;
}

static void print_remotes(const struct cjc_stats_row *rows, size_t n)
{
	if (!n)
		return;
	printf("\n%-40s %8s %8s %8s %8s %9s %11s %11s\n", "remote store", "hits", "misses", "errors",
	       "timeouts", "untrusted", "MB read", "MB written");
	for (size_t i = 0; i < n; i++) {
		const uint64_t *v = rows[i].v;
		char *name = cjc_printable(rows[i].name);
		printf("%-40s %8llu %8llu %8llu %8llu %9llu %11.1f %11.1f\n", name,
		       (unsigned long long)v[CJC_STAT_REMOTE_HITS], (unsigned long long)v[CJC_STAT_REMOTE_MISSES],
		       (unsigned long long)v[CJC_STAT_REMOTE_ERRORS],
		       (unsigned long long)v[CJC_STAT_REMOTE_TIMEOUTS], (unsigned long long)v[CJC_STAT_UNTRUSTED],
		       (double)v[CJC_STAT_REMOTE_READ] / 1e6, (double)v[CJC_STAT_REMOTE_WRITTEN] / 1e6);
		free(name);
	}
}

static void print_stats(const struct session *s, const uint64_t *v,
			const struct cjc_stats_row *reasons, size_t nreasons)
{
	static const enum cjc_counter shown[] = { CJC_STAT_HITS, CJC_STAT_MISSES, CJC_STAT_ERRORS,
		CJC_STAT_DAMAGED, CJC_STAT_COMPILE_FAILED, CJC_STAT_UNCACHEABLE };
	printf("%-16s %s\n", "cache directory", s->store.dir);
	print_size_lines(v, cjc_store_bookkeeping_bytes(&s->store), s->cfg.max_size);
	for (size_t i = 0; i < sizeof shown / sizeof *shown; i++)
		printf("%-16s %llu\n", cjc_stats_name(shown[i]), (unsigned long long)v[shown[i]]);
	for (size_t i = 0; i < nreasons; i++)
		printf("  %-40s %llu\n", reasons[i].name,
		       (unsigned long long)reasons[i].v[CJC_STAT_UNCACHEABLE]);
	printf("%-16s %.1f %%\n", "hit rate", hit_rate(v));
	cjc_config_stats_print(&s->store, v); /* broken settings, if any */
	printf("%-16s %.3f s (the recorded nvcc time of every entry served)\n", "time saved",
	       (double)v[CJC_STAT_SAVED_MS] / 1000.0);
	if (v[CJC_STAT_LEASE_WAITS])
		printf("%-16s %llu (%llu of them waited their whole bound, then compiled)\n",
		       "lease waits", (unsigned long long)v[CJC_STAT_LEASE_WAITS],
		       (unsigned long long)v[CJC_STAT_LEASE_TIMEOUTS]);
	if (v[CJC_STAT_VERIFIED] || v[CJC_STAT_VERIFY_MISMATCHES] || v[CJC_STAT_VERIFY_SKIPPED])
		printf("%-16s %llu hits compiled again: %llu the same, %llu different (never served "
		       "again: `cjc why`), %llu skipped\n", "verified",
		       (unsigned long long)(v[CJC_STAT_VERIFIED] + v[CJC_STAT_VERIFY_MISMATCHES]),
		       (unsigned long long)v[CJC_STAT_VERIFIED],
		       (unsigned long long)v[CJC_STAT_VERIFY_MISMATCHES],
		       (unsigned long long)v[CJC_STAT_VERIFY_SKIPPED]);
	if (v[CJC_STAT_DAMAGED])
		printf("damaged entries were seen and skipped: run `cjc verify --fix` to repair\n");
}

static int stats_zero(struct session *s)
{
	if (require_writable(s, "stats --zero"))
		return 1;
	int rc = cjc_stats_zero(&s->store) ? 1 : 0;
	if (rc)
		fprintf(stderr, "cjc stats: cannot zero the counters: %s\n", strerror(errno));
	else if (!s->json)
		printf("counters zeroed\n");
	return rc;
}

/* --format: text, json (as --json) or openmetrics. */
static int stats_format(struct session *s, bool *openmetrics)
{
	const char *f = s->format ? s->format : "text";
	*openmetrics = !strcmp(f, "openmetrics");
	if (!strcmp(f, "json"))
		s->json = true;
	else if (strcmp(f, "text") && !*openmetrics) {
		fprintf(stderr, "cjc stats: --format takes text, json or openmetrics, not '%s'; "
			"see 'cjc --help'\n", f);
		return 2;
	}
	return 0;
}

static int cmd_stats(struct session *s)
{
	bool openmetrics;
	int rc = stats_format(s, &openmetrics);
	if (rc)
		return rc;
	if (s->zero)
		return stats_zero(s);
	if (openmetrics)
		return cjc_metrics_print(&s->store, s->cfg.max_size);
	uint64_t v[CJC_STAT_COUNT];
	struct cjc_stats_row *reasons = NULL, *targets = NULL, *remotes = NULL;
	size_t nreasons = 0, ntargets = 0, nremotes = 0;
	cjc_stats_read(&s->store, v);
	cjc_stats_read_named(&s->store, CJC_STATS_BY_REASON, &reasons, &nreasons);
	cjc_stats_read_named(&s->store, CJC_STATS_BY_REMOTE, &remotes, &nremotes);
	if (s->by_target)
		cjc_stats_read_named(&s->store, CJC_STATS_BY_TARGET, &targets, &ntargets);
	if (s->json) {
		json_t *o = counters_json(v, true);
		json_object_set_new(o, "max_size", json_integer((json_int_t)s->cfg.max_size));
		uint64_t bookkeeping = cjc_store_bookkeeping_bytes(&s->store);
		json_object_set_new(o, "bookkeeping_bytes", json_integer((json_int_t)bookkeeping));
		json_object_set_new(o, "disk_bytes",
				    json_integer((json_int_t)(v[CJC_STAT_BYTES] + bookkeeping)));
		json_object_set_new(o, "dir", cjc_json_bytes(s->store.dir));
		json_object_set_new(o, "uncacheable_reasons",
				    breakdown_json(reasons, nreasons, CJC_STAT_UNCACHEABLE));
		if (s->by_target) {
			uint64_t rest[CJC_STAT_COUNT];
			unlabeled(v, targets, ntargets, rest);
			json_object_set_new(o, "targets", breakdown_json(targets, ntargets, CJC_STAT_COUNT));
			json_object_set_new(o, "no_target", unlabeled_json(rest));
		}
		json_object_set_new(o, "remotes", remotes_json(remotes, nremotes));
		json_object_set_new(o, "bad_settings_by_setting", cjc_config_stats_json(&s->store));
		cjc_print_json(o);
	} else {
		print_stats(s, v, reasons, nreasons);
		print_remotes(remotes, nremotes);
		if (s->by_target)
			print_targets(v, targets, ntargets);
	}
	cjc_stats_rows_free(remotes, nremotes);
	cjc_stats_rows_free(reasons, nreasons);
	cjc_stats_rows_free(targets, ntargets);
	return 0;
}

static int cmd_remote(struct session *s)
{
	return cjc_remote_command(&s->cfg, &s->store, s->arg, s->json);
}

static int cmd_report(struct session *s)
{
	struct cjc_report_options o = { .dirs = s->merge.v, .ndirs = s->merge.n, .markdown = s->markdown };
	if (o.ndirs) /* copies of stores: the settings name none of them */
		return cjc_report(&o);
	int rc = open_session(s);
	if (rc)
		return rc;
	o.store = &s->store;
	o.max_size = s->cfg.max_size;
	rc = cjc_report(&o);
	close_session(s);
	return rc;
}

static int cmd_run(struct session *s)
{
	return cjc_run_command(s->rest, s->nrest, s->env);
}

static int cmd_why(struct session *s)
{
	return cjc_why_print(&s->store, s->arg, s->jit, s->json);
}

static int cmd_audit(struct session *s)
{
	struct cjc_audit_options opt = {
		.what = s->arg, .json = s->json, .jobs = s->jobs, .trusted_keys = s->cfg.trusted_keys
	};
	return cjc_audit(&s->store, &opt);
}

/* One row of `cjc ls` (index.h). */
static int add_row(const struct cjc_index_row *r, const char *dir, void *ctx)
{
	json_t *row = json_object();
	json_object_set_new(row, "key", json_string(r->key));
	json_object_set_new(row, "path", cjc_json_bytes(dir));
	if (r->damaged) {
		json_object_set_new(row, "damaged", cjc_json_bytes(r->damaged));
	} else {
		json_t *files = json_array();
		for (size_t i = 0; i < r->files.n; i++)
			json_array_append_new(files, json_string(r->files.v[i]));
		json_object_set_new(row, "kind", json_string(r->kind));
		json_object_set(row, "target", r->target);
		json_object_set_new(row, "size", json_integer((json_int_t)r->size));
		json_object_set_new(row, "stored_size", json_integer((json_int_t)r->stored));
		json_object_set(row, "created", r->created);
		json_object_set_new(row, "files", files);
	}
	json_array_append_new(ctx, row);
	return 0;
}

static int cmd_ls(struct session *s)
{
	json_t *rows = json_array();
	cjc_index_foreach(&s->store, add_row, rows);
	if (s->json) {
		cjc_print_json(rows);
	} else {
		size_t i;
		json_t *r;
		json_array_foreach(rows, i, r) {
			const char *key = json_string_value(json_object_get(r, "key"));
			if (json_object_get(r, "damaged")) {
				char *why = cjc_json_shown(json_object_get(r, "damaged"), "?");
				printf("%s  damaged: %s\n", key, why);
				free(why);
				continue;
			}
			char *target = cjc_json_shown(json_object_get(r, "target"), "-");
			char *kind = cjc_json_shown(json_object_get(r, "kind"), "?");
			char *created = cjc_json_shown(json_object_get(r, "created"), "?");
			printf("%s  %-18s %-20s %10lld  %s\n", key, kind, target,
			       (long long)json_integer_value(json_object_get(r, "stored_size")),
			       created);
			free(target);
			free(kind);
			free(created);
		}
		json_decref(rows);
	}
	return 0;
}

static void print_entry_summary(json_t *meta)
{
	static const char *const fields[] = { "key", "created", "command", "cwd", "target" };
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		char *v = cjc_json_shown(json_object_get(meta, fields[i]), "-");
		printf("%-14s %s\n", fields[i], v);
		free(v);
	}
	char *compiler = cjc_json_shown(json_object_get(json_object_get(meta, "compiler"), "realpath"), "?");
	printf("%-14s %s\n", "compiler", compiler);
	free(compiler);
	char *kind = cjc_json_shown(json_object_get(json_object_get(meta, "options"), "kind"),
				    CJC_JSON_NOT_TEXT);
	printf("%-14s %s\n", "kind", kind);
	free(kind);
	printf("%-14s %lld ms\n", "duration",
	       (long long)json_integer_value(json_object_get(meta, "duration_ms")));
	printf("%-14s %zu\n", "inputs", json_array_size(json_object_get(meta, "inputs")));
	const char *name;
	json_t *f;
	json_object_foreach(json_object_get(meta, "files"), name, f) {
		char *shown = cjc_printable(name);
		char *sha = cjc_json_shown(json_object_get(f, "sha256"), "?");
		printf("%-14s %s  %lld bytes  sha256 %s\n", "file", shown,
		       (long long)json_integer_value(json_object_get(f, "size")), sha);
		free(shown);
		free(sha);
	}
}

/* printf("%s", text) of a message that may quote what the store holds. */
static void print_escaped(FILE *to, const char *fmt, const char *a, const char *text, const char *b)
{
	char *shown = cjc_printable(text);
	fprintf(to, fmt, a, shown, b);
	free(shown);
}

static int cmd_show(struct session *s)
{
	int rc = 1;
	struct cjc_key_match p;
	cjc_store_find_key(&s->store, s->arg, &p);
	if (p.matches == 0) {
		fprintf(stderr, "cjc show: no entry has a key starting with '%s'\n", s->arg);
	} else if (p.matches > 1) {
		fprintf(stderr, "cjc show: '%s' names %zu entries: give more of the key\n", s->arg, p.matches);
	} else {
		struct cjc_entry e;
		struct cjc_buf why = CJC_BUF_INIT;
		if (cjc_entry_open_dir(p.dir, p.key, &e, &why) != CJC_ENTRY_FOUND) {
			print_escaped(stderr, "cjc show: entry %s is damaged: %s%s\n", p.key, why.data,
				      " (run `cjc verify --fix`)");
		} else {
			if (s->json)
				cjc_print_json(json_incref(e.meta));
			else
				print_entry_summary(e.meta);
			cjc_entry_release(&e);
			rc = 0;
		}
		cjc_buf_release(&why);
	}
	free(p.dir);
	return rc;
}

struct verify_run {
	struct session *s;
	json_t *bad;
	uint64_t checked, signed_ok, unsigned_n, not_served;
};

/* With trusted_keys: a false signature is damage; an entry that is unsigned
 * or signed by another key is only counted: served when you or root wrote
 * it (local compiles need no key), not when another user did (sign.h). */
static bool verify_signature(struct verify_run *v, const char *key, const struct cjc_entry *e,
			     struct cjc_buf *why)
{
	struct cjc_buf reason = CJC_BUF_INIT;
	uid_t writer;
	int rc = cjc_sign_verify_entry(e->dfd, v->s->cfg.trusted_keys, &reason);
	bool own = cjc_sign_written_by_self(e, &writer);
	if (!rc)
		v->signed_ok++;
	else if (rc == -1)
		v->unsigned_n++;
	if (rc == -1 && !own)
		v->not_served++;
	char *shown = cjc_printable(reason.data ? reason.data : "");
	if (rc == -1 && !v->s->json && own)
		printf("%s: %s (not damage: served locally, never from a remote store)\n", key, shown);
	else if (rc == -1 && !v->s->json)
		printf("%s: %s (not damage, but not served: written by uid %ld, not you or root)\n",
		       key, shown, (long)writer);
	free(shown);
	if (rc == -2)
		cjc_buf_addf(why, "%s", reason.data);
	cjc_buf_release(&reason);
	return rc != -2;
}

static int verify_one(const char *key, const char *dir, void *ctx)
{
	struct verify_run *v = ctx;
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	v->checked++;
	enum cjc_lookup r = cjc_entry_open_dir(dir, key, &e, &why);
	bool ok = r == CJC_ENTRY_FOUND && !cjc_entry_verify(&e, &why);
	if (ok && v->s->cfg.trusted_keys)
		ok = verify_signature(v, key, &e, &why);
	if (r == CJC_ENTRY_FOUND)
		cjc_entry_release(&e);
	if (!ok) {
		json_t *row = json_pack("{s:s, s:s, s:s}", "key", key, "path", dir, "reason", why.data);
		if (v->s->fix) {
			char *dest;
			bool moved = !cjc_store_quarantine(&v->s->store, key, &dest);
			json_object_set_new(row, "quarantined", moved ? cjc_json_bytes(dest) : json_null());
			free(dest);
		}
		if (!v->s->json)
			print_escaped(stdout, "%s: %s%s\n", key, why.data ? why.data : "",
				      v->s->fix ? " (moved to quarantine)" : "");
		json_array_append_new(v->bad, row);
	}
	cjc_buf_release(&why);
	return 0;
}

static int cmd_verify(struct session *s)
{
	if (s->fix && require_writable(s, "verify --fix"))
		return 1;
	struct verify_run v = { .s = s, .bad = json_array() };
	cjc_store_foreach_entry(&s->store, verify_one, &v);
	size_t nbad = json_array_size(v.bad);
	if (s->json) {
		json_t *o = json_pack("{s:I, s:I, s:O}", "checked", (json_int_t)v.checked, "bad",
				      (json_int_t)nbad, "entries", v.bad);
		if (s->cfg.trusted_keys)
			json_object_set_new(o, "signatures", json_pack("{s:I, s:I, s:I}", "trusted",
				(json_int_t)v.signed_ok, "unsigned_or_untrusted", (json_int_t)v.unsigned_n,
				"not_served", (json_int_t)v.not_served));
		cjc_print_json(o);
	} else {
		printf("%llu entries checked, %zu bad%s\n", (unsigned long long)v.checked, nbad,
		       nbad && !s->fix ? ": run `cjc verify --fix` to quarantine them" : "");
		if (s->cfg.trusted_keys)
			printf("signatures: %llu by a trusted key, %llu unsigned or by another key "
			       "(%llu of them written by another user: not served)\n",
			       (unsigned long long)v.signed_ok, (unsigned long long)v.unsigned_n,
			       (unsigned long long)v.not_served);
	}
	json_decref(v.bad);
	return nbad ? 1 : 0;
}

static int cmd_clean(struct session *s)
{
	struct cjc_clean_report r;
	int rc = require_writable(s, "clean");
	if (!rc && cjc_store_clean(&s->store, &r)) {
		fprintf(stderr, "cjc clean: removed %llu entries; %llu could not be removed: %s\n",
			(unsigned long long)r.removed, (unsigned long long)r.failed, strerror(errno));
		rc = 1;
	} else if (!rc && !s->json) {
		printf("cache emptied: %s (%llu entries removed)\n", s->store.dir,
		       (unsigned long long)r.removed);
	}
	return rc;
}

/* gc, after evicting: the manifests and hash caches of what went (maintain.h);
 * hash caches only when entries went or none is left. */
static int reclaim_bookkeeping(struct session *s, const struct cjc_evict_report *r)
{
	struct cjc_bookkeeping_report b;
	static const struct timespec none = { 0, 0 };
	bool any_left = r->oldest_left.tv_sec || r->oldest_left.tv_nsec;
	const struct timespec *hashes_before = !any_left ? NULL : r->evicted ? &r->oldest_left : &none;
	int rc = cjc_store_reclaim_bookkeeping(&s->store, hashes_before, &b);
	if (rc)
		fprintf(stderr, "cjc gc: cannot reclaim every manifest and hash cache: %s\n", strerror(errno));
	printf("reclaimed %lu manifests and %lu hash caches that served no entry left; %llu bytes of "
	       "manifests and hash caches left\n", b.manifests, b.hash_caches, (unsigned long long)b.bytes);
	return rc ? 1 : 0;
}

static int cmd_gc(struct session *s)
{
	uint64_t max_size = s->max_size;
	int64_t age = s->age;
	int rc = 0;
	if (require_writable(s, "gc"))
		return 1;
	if (!max_size)
		max_size = s->cfg.max_size;
	struct cjc_reclaim_report rr;
	if (cjc_store_reclaim(&s->store, age >= 0 ? age : 86400, &rr)) {
		fprintf(stderr, "cjc gc: cannot reclaim everything: %s\n", strerror(errno));
		rc = 1;
	}
	/* hash caches count against max_size too: entries get what they leave */
	if (max_size)
		max_size = max_size > rr.hash_bytes ? max_size - rr.hash_bytes : 1;
	struct cjc_evict_report r;
	int64_t t0 = cjc_now_ms();
	if (cjc_evict_store(&s->store, max_size, age, &r)) {
		fprintf(stderr, "cjc gc: cannot read the entries: %s\n", strerror(errno));
		rc = 1;
	}
	printf("reclaimed %lu orphaned staging director%s (left %lu in use), %lu temporary "
	       "files of killed writers, %lu unused hash caches (%llu bytes of them left)\n",
	       rr.staging, rr.staging == 1 ? "y" : "ies", rr.staging_kept, rr.temporaries,
	       rr.hash_caches, (unsigned long long)rr.hash_bytes);
	printf("evicted %llu of %llu entries (%llu of %llu bytes) in %.3f s\n",
	       (unsigned long long)r.evicted, (unsigned long long)r.entries,
	       (unsigned long long)r.evicted_bytes, (unsigned long long)r.bytes,
	       (double)(cjc_now_ms() - t0) / 1000.0);
	return reclaim_bookkeeping(s, &r) | rc;
}

static int cmd_config(struct session *s)
{
	return cjc_config_show(s->json); /* config_cmd.c */
}

static int cmd_version(struct session *s)
{
	(void)s;
	printf("cjc %s\n", CJC_VERSION);
	return 0;
}

static int cmd_help(struct session *s)
{
	(void)s;
	cjc_usage(stdout);
	return 0;
}

static const struct flag json_only[] = { JSON, END };
static const struct flag no_flags[] = { END };
static const struct flag audit_flags[] = { JSON, FLAG("--jobs", FLAG_JOBS, jobs, "N"), END };
static const struct flag gc_flags[] = {
	FLAG("--max-size", FLAG_SIZE, max_size, "SIZE"), FLAG("--older-than", FLAG_AGE, age, "AGE"), END
};
static const struct flag stats_flags[] = {
	JSON, FLAG("--zero", FLAG_BOOL, zero, NULL), FLAG("--by-target", FLAG_BOOL, by_target, NULL),
	FLAG("--format", FLAG_WORD, format, "text|json|openmetrics"), END
};
static const struct flag report_flags[] = {
	FLAG("--markdown", FLAG_BOOL, markdown, NULL), FLAG("--merge", FLAG_LIST, merge, "DIR..."), END
};
static const struct flag verify_flags[] = { FLAG("--fix", FLAG_BOOL, fix, NULL), JSON, END };
static const struct flag run_flags[] = { FLAG("--env", FLAG_BOOL, env, NULL), END };
static const struct flag why_flags[] = { FLAG("--jit", FLAG_BOOL, jit, NULL), JSON, END };

static const struct cjc_command commands[] = {
	{ "--help", cmd_help, NULL, no_flags, NULL, false, false },
	{ "--version", cmd_version, NULL, no_flags, NULL, false, false },
	{ "audit", cmd_audit, "rebuild entries from their metadata and compare (a unique key prefix will do)",
	  audit_flags, "KEY|all", true, false },
	{ "clean", cmd_clean, "remove every entry, safely while builds run", json_only, NULL, true, false },
	{ "config", cmd_config, "show the effective settings, where each came from and the files read; "
	  "`cjc config set KEY VALUE` writes one into your settings file", json_only, NULL,
	  false, false },
	{ "gc", cmd_gc, "evict least recently used entries; reclaim orphaned staging and old hash "
	  "caches (other hosts' and unused: older than AGE, default 1d)", gc_flags, NULL, true, false },
	{ "help", cmd_help, "show this help", no_flags, NULL, false, false },
	{ "ls", cmd_ls, "list the entries", json_only, NULL, true, false },
	{ "remote", cmd_remote, "check the remote stores end to end (reach, read, write, read back), or "
	  "upload every local entry to them", json_only, "check|upload", true, false },
	{ "report", cmd_report, "one HTML page (or --markdown, a CI job summary) of what the cache did: "
	  "hit rate over time, time saved by target, why compiles missed; --merge adds up copies of "
	  "stores", report_flags, NULL, false, false },
	{ "run", cmd_run, "run PROGRAM with the NVRTC shim in front of its NVRTC (docs/nvrtc-shim.md), "
	  "or (--env) print the variables that do it", run_flags, NULL, false, true },
	{ "show", cmd_show, "show an entry's metadata (a unique key prefix will do)", json_only, "KEY",
	  true, false },
	{ "stats", cmd_stats, "show the counters", stats_flags, NULL, true, false },
	{ "verify", cmd_verify, "check every entry as a read does", verify_flags, NULL, true, false },
	{ "why", cmd_why, "say why the last compile of OUTPUT|SOURCE, or (--jit) of the JIT "
	  "library's request NAME or PREFIX:NAME, hit or missed", why_flags, "OUTPUT|SOURCE|NAME",
	  true, false },
};

static const struct cjc_command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

bool cjc_is_command(const char *name)
{
	return find_command(name) != NULL || !strcmp(name, "__watch");
}

/* The optimal string alignment distance (Levenshtein with transpositions),
 * for words up to 31 bytes; longer: far. */
static size_t distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b), d[32][32];
	if (n > 31 || m > 31)
		return 99;
	for (size_t i = 0; i <= n; i++)
		for (size_t j = 0; j <= m; j++) {
			size_t best = i && j ? d[i - 1][j - 1] + (a[i - 1] != b[j - 1]) : i + j;
			if (i && d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (j && d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[n][m];
}

const char *cjc_command_nearest(const char *word)
{
	size_t len = strlen(word), most = len <= 3 ? 1 : 2, best = most + 1;
	const char *near = NULL;
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
		if ((word[0] == '-') != (commands[i].name[0] == '-'))
			continue; /* -c is no misspelt gc */
		size_t d = distance(word, commands[i].name);
		if (d < best && d < len)
			best = d, near = commands[i].name;
	}
	return near;
}

int cjc_command_run(int argc, char **argv)
{
	const struct cjc_command *c = find_command(argv[0]);
	struct session s = { .cmd = argv[0], .age = -1, .jobs = 1 };
	if (argc == 1 && !strcmp(argv[0], "__watch"))
		return cjc_watch_serve(); /* opens no store, as the HTTP helper */
	if (argc == 2 && !strcmp(argv[0], "remote") && !strcmp(argv[1], "helper"))
		return cjc_helper_serve(); /* opens no store: it would keep it open for minutes */
	if (argc >= 2 && !strcmp(argv[0], "config") && !strcmp(argv[1], "set"))
		return cjc_config_set(argc - 1, argv + 1); /* config_cmd.c */
	int rc = parse_flags(c, argc, argv, &s);
	if (!rc && c->store)
		rc = open_session(&s);
	if (rc) {
		cjc_strvec_clear(&s.merge);
		return rc;
	}
	rc = c->fn(&s);
	if (c->store)
		close_session(&s);
	cjc_strvec_clear(&s.merge);
	return rc;
}

/* "  gc       [--max-size SIZE] [--older-than AGE]" and its help below. */
static void usage_of(FILE *out, const struct cjc_command *c)
{
	struct cjc_buf line = CJC_BUF_INIT;
	cjc_buf_addf(&line, "  %-8s", c->name);
	if (c->arg)
		cjc_buf_addf(&line, " %s", c->arg);
	for (const struct flag *f = c->flags; f->name; f++)
		cjc_buf_addf(&line, " [%s%s%s]", f->name, f->value ? " " : "", f->value ? f->value : "");
	if (c->rest)
		cjc_buf_adds(&line, " [--] PROGRAM [ARG...]");
	while (line.len && line.data[line.len - 1] == ' ')
		line.data[--line.len] = '\0';
	fprintf(out, "%s\n           %s\n", line.data, c->help);
	cjc_buf_release(&line);
}

void cjc_usage(FILE *out)
{
	fprintf(out, "usage: cjc [--target NAME] [--wrap LAUNCHER]... [--] nvcc ARG...   compile "
		     "through the cache\n"
		     "       cjc ptxas ARG...   assemble PTX through the cache (Triton's ptxas)\n"
		     "       cjc SUBCOMMAND [OPTION...]\n\nsubcommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (commands[i].help)
			usage_of(out, &commands[i]);
	fprintf(out, "  --version\n\nsettings (a file named by CJC_CONFIG, else the store's "
		     "cudajitcache.conf; `cjc config` shows them):\n");
	for (int i = 0; i < CJC_SET_COUNT; i++)
		fprintf(out, "  %-15s %-19s %s\n", cjc_config_name(i), cjc_config_env(i), cjc_config_help(i));
}
