/*
 * `cjc report` (report.h): gathers the counters and the journals of one
 * store or several into the model (report_model.h), then hands it to the
 * HTML or the Markdown writer (report_html.h, report_md.h).
 */
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "keys/metadata.h"
#include "report_html.h"
#include "report_md.h"
#include "report_model.h"
#include "why.h"

/* Adds rows into a breakdown by name: a search of the rows so far for each
 * (at most 257 a store: quadratic, and small). */
static void merge_rows(struct cjc_stats_row **into, size_t *n, const struct cjc_stats_row *rows,
		       size_t nrows)
{
	for (size_t i = 0; i < nrows; i++) {
		size_t k = 0;
		while (k < *n && strcmp((*into)[k].name, rows[i].name))
			k++;
		if (k == *n) {
			*into = cjc_xrealloc(*into, (*n + 1) * sizeof **into);
			memset(&(*into)[k], 0, sizeof **into);
			(*into)[k].name = cjc_xstrdup(rows[i].name);
			++*n;
		}
		for (int c = 0; c < CJC_STAT_COUNT; c++)
			(*into)[k].v[c] += rows[i].v[c];
	}
}

static void add_breakdown(const struct cjc_store *s, enum cjc_stats_breakdown b,
			  struct cjc_stats_row **into, size_t *n)
{
	struct cjc_stats_row *rows = NULL;
	size_t nrows = 0;
	cjc_stats_read_named(s, b, &rows, &nrows);
	merge_rows(into, n, rows, nrows);
	cjc_stats_rows_free(rows, nrows);
}

/*
 * One journal line: its time and result, and for a miss, its cause, and
 * whether it is among the slowest.
 */
enum member { M_TIME, M_RESULT, M_DURATION, M_SOURCE, M_OUTPUT, M_TARGET, M_CWD, M_ENTRY,
	      M_REASON, M_NOTE, M_COMPARED, M_CHANGES, M_JIT, M_COUNT };

static const char *const member_names[M_COUNT] = {
	[M_TIME] = "time", [M_RESULT] = "result", [M_DURATION] = "duration_ms",
	[M_SOURCE] = "source", [M_OUTPUT] = "output", [M_TARGET] = "target", [M_CWD] = "cwd",
	[M_ENTRY] = "entry", [M_REASON] = "reason", [M_NOTE] = "note",
	[M_COMPARED] = "compared_with", [M_CHANGES] = "changes", [M_JIT] = "jit",
};

static const char *const result_words[R_RESULTS] = {
	[R_HIT] = "\"hit\"", [R_MISS] = "\"miss\"", [R_FAILED] = "\"failed\"",
	[R_UNCACHEABLE] = "\"uncacheable\"", [R_ERROR] = "\"error\"",
};

static int result_of(const struct cjc_journal_member *m)
{
	for (int i = 0; m->value && i < R_RESULTS; i++)
		if (m->len == strlen(result_words[i]) && !memcmp(m->value, result_words[i], m->len))
			return i;
	return -1;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int64_t digits(const char *p, int n)
{
	int64_t v = 0;
	while (n--)
		v = v * 10 + (*p++ - '0');
	return v;
}

/* Seconds since the epoch of "YYYY-MM-DDTHH:MM:SSZ" with its quotes, as
 * records write it; -1 when it is not that. */
static int64_t time_of(const struct cjc_journal_member *m)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	const char *v = m->value;
	if (!v || m->len != sizeof shape + 1 || v[0] != '"' || v[m->len - 1] != '"')
		return -1;
	for (size_t i = 0; i < sizeof shape - 1; i++)
		if (shape[i] == 'd' ? v[1 + i] < '0' || v[1 + i] > '9' : v[1 + i] != shape[i])
			return -1;
	int64_t mo = digits(v + 6, 2), d = digits(v + 9, 2);
	if (mo < 1 || mo > 12 || d < 1 || d > 31)
		return -1;
	return days_from_civil(digits(v + 1, 4), mo, d) * 86400 + digits(v + 12, 2) * 3600 +
	       digits(v + 15, 2) * 60 + digits(v + 18, 2);
}

/* The members of a miss that `cjc why` words, decoded (facts are left out). */
static json_t *miss_record(const struct cjc_journal_member *m, const int *which, size_t n)
{
	json_t *r = json_object();
	for (size_t i = 0; i < n; i++) {
		const struct cjc_journal_member *one = &m[which[i]];
		json_t *v = one->value ? json_loadb(one->value, one->len, JSON_DECODE_ANY, NULL) : NULL;
		if (v)
			json_object_set_new(r, member_names[which[i]], v);
	}
	return r;
}

static const int all_members[] = { M_TIME, M_RESULT, M_DURATION, M_SOURCE, M_OUTPUT, M_TARGET,
				    M_CWD, M_ENTRY, M_REASON, M_NOTE, M_COMPARED, M_CHANGES, M_JIT };
static const int lookup_members[] = { M_REASON, M_NOTE, M_COMPARED };

/* The kind of a miss's first change, decoded alone ("changes" holds paths
 * and hashes): NULL when there is no change, JSON null when the first is
 * not an object with a kind. */
static json_t *first_change_kind(const struct cjc_journal_member *changes)
{
	const char *p = changes->value, *end = p ? p + changes->len : NULL;
	if (!p || *p++ != '[')
		return NULL;
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
		p++;
	if (p >= end || *p == ']')
		return NULL;
	struct cjc_journal_member kind = { .name = "kind" };
	size_t n = cjc_journal_value_len(p, (size_t)(end - p));
	json_t *v = n && !cjc_journal_skim(p, n, &kind, 1) && kind.value ?
		json_loadb(kind.value, kind.len, JSON_DECODE_ANY, NULL) : NULL;
	return v ? v : json_null();
}

/* What cjc_why_cause() reads of a miss: the first change's kind, or, when
 * there is none, what the lookup found. */
static json_t *cause_record(const struct cjc_journal_member *m)
{
	json_t *kind = first_change_kind(&m[M_CHANGES]);
	if (!kind)
		return miss_record(m, lookup_members, sizeof lookup_members / sizeof *lookup_members);
	return json_pack("{s:[{s:o}]}", "changes", "kind", kind);
}

/* A kept line (an example, one of the slowest), decoded when the report is
 * written: most misses are neither, and decoding is most of the cost. */
static json_t *kept_record(const struct cjc_buf *line)
{
	struct cjc_journal_member m[M_COUNT];
	for (int i = 0; i < M_COUNT; i++)
		m[i].name = member_names[i];
	cjc_journal_skim(line->data, line->len, m, M_COUNT);
	return miss_record(m, all_members, sizeof all_members / sizeof *all_members);
}

static void keep_line(struct cjc_buf *kept, const char *line, size_t n)
{
	cjc_buf_reset(kept);
	cjc_buf_add(kept, line, n);
}

/* A member's JSON integer, or 0. */
static int64_t integer_of(const struct cjc_journal_member *m)
{
	char text[24];
	if (!m->value || m->len >= sizeof text)
		return 0;
	memcpy(text, m->value, m->len);
	text[m->len] = '\0';
	return strtoll(text, NULL, 10);
}

static struct report_cause *cause_slot(struct report *r, const char *cause)
{
	for (size_t i = 0; i < r->ncauses; i++)
		if (!strcmp(r->causes[i].cause, cause))
			return &r->causes[i];
	if (r->ncauses >= REPORT_CAUSES - 1 && strcmp(cause, "(other)"))
		return cause_slot(r, "(other)"); /* the last slot */
	r->causes[r->ncauses].cause = cause;
	return &r->causes[r->ncauses++];
}

/* Keeps the line when it is among the REPORT_TOP slowest misses. */
static void keep_if_slow(struct report *r, int64_t ms, const char *line, size_t n)
{
	size_t i = r->nslowest;
	if (i == REPORT_TOP && ms <= r->slowest_ms[i - 1])
		return;
	struct cjc_buf spare = i == REPORT_TOP ? r->slowest_lines[--i] : (struct cjc_buf)CJC_BUF_INIT;
	for (; i && ms > r->slowest_ms[i - 1]; i--) {
		r->slowest_ms[i] = r->slowest_ms[i - 1];
		r->slowest_lines[i] = r->slowest_lines[i - 1];
	}
	r->slowest_ms[i] = ms;
	r->slowest_lines[i] = spare;
	keep_line(&r->slowest_lines[i], line, n);
	if (r->nslowest < REPORT_TOP)
		r->nslowest++;
}

/* Records are appended in time order, so the last one read is the latest;
 * of several stores, the time decides (RFC 3339 UTC sorts as text). */
static bool newer(const struct cjc_journal_member *time, const char *than, size_t than_len)
{
	size_t n = time->len < than_len ? time->len : than_len;
	int c = time->value ? memcmp(time->value, than, n) : -1;
	return c > 0 || (c == 0 && time->len >= than_len);
}

static void count_miss(struct report *r, const struct cjc_journal_member *m, const char *line,
		       size_t n)
{
	json_t *rec = cause_record(m);
	struct report_cause *c = cause_slot(r, cjc_why_cause(rec));
	json_decref(rec);
	if (!c->misses++ || newer(&m[M_TIME], c->example_time, c->example_time_len)) {
		keep_line(&c->line, line, n);
		c->example_time_len = m[M_TIME].value && m[M_TIME].len < sizeof c->example_time ?
			m[M_TIME].len : 0;
		memcpy(c->example_time, m[M_TIME].value ? m[M_TIME].value : "", c->example_time_len);
	}
	keep_if_slow(r, integer_of(&m[M_DURATION]), line, n);
}

static void add_point(struct report *r, int64_t t, int result)
{
	if (r->npoints == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 4096;
		r->points = cjc_xrealloc(r->points, r->cap * sizeof *r->points);
	}
	r->points[r->npoints++] = (uint64_t)t << 3 | (uint64_t)result;
}

static int take_line(const char *line, size_t n, void *ctx)
{
	struct report *r = ctx;
	struct cjc_journal_member m[M_COUNT];
	for (int i = 0; i < M_COUNT; i++)
		m[i].name = member_names[i];
	int result = cjc_journal_skim(line, n, m, M_COUNT) ? -1 : result_of(&m[M_RESULT]);
	if (result < 0) {
		r->skipped++;
		return 0;
	}
	r->results[result]++;
	int64_t t = time_of(&m[M_TIME]);
	if (t >= 0)
		add_point(r, t, result);
	if (result == R_MISS)
		count_miss(r, m, line, n);
	return 0;
}

/* One store's counters, breakdowns and journal into the report. */
static int add_store(struct report *r, const struct cjc_store *s)
{
	r->stores = cjc_xrealloc(r->stores, (r->nstores + 1) * sizeof *r->stores);
	struct report_store *one = &r->stores[r->nstores++];
	memset(one, 0, sizeof *one);
	one->dir = cjc_xstrdup(s->dir);
	cjc_stats_read(s, one->v);
	for (int i = 0; i < CJC_STAT_COUNT; i++)
		r->v[i] += one->v[i];
	add_breakdown(s, CJC_STATS_BY_TARGET, &r->targets, &r->ntargets);
	add_breakdown(s, CJC_STATS_BY_REASON, &r->reasons, &r->nreasons);
	add_breakdown(s, CJC_STATS_BY_REMOTE, &r->remotes, &r->nremotes);
	add_breakdown(s, CJC_STATS_BY_SETTING, &r->settings, &r->nsettings);
	if (cjc_journal_scan(s, take_line, r, &one->journal)) {
		fprintf(stderr, "cjc report: cannot read all of the journal of %s: %s\n", s->dir,
			strerror(errno));
		return -1;
	}
	r->skipped += one->journal.skipped; /* lines over CJC_JOURNAL_MAX_LINE */
	return 0;
}

static void decode_kept(struct report *r)
{
	for (size_t i = 0; i < r->ncauses; i++)
		r->causes[i].example = kept_record(&r->causes[i].line);
	for (size_t i = 0; i < r->nslowest; i++)
		r->slowest[i] = kept_record(&r->slowest_lines[i]);
}

static void report_release(struct report *r)
{
	for (size_t i = 0; i < r->nstores; i++)
		free(r->stores[i].dir);
	free(r->stores);
	cjc_stats_rows_free(r->targets, r->ntargets);
	cjc_stats_rows_free(r->reasons, r->nreasons);
	cjc_stats_rows_free(r->remotes, r->nremotes);
	cjc_stats_rows_free(r->settings, r->nsettings);
	for (size_t i = 0; i < r->ncauses; i++) {
		json_decref(r->causes[i].example);
		cjc_buf_release(&r->causes[i].line);
	}
	for (size_t i = 0; i < r->nslowest; i++) {
		json_decref(r->slowest[i]);
		cjc_buf_release(&r->slowest_lines[i]);
	}
	free(r->points);
	free(r->buckets);
}

/* Each --merge directory, as a store that must exist. */
static int add_dirs(struct report *r, char *const *dirs, size_t n)
{
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		struct cjc_store s;
		if (cjc_store_open_existing(&s, dirs[i])) {
			fprintf(stderr, "cjc report: %s is not a readable cjc store: %s\n", dirs[i],
				strerror(errno));
			rc = 1;
			continue;
		}
		if (add_store(r, &s))
			rc = 1;
		cjc_store_close(&s);
	}
	return rc;
}

int cjc_report(const struct cjc_report_options *o)
{
	struct report r = { .max_size = o->store ? o->max_size : 0 };
	int rc = o->store ? (add_store(&r, o->store) ? 1 : 0) : add_dirs(&r, o->dirs, o->ndirs);
	if (rc) { /* a report that leaves a store out would add up wrong */
		report_release(&r);
		return rc;
	}
	report_make_buckets(&r);
	decode_kept(&r);
	cjc_rfc3339_now(r.generated);
	struct cjc_buf out = CJC_BUF_INIT;
	if (o->markdown)
		report_write_markdown(&r, &out);
	else
		report_write_html(&r, &out);
	if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout)) {
		fprintf(stderr, "cjc report: cannot write the report: %s\n", strerror(errno));
		rc = 1;
	}
	cjc_buf_release(&out);
	report_release(&r);
	return rc;
}
