/*
 * The report as one self-contained HTML page (report_html.h): a <style> block,
 * inline SVG plots, no script, and a Content-Security-Policy under which
 * the page can load nothing (a browser says so on its console if it tried).
 * The layout is one column of sections whose cards and tables reflow from a
 * phone's width to a monitor's; wide tables scroll inside their section.
 */
#include "report_html.h"

#include <stdlib.h>
#include <string.h>

#include "why.h"

static const char style[] =
	":root{--fg:#1f2328;--bg:#fff;--muted:#59636e;--line:#d1d9e0;--card:#f6f8fa;"
	"--hit:#1a7f37;--miss:#d1651a;--fail:#cf222e;--unc:#8c959f;--err:#8250df}\n"
	"@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;"
	"--line:#3d444d;--card:#151b23;--hit:#3fb950;--miss:#f0883e}}\n"
	"*{box-sizing:border-box}\n"
	"body{margin:0 auto;max-width:72rem;padding:1rem 1.2rem 2rem;color:var(--fg);"
	"background:var(--bg);font:15px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}\n"
	"h1{font-size:1.45rem;margin:.3rem 0}\n"
	"h2{font-size:1.1rem;margin:1.8rem 0 .6rem;padding-bottom:.25rem;border-bottom:1px solid var(--line)}\n"
	"p{margin:.4rem 0}\n.muted{color:var(--muted)}\n"
	".cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:.6rem}\n"
	".card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.55rem .75rem}\n"
	".card .v{display:block;font-size:1.4rem;font-weight:600;font-variant-numeric:tabular-nums}\n"
	".card .k{color:var(--muted);font-size:.85rem}\n"
	".scroll{overflow-x:auto}\n"
	"table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}\n"
	"th,td{padding:.35rem .5rem;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}\n"
	"th{font-size:.85rem;color:var(--muted);font-weight:600}\n"
	".n{text-align:right;white-space:nowrap}\n"
	".path{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85em;word-break:break-all}\n"
	".why{min-width:14rem;overflow-wrap:anywhere}\n"
	"svg.chart{display:block;width:100%;height:9rem;background:var(--card);border:1px solid var(--line);border-radius:4px}\n"
	"svg.bar{display:block;width:100%;min-width:5rem;height:.8rem;margin-top:.3rem}\n"
	".grid{stroke:var(--line);stroke-width:1}\n"
	".h{fill:var(--hit)}.m{fill:var(--miss)}.f{fill:var(--fail)}.u{fill:var(--unc)}.e{fill:var(--err)}"
	".track{fill:var(--line)}\n"
	".axis{display:flex;justify-content:space-between;gap:1rem;font-size:.8rem;color:var(--muted);margin:.2rem 0 .8rem}\n"
	".legend{display:flex;flex-wrap:wrap;gap:.4rem 1rem;font-size:.85rem;margin:.3rem 0}\n"
	".legend i{display:inline-block;width:.75em;height:.75em;margin-right:.35em;border-radius:2px;vertical-align:-.05em}\n"
	".legend .h,.legend .m,.legend .f,.legend .u,.legend .e{background:currentColor}\n"
	".legend .h{color:var(--hit)}.legend .m{color:var(--miss)}.legend .f{color:var(--fail)}"
	".legend .u{color:var(--unc)}.legend .e{color:var(--err)}\n"
	"footer{margin-top:2rem;font-size:.8rem;color:var(--muted)}\n"
	"@media (max-width:40rem){body{padding:.7rem .7rem 1.5rem;font-size:14px}"
	".card .v{font-size:1.15rem}h1{font-size:1.2rem}th,td{padding:.3rem .35rem}\n"
	/* on a phone, a row's words go below its numbers, the whole width */
	"table.stack tr{display:grid;grid-template-columns:1fr auto auto;border-bottom:1px solid var(--line)}"
	"table.stack td,table.stack th{border-bottom:none}"
	"table.stack td.why{grid-column:1/-1;min-width:0;padding-top:0}"
	"table.stack th.why{display:none}.wide{display:none}}\n";

/* Text from a store, escaped for HTML (control characters first). */
static void esc(struct cjc_buf *b, const char *s)
{
	char *shown = cjc_printable(s ? s : "?");
	for (const char *p = shown; *p; p++) {
		switch (*p) {
		case '&': cjc_buf_adds(b, "&amp;"); break;
		case '<': cjc_buf_adds(b, "&lt;"); break;
		case '>': cjc_buf_adds(b, "&gt;"); break;
		case '"': cjc_buf_adds(b, "&quot;"); break;
		case '\'': cjc_buf_adds(b, "&#39;"); break;
		default: cjc_buf_add(b, p, 1);
		}
	}
	free(shown);
}

/* A whole number with thousands separated: 1,234,567. */
static void count(struct cjc_buf *b, uint64_t v)
{
	char digits[32];
	int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
	for (int i = 0; i < n; i++)
		cjc_buf_addf(b, "%s%c", i && (n - i) % 3 == 0 ? "," : "", digits[i]);
}

/* A table cell of a counter: its value for a reader, and raw for a test;
 * a "wide" one is left out on a phone. */
static void cell_of(struct cjc_buf *b, const char *cls, const char *stat, uint64_t v)
{
	cjc_buf_addf(b, "<td class=\"%s\" data-stat=\"%s\" data-value=\"%llu\">", cls, stat,
		     (unsigned long long)v);
	count(b, v);
	cjc_buf_adds(b, "</td>");
}

static void cell(struct cjc_buf *b, const char *stat, uint64_t v)
{
	cell_of(b, "n", stat, v);
}

static void duration_cell(struct cjc_buf *b, const char *stat, uint64_t ms)
{
	cjc_buf_addf(b, "<td class=\"n\" data-stat=\"%s\" data-value=\"%llu\">", stat,
		     (unsigned long long)ms);
	report_duration(b, ms);
	cjc_buf_adds(b, "</td>");
}

static void rate_cell(struct cjc_buf *b, uint64_t hits, uint64_t misses)
{
	double rate = report_hit_rate(hits, misses);
	cjc_buf_addf(b, "<td class=\"n\" data-stat=\"hit_rate\" data-value=\"%.4f\">%.1f %%</td>", rate, rate);
}

/* A bar of fraction (0..1) of its cell's width. */
static void bar(struct cjc_buf *b, double fraction, const char *cls)
{
	cjc_buf_addf(b, "<svg class=\"bar\" viewBox=\"0 0 100 10\" preserveAspectRatio=\"none\" "
		     "aria-hidden=\"true\"><rect class=\"track\" width=\"100\" height=\"10\"/>"
		     "<rect class=\"%s\" width=\"%.2f\" height=\"10\"/></svg>", cls, 100.0 * fraction);
}

enum card_kind { CARD_COUNT, CARD_DURATION, CARD_BYTES, CARD_RATE };

static void card(struct cjc_buf *b, const char *stat, const char *label, uint64_t v,
		 enum card_kind kind, double rate)
{
	cjc_buf_addf(b, "<div class=\"card\"><span class=\"v\" data-stat=\"%s\" data-value=\"", stat);
	if (kind == CARD_RATE)
		cjc_buf_addf(b, "%.4f\">%.1f %%", rate, rate);
	else
		cjc_buf_addf(b, "%llu\">", (unsigned long long)v);
	if (kind == CARD_COUNT)
		count(b, v);
	else if (kind == CARD_DURATION)
		report_duration(b, v);
	else if (kind == CARD_BYTES)
		report_bytes(b, v);
	cjc_buf_addf(b, "</span><span class=\"k\">%s</span></div>\n", label);
}

static void open_section(struct cjc_buf *b, const char *id, const char *title)
{
	cjc_buf_addf(b, "<section id=\"%s\">\n<h2>%s</h2>\n", id, title);
}

/* What a section says when it has nothing to show; closes it. */
static void nothing(struct cjc_buf *b, const char *words)
{
	cjc_buf_addf(b, "<p class=\"muted\">%s</p>\n</section>\n", words);
}

/* A row that names what it counts, for a reader and for a test:
 * <tr data-KIND="NAME"><td>NAME</td>; path: the name in a monospace font. */
static void named_row(struct cjc_buf *b, const char *kind, const char *name, bool path)
{
	cjc_buf_addf(b, "<tr data-%s=\"", kind);
	esc(b, name);
	cjc_buf_addf(b, "\"><td%s>", path ? " class=\"path\"" : "");
	esc(b, name);
	cjc_buf_adds(b, "</td>");
}

static void close_table(struct cjc_buf *b)
{
	cjc_buf_adds(b, "</table></div>\n</section>\n");
}

static void head(struct cjc_buf *b, const struct report *r)
{
	cjc_buf_addf(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		     "style-src 'unsafe-inline'\">\n"
		     "<title>CudaJitCache report</title>\n<style>\n%s</style>\n</head>\n<body>\n", style);
	cjc_buf_addf(b, "<header>\n<h1>CudaJitCache report</h1>\n<p class=\"muted\">%zu store%s, "
		     "generated %s. Counters since they were last zeroed; the journal keeps the latest "
		     "compiles.</p>\n</header>\n", r->nstores, r->nstores == 1 ? "" : "s", r->generated);
}

static void cards(struct cjc_buf *b, const struct report *r)
{
	const uint64_t *v = r->v;
	open_section(b, "summary", "Summary");
	cjc_buf_adds(b, "<div class=\"cards\">\n");
	card(b, "hit_rate", "hit rate", 0, CARD_RATE, report_hit_rate(v[CJC_STAT_HITS], v[CJC_STAT_MISSES]));
	card(b, "hits", "hits", v[CJC_STAT_HITS], CARD_COUNT, 0);
	card(b, "misses", "misses", v[CJC_STAT_MISSES], CARD_COUNT, 0);
	card(b, "saved_ms", "compile time saved", v[CJC_STAT_SAVED_MS], CARD_DURATION, 0);
	card(b, "uncacheable", "uncacheable", v[CJC_STAT_UNCACHEABLE], CARD_COUNT, 0);
	card(b, "compile_failed", "compiles failed", v[CJC_STAT_COMPILE_FAILED], CARD_COUNT, 0);
	card(b, "errors", "cache errors", v[CJC_STAT_ERRORS], CARD_COUNT, 0);
	card(b, "bytes", "store size", v[CJC_STAT_BYTES], CARD_BYTES, 0);
	cjc_buf_adds(b, "</div>\n</section>\n");
}

static const char *const result_class[R_RESULTS] = { "h", "m", "f", "u", "e" };
static const char *const result_name[R_RESULTS] = { "hits", "misses", "failed", "uncacheable", "errors" };

static void bucket_title(struct cjc_buf *b, const struct report *r, const struct report_bucket *k)
{
	cjc_buf_adds(b, "<title>");
	report_time(b, k->start);
	cjc_buf_addf(b, " (%s)", report_bucket_name(r->bucket_s));
	for (int i = 0; i < R_RESULTS; i++)
		if (k->n[i])
			cjc_buf_addf(b, ", %llu %s", (unsigned long long)k->n[i], result_name[i]);
	cjc_buf_adds(b, "</title>");
}

static void chart_open(struct cjc_buf *b, const struct report *r, const char *label)
{
	cjc_buf_addf(b, "<svg class=\"chart\" viewBox=\"0 0 %zu 100\" preserveAspectRatio=\"none\" "
		     "role=\"img\" aria-label=\"%s per %s\">", r->nbuckets * 10, label,
		     report_bucket_name(r->bucket_s));
	for (int y = 25; y < 100; y += 25)
		cjc_buf_addf(b, "<line class=\"grid\" x1=\"0\" x2=\"%zu\" y1=\"%d\" y2=\"%d\" "
			     "vector-effect=\"non-scaling-stroke\"/>", r->nbuckets * 10, y, y);
}

static void chart_close(struct cjc_buf *b, const struct report *r, const char *left)
{
	cjc_buf_addf(b, "</svg>\n<div class=\"axis\"><span>%s ", left);
	report_time(b, r->buckets[0].start);
	cjc_buf_addf(b, "</span><span>%s each</span><span>", report_bucket_name(r->bucket_s));
	report_time(b, r->buckets[r->nbuckets - 1].start + r->bucket_s);
	cjc_buf_adds(b, "</span></div>\n");
}

/* Hit rate per bucket: one bar each, of hits / (hits + misses). */
static void rate_chart(struct cjc_buf *b, const struct report *r)
{
	chart_open(b, r, "hit rate");
	for (size_t i = 0; i < r->nbuckets; i++) {
		const struct report_bucket *k = &r->buckets[i];
		if (!k->n[R_HIT] && !k->n[R_MISS])
			continue;
		double rate = report_hit_rate(k->n[R_HIT], k->n[R_MISS]);
		cjc_buf_addf(b, "<rect class=\"h\" x=\"%zu.5\" y=\"%.2f\" width=\"9\" height=\"%.2f\">",
			     i * 10, 100 - rate, rate);
		bucket_title(b, r, k);
		cjc_buf_adds(b, "</rect>");
	}
	chart_close(b, r, "hit rate (lines at 25, 50, 75 %) from");
}

/* Compiles per bucket, stacked by result. */
static void volume_chart(struct cjc_buf *b, const struct report *r)
{
	uint64_t most = 1;
	for (size_t i = 0; i < r->nbuckets; i++) {
		uint64_t t = 0;
		for (int k = 0; k < R_RESULTS; k++)
			t += r->buckets[i].n[k];
		most = t > most ? t : most;
	}
	chart_open(b, r, "compiles");
	for (size_t i = 0; i < r->nbuckets; i++) {
		double y = 100;
		cjc_buf_adds(b, "<g>");
		bucket_title(b, r, &r->buckets[i]);
		for (int k = 0; k < R_RESULTS; k++) {
			double h = 100.0 * (double)r->buckets[i].n[k] / (double)most;
			if (h > 0)
				cjc_buf_addf(b, "<rect class=\"%s\" x=\"%zu.5\" y=\"%.2f\" width=\"9\" height=\"%.2f\"/>",
					     result_class[k], i * 10, y -= h, h);
		}
		cjc_buf_adds(b, "</g>");
	}
	cjc_buf_adds(b, "\n");
	char left[64];
	snprintf(left, sizeof left, "compiles (top: %llu) from", (unsigned long long)most);
	chart_close(b, r, left);
	cjc_buf_adds(b, "<div class=\"legend\">");
	for (int k = 0; k < R_RESULTS; k++)
		cjc_buf_addf(b, "<span><i class=\"%s\"></i>%s</span>", result_class[k], result_name[k]);
	cjc_buf_adds(b, "</div>\n");
}

static void over_time(struct cjc_buf *b, const struct report *r)
{
	open_section(b, "over-time", "Hit rate over time");
	if (!r->nbuckets) {
		nothing(b, "No compile is recorded in the journal.");
		return;
	}
	rate_chart(b, r);
	volume_chart(b, r);
	cjc_buf_addf(b, "<p class=\"muted\" data-stat=\"journal_records\" data-value=\"%zu\">From ",
		     r->npoints);
	count(b, r->npoints);
	cjc_buf_adds(b, " compiles in the journal");
	if (r->skipped)
		cjc_buf_addf(b, " (%zu damaged lines skipped)", r->skipped);
	cjc_buf_adds(b, ".</p>\n</section>\n");
}

static void target_row(struct cjc_buf *b, const struct cjc_stats_row *t, uint64_t most)
{
	const uint64_t *v = t->v;
	named_row(b, "target", t->name, true);
	cell(b, "hits", v[CJC_STAT_HITS]);
	cell(b, "misses", v[CJC_STAT_MISSES]);
	cell_of(b, "n wide", "uncacheable", v[CJC_STAT_UNCACHEABLE]);
	rate_cell(b, v[CJC_STAT_HITS], v[CJC_STAT_MISSES]);
	duration_cell(b, "saved_ms", v[CJC_STAT_SAVED_MS]);
	cjc_buf_adds(b, "<td class=\"wide\">");
	bar(b, most ? (double)v[CJC_STAT_SAVED_MS] / (double)most : 0, "h");
	cjc_buf_adds(b, "</td></tr>\n");
}

/* Every target, most time saved first: a table shows what it holds. */
static void targets(struct cjc_buf *b, const struct report *r)
{
	open_section(b, "saved", "Compile time saved by target");
	cjc_buf_adds(b, "<p>In all: <strong>");
	report_duration(b, r->v[CJC_STAT_SAVED_MS]);
	cjc_buf_adds(b, "</strong> of nvcc time saved (the recorded time of every entry served).</p>\n");
	if (!r->ntargets) {
		nothing(b, "No compile with a target label is counted.");
		return;
	}
	struct cjc_stats_row *rows = report_sorted_targets(r);
	cjc_buf_adds(b, "<div class=\"scroll\"><table id=\"targets\">\n<tr><th>target</th><th class=\"n\">hits</th>"
		     "<th class=\"n\">misses</th><th class=\"n wide\">uncacheable</th><th class=\"n\">hit rate</th>"
		     "<th class=\"n\">time saved</th><th class=\"wide\" style=\"width:25%\"></th></tr>\n");
	for (size_t i = 0; i < r->ntargets; i++)
		target_row(b, &rows[i], rows[0].v[CJC_STAT_SAVED_MS]);
	close_table(b);
	free(rows);
}

/* A miss in words: what `cjc why` says, what it compiled, when, for which target. */
static void miss_words(struct cjc_buf *b, json_t *rec)
{
	char *words = cjc_why_summary(rec), *what = report_compiled(rec);
	json_t *target = json_object_get(rec, "target");
	cjc_buf_adds(b, "<td class=\"why\">");
	esc(b, words);
	cjc_buf_adds(b, "<br><span class=\"path\">");
	esc(b, what);
	cjc_buf_adds(b, "</span> <span class=\"muted\">");
	if (json_is_string(target) || json_is_object(target)) {
		char *label = cjc_json_shown(target, "?");
		cjc_buf_adds(b, "target ");
		esc(b, label);
		cjc_buf_adds(b, ", ");
		free(label);
	}
	esc(b, report_record_time(rec));
	cjc_buf_adds(b, "</span></td>");
	free(words);
	free(what);
}

static void causes(struct cjc_buf *b, const struct report *r)
{
	struct report_cause sorted[REPORT_CAUSES];
	open_section(b, "misses", "Why compiles missed");
	if (!r->ncauses) {
		nothing(b, "No miss is recorded in the journal.");
		return;
	}
	report_sorted_causes(r, sorted);
	cjc_buf_adds(b, "<p class=\"muted\">Each miss in the journal under the first cause <code>cjc why</code> names "
		     "for it, with the latest such miss.</p>\n<div class=\"scroll\"><table id=\"causes\" class=\"stack\">\n"
		     "<tr><th>cause</th><th class=\"n\">misses</th><th class=\"n\">share</th>"
		     "<th class=\"why\">example</th></tr>\n");
	for (size_t i = 0; i < r->ncauses; i++) {
		named_row(b, "cause", sorted[i].cause, false);
		cell(b, "misses", sorted[i].misses);
		cjc_buf_addf(b, "<td class=\"n\">%.1f %%</td>",
			     100.0 * (double)sorted[i].misses / (double)r->results[R_MISS]);
		miss_words(b, sorted[i].example);
		cjc_buf_adds(b, "</tr>\n");
	}
	close_table(b);
}

static void uncacheable(struct cjc_buf *b, const struct report *r)
{
	if (!r->nreasons)
		return;
	open_section(b, "uncached", "Passed through uncached");
	cjc_buf_adds(b, "<div class=\"scroll\"><table id=\"reasons\">\n"
		     "<tr><th>reason</th><th class=\"n\">compiles</th></tr>\n");
	for (size_t i = 0; i < r->nreasons; i++) {
		named_row(b, "reason", r->reasons[i].name, false);
		cell(b, "uncacheable", r->reasons[i].v[CJC_STAT_UNCACHEABLE]);
		cjc_buf_adds(b, "</tr>\n");
	}
	close_table(b);
}

/* Compiles that ran with a broken setting (config.h): said first, and which. */
static void bad_settings(struct cjc_buf *b, const struct report *r)
{
	if (!r->v[CJC_STAT_BAD_SETTINGS] && !r->nsettings)
		return;
	open_section(b, "settings", "Broken settings");
	cjc_buf_addf(b, "<p>%llu compiles ran with a broken setting (ignored, or the cache off for "
		     "one that decides trust): run <code>cjc config</code> to see it.</p>\n",
		     (unsigned long long)r->v[CJC_STAT_BAD_SETTINGS]);
	cjc_buf_adds(b, "<div class=\"scroll\"><table id=\"settings\">\n"
		     "<tr><th>setting</th><th class=\"n\">compiles</th></tr>\n");
	for (size_t i = 0; i < r->nsettings; i++) {
		named_row(b, "setting", r->settings[i].name, false);
		cell(b, "bad_settings", r->settings[i].v[CJC_STAT_BAD_SETTINGS]);
		cjc_buf_adds(b, "</tr>\n");
	}
	close_table(b);
}

static void slowest(struct cjc_buf *b, const struct report *r)
{
	if (!r->nslowest)
		return;
	open_section(b, "slow", "Slowest misses");
	cjc_buf_adds(b, "<div class=\"scroll\"><table id=\"slowest\" class=\"stack\">\n"
		     "<tr><th class=\"n\">nvcc time</th><th class=\"why\">what missed, and why</th></tr>\n");
	for (size_t i = 0; i < r->nslowest; i++) {
		cjc_buf_adds(b, "<tr>");
		duration_cell(b, "duration_ms",
			      (uint64_t)json_integer_value(json_object_get(r->slowest[i], "duration_ms")));
		miss_words(b, r->slowest[i]);
		cjc_buf_adds(b, "</tr>\n");
	}
	close_table(b);
}

static void size_gauge(struct cjc_buf *b, const struct report *r)
{
	if (!r->max_size)
		return;
	double used = (double)r->v[CJC_STAT_BYTES] / (double)r->max_size;
	cjc_buf_addf(b, "<p>%.1f %% of max_size (", 100.0 * used);
	report_bytes(b, r->max_size);
	cjc_buf_adds(b, ")</p>");
	bar(b, used > 1 ? 1 : used, used > 0.95 ? "m" : "h");
}

static void store_row(struct cjc_buf *b, const struct report_store *s)
{
	named_row(b, "store", s->dir, true);
	cell(b, "hits", s->v[CJC_STAT_HITS]);
	cell(b, "misses", s->v[CJC_STAT_MISSES]);
	rate_cell(b, s->v[CJC_STAT_HITS], s->v[CJC_STAT_MISSES]);
	duration_cell(b, "saved_ms", s->v[CJC_STAT_SAVED_MS]);
	cell(b, "entries", s->v[CJC_STAT_ENTRIES]);
	cjc_buf_addf(b, "<td class=\"n\" data-stat=\"bytes\" data-value=\"%llu\">",
		     (unsigned long long)s->v[CJC_STAT_BYTES]);
	report_bytes(b, s->v[CJC_STAT_BYTES]);
	cjc_buf_adds(b, "</td>");
	cell(b, "journal_lines", s->journal.lines);
	cjc_buf_adds(b, "</tr>\n");
}

static void store(struct cjc_buf *b, const struct report *r)
{
	open_section(b, "store", "Store");
	cjc_buf_adds(b, "<div class=\"cards\">\n");
	card(b, "entries", "entries", r->v[CJC_STAT_ENTRIES], CARD_COUNT, 0);
	card(b, "bytes", "size", r->v[CJC_STAT_BYTES], CARD_BYTES, 0);
	card(b, "evicted", "entries evicted", r->v[CJC_STAT_EVICTED], CARD_COUNT, 0);
	card(b, "evicted_bytes", "bytes evicted", r->v[CJC_STAT_EVICTED_BYTES], CARD_BYTES, 0);
	card(b, "damaged", "damaged entries seen", r->v[CJC_STAT_DAMAGED], CARD_COUNT, 0);
	cjc_buf_adds(b, "</div>\n");
	size_gauge(b, r);
	if (r->nstores > 1) {
		cjc_buf_adds(b, "<h3>Stores merged</h3>\n<div class=\"scroll\"><table id=\"stores\">\n"
			     "<tr><th>store</th><th class=\"n\">hits</th><th class=\"n\">misses</th>"
			     "<th class=\"n\">hit rate</th><th class=\"n\">time saved</th>"
			     "<th class=\"n\">entries</th><th class=\"n\">size</th>"
			     "<th class=\"n\">journal lines</th></tr>\n");
		for (size_t i = 0; i < r->nstores; i++)
			store_row(b, &r->stores[i]);
		cjc_buf_adds(b, "</table></div>\n");
	}
	cjc_buf_adds(b, "</section>\n");
}

static void remote_row(struct cjc_buf *b, const struct cjc_stats_row *row)
{
	const uint64_t *v = row->v;
	named_row(b, "remote", row->name, true);
	cell(b, "remote_hits", v[CJC_STAT_REMOTE_HITS]);
	cell(b, "remote_misses", v[CJC_STAT_REMOTE_MISSES]);
	cell(b, "remote_errors", v[CJC_STAT_REMOTE_ERRORS]);
	cell(b, "remote_timeouts", v[CJC_STAT_REMOTE_TIMEOUTS]);
	cell(b, "untrusted", v[CJC_STAT_UNTRUSTED]);
	cjc_buf_adds(b, "<td class=\"n\">");
	report_bytes(b, v[CJC_STAT_REMOTE_READ]);
	cjc_buf_adds(b, " / ");
	report_bytes(b, v[CJC_STAT_REMOTE_WRITTEN]);
	cjc_buf_adds(b, "</td></tr>\n");
}

static void remotes(struct cjc_buf *b, const struct report *r)
{
	open_section(b, "remote", "Remote stores");
	if (!r->nremotes) {
		nothing(b, "No remote store was used.");
		return;
	}
	cjc_buf_adds(b, "<div class=\"scroll\"><table id=\"remotes\">\n<tr><th>store</th>"
		     "<th class=\"n\">hits</th><th class=\"n\">misses</th><th class=\"n\">errors</th>"
		     "<th class=\"n\">timeouts</th><th class=\"n\">untrusted</th>"
		     "<th class=\"n\">read / written</th></tr>\n");
	for (size_t i = 0; i < r->nremotes; i++)
		remote_row(b, &r->remotes[i]);
	close_table(b);
}

static void foot(struct cjc_buf *b, const struct report *r)
{
	size_t files = 0, lines = 0, ignored = 0;
	for (size_t i = 0; i < r->nstores; i++) {
		files += r->stores[i].journal.files;
		lines += r->stores[i].journal.lines;
		ignored += r->stores[i].journal.ignored;
	}
	cjc_buf_addf(b, "<footer>cjc %s. Journal: %zu lines in %zu files", CJC_VERSION, lines, files);
	if (ignored)
		cjc_buf_addf(b, "; %zu files not read (another user's, not a regular file, or over 2 GiB)", ignored);
	cjc_buf_adds(b, ".</footer>\n</body>\n</html>\n");
}

void report_write_html(const struct report *r, struct cjc_buf *out)
{
	head(out, r);
	cards(out, r);
	bad_settings(out, r);
	over_time(out, r);
	targets(out, r);
	causes(out, r);
	uncacheable(out, r);
	slowest(out, r);
	store(out, r);
	remotes(out, r);
	foot(out, r);
}
