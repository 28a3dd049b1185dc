/*
 * The report as GitHub-flavoured Markdown (report_md.h), for a CI job's page:
 * `cjc report --markdown >>"$GITHUB_STEP_SUMMARY"`.  The same numbers as
 * the HTML page, in tables; the hit rate over time as a line of blocks.
 */
#include "report_md.h"

#include <stdlib.h>
#include <string.h>

#include "why.h"

/* Text from a store, for a table cell: control characters escaped, then
 * what Markdown or HTML would act on. */
static void md(struct cjc_buf *b, const char *s)
{
	char *shown = cjc_printable(s ? s : "?");
	for (const char *p = shown; *p; p++) {
		if (*p == '&')
			cjc_buf_adds(b, "&amp;");
		else if (strchr("\\`*_[]<>|~", *p))
			cjc_buf_addf(b, "\\%c", *p);
		else
			cjc_buf_add(b, p, 1);
	}
	free(shown);
}

static void counts_table(struct cjc_buf *b, const struct report *r)
{
	const uint64_t *v = r->v;
	cjc_buf_addf(b, "## CudaJitCache: %.1f %% hits\n\n",
		     report_hit_rate(v[CJC_STAT_HITS], v[CJC_STAT_MISSES]));
	cjc_buf_adds(b, "| hits | misses | time saved | uncacheable | failed | errors | store |\n"
		     "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	cjc_buf_addf(b, "| %llu | %llu | ", (unsigned long long)v[CJC_STAT_HITS],
		     (unsigned long long)v[CJC_STAT_MISSES]);
	report_duration(b, v[CJC_STAT_SAVED_MS]);
	cjc_buf_addf(b, " | %llu | %llu | %llu | ", (unsigned long long)v[CJC_STAT_UNCACHEABLE],
		     (unsigned long long)v[CJC_STAT_COMPILE_FAILED], (unsigned long long)v[CJC_STAT_ERRORS]);
	report_bytes(b, v[CJC_STAT_BYTES]);
	cjc_buf_addf(b, " in %llu entries", (unsigned long long)v[CJC_STAT_ENTRIES]);
	if (v[CJC_STAT_EVICTED])
		cjc_buf_addf(b, ", %llu evicted", (unsigned long long)v[CJC_STAT_EVICTED]);
	cjc_buf_adds(b, " |\n\n");
}

/* Compiles that ran with a broken setting (config.h): a warning, and which. */
static void bad_settings(struct cjc_buf *b, const struct report *r)
{
	if (!r->v[CJC_STAT_BAD_SETTINGS] && !r->nsettings)
		return;
	cjc_buf_addf(b, "> **Warning:** %llu compiles ran with a broken setting (run `cjc config`):",
		     (unsigned long long)r->v[CJC_STAT_BAD_SETTINGS]);
	for (size_t i = 0; i < r->nsettings; i++) {
		cjc_buf_adds(b, i ? ", " : " ");
		md(b, r->settings[i].name);
		cjc_buf_addf(b, " (%llu)", (unsigned long long)r->settings[i].v[CJC_STAT_BAD_SETTINGS]);
	}
	cjc_buf_adds(b, "\n\n");
}

/* "Hit rate per hour: ▁▃▇█ (from ... to ...)"; a dot where nothing was looked up. */
static void sparkline(struct cjc_buf *b, const struct report *r)
{
	static const char *const blocks[] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
	if (!r->nbuckets)
		return;
	cjc_buf_addf(b, "Hit rate over time, %s each: `", report_bucket_name(r->bucket_s));
	for (size_t i = 0; i < r->nbuckets; i++) {
		const struct report_bucket *k = &r->buckets[i];
		double rate = report_hit_rate(k->n[R_HIT], k->n[R_MISS]);
		cjc_buf_adds(b, k->n[R_HIT] || k->n[R_MISS] ? blocks[(int)(rate * 7.0 / 100.0 + 0.5)] : "·");
	}
	cjc_buf_adds(b, "` from ");
	report_time(b, r->buckets[0].start);
	cjc_buf_adds(b, " to ");
	report_time(b, r->buckets[r->nbuckets - 1].start + r->bucket_s);
	cjc_buf_addf(b, " (%zu compiles in the journal).\n\n", r->npoints);
}

static void targets(struct cjc_buf *b, const struct report *r)
{
	if (!r->ntargets)
		return;
	struct cjc_stats_row *rows = report_sorted_targets(r);
	cjc_buf_adds(b, "### Time saved by target\n\n| target | hits | misses | hit rate | time saved |\n"
		     "| --- | ---: | ---: | ---: | ---: |\n");
	for (size_t i = 0; i < r->ntargets && i < REPORT_TOP; i++) {
		const uint64_t *v = rows[i].v;
		cjc_buf_adds(b, "| ");
		md(b, rows[i].name);
		cjc_buf_addf(b, " | %llu | %llu | %.1f %% | ", (unsigned long long)v[CJC_STAT_HITS],
			     (unsigned long long)v[CJC_STAT_MISSES],
			     report_hit_rate(v[CJC_STAT_HITS], v[CJC_STAT_MISSES]));
		report_duration(b, v[CJC_STAT_SAVED_MS]);
		cjc_buf_adds(b, " |\n");
	}
	if (r->ntargets > REPORT_TOP)
		cjc_buf_addf(b, "| *%zu more targets* | | | | |\n", r->ntargets - REPORT_TOP);
	cjc_buf_adds(b, "\n");
	free(rows);
}

/* `cjc why`'s words for a miss, then what and when. */
static void miss_words(struct cjc_buf *b, json_t *rec)
{
	char *words = cjc_why_summary(rec), *what = report_compiled(rec);
	md(b, words);
	cjc_buf_adds(b, " — ");
	md(b, what);
	cjc_buf_adds(b, ", ");
	md(b, report_record_time(rec));
	free(words);
	free(what);
}

static void causes(struct cjc_buf *b, const struct report *r)
{
	struct report_cause sorted[REPORT_CAUSES];
	if (!r->ncauses)
		return;
	report_sorted_causes(r, sorted);
	cjc_buf_adds(b, "### Why compiles missed\n\n| cause | misses | latest example |\n| --- | ---: | --- |\n");
	for (size_t i = 0; i < r->ncauses; i++) {
		cjc_buf_adds(b, "| ");
		md(b, sorted[i].cause);
		cjc_buf_addf(b, " | %llu | ", (unsigned long long)sorted[i].misses);
		miss_words(b, sorted[i].example);
		cjc_buf_adds(b, " |\n");
	}
	cjc_buf_adds(b, "\n");
}

static void slowest(struct cjc_buf *b, const struct report *r)
{
	if (!r->nslowest)
		return;
	cjc_buf_adds(b, "### Slowest misses\n\n| nvcc time | what missed, and why |\n| ---: | --- |\n");
	for (size_t i = 0; i < r->nslowest; i++) {
		cjc_buf_adds(b, "| ");
		report_duration(b, (uint64_t)json_integer_value(json_object_get(r->slowest[i], "duration_ms")));
		cjc_buf_adds(b, " | ");
		miss_words(b, r->slowest[i]);
		cjc_buf_adds(b, " |\n");
	}
	cjc_buf_adds(b, "\n");
}

static void remotes(struct cjc_buf *b, const struct report *r)
{
	if (!r->nremotes)
		return;
	cjc_buf_adds(b, "### Remote stores\n\n| store | hits | misses | errors | timeouts |\n"
		     "| --- | ---: | ---: | ---: | ---: |\n");
	for (size_t i = 0; i < r->nremotes; i++) {
		const uint64_t *v = r->remotes[i].v;
		cjc_buf_adds(b, "| ");
		md(b, r->remotes[i].name);
		cjc_buf_addf(b, " | %llu | %llu | %llu | %llu |\n", (unsigned long long)v[CJC_STAT_REMOTE_HITS],
			     (unsigned long long)v[CJC_STAT_REMOTE_MISSES],
			     (unsigned long long)v[CJC_STAT_REMOTE_ERRORS],
			     (unsigned long long)v[CJC_STAT_REMOTE_TIMEOUTS]);
	}
	cjc_buf_adds(b, "\n");
}

void report_write_markdown(const struct report *r, struct cjc_buf *out)
{
	counts_table(out, r);
	bad_settings(out, r);
	sparkline(out, r);
	targets(out, r);
	causes(out, r);
	slowest(out, r);
	remotes(out, r);
	cjc_buf_addf(out, "<sub>cjc %s, %zu store%s, %s</sub>\n", CJC_VERSION, r->nstores,
		     r->nstores == 1 ? "" : "s", r->generated);
}
