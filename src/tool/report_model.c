/*
 * The report's model (report_model.h): its time buckets, and what both
 * writers print the same way.
 */
#include "report_model.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double report_hit_rate(uint64_t hits, uint64_t misses)
{
	return hits + misses ? 100.0 * (double)hits / (double)(hits + misses) : 0.0;
}

/* Bucket widths over time: the first that gives at most REPORT_BUCKETS. */
static const struct {
	int64_t seconds;
	const char *name;
} widths[] = {
	{ 60, "1 minute" }, { 300, "5 minutes" }, { 900, "15 minutes" }, { 3600, "1 hour" },
	{ 3 * 3600, "3 hours" }, { 6 * 3600, "6 hours" }, { 86400, "1 day" },
	{ 7 * 86400, "1 week" }, { 30 * 86400, "30 days" }, { 365 * 86400, "365 days" },
};
#define NWIDTHS (sizeof widths / sizeof *widths)

const char *report_bucket_name(int64_t seconds)
{
	for (size_t i = 0; i < NWIDTHS; i++)
		if (widths[i].seconds == seconds)
			return widths[i].name;
	return "?";
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void report_make_buckets(struct report *r)
{
	if (!r->npoints)
		return;
	qsort(r->points, r->npoints, sizeof *r->points, by_value);
	int64_t first = (int64_t)(r->points[0] >> 3), last = (int64_t)(r->points[r->npoints - 1] >> 3);
	size_t w = 0;
	while (w + 1 < NWIDTHS && last / widths[w].seconds - first / widths[w].seconds >= REPORT_BUCKETS)
		w++;
	int64_t width = widths[w].seconds, start = first / width * width;
	r->bucket_s = width;
	r->nbuckets = (size_t)((last / width * width - start) / width) + 1;
	if (r->nbuckets < REPORT_MIN_BUCKETS) { /* a bar is not the chart's whole width */
		start -= (int64_t)(REPORT_MIN_BUCKETS - r->nbuckets) * width;
		r->nbuckets = REPORT_MIN_BUCKETS;
	}
	if (r->nbuckets > 4 * REPORT_BUCKETS) /* a journal of centuries: the latest only */
		start += (int64_t)(r->nbuckets - 4 * REPORT_BUCKETS) * width, r->nbuckets = 4 * REPORT_BUCKETS;
	r->buckets = cjc_xcalloc(r->nbuckets, sizeof *r->buckets);
	for (size_t i = 0; i < r->nbuckets; i++)
		r->buckets[i].start = start + (int64_t)i * width;
	for (size_t i = 0; i < r->npoints; i++) {
		int64_t t = (int64_t)(r->points[i] >> 3);
		if (t >= start)
			r->buckets[(t - start) / width].n[r->points[i] & 7]++;
	}
}

static int by_saved(const void *a, const void *b)
{
	uint64_t x = ((const struct cjc_stats_row *)a)->v[CJC_STAT_SAVED_MS];
	uint64_t y = ((const struct cjc_stats_row *)b)->v[CJC_STAT_SAVED_MS];
	return x < y ? 1 : x > y ? -1 : strcmp(((const struct cjc_stats_row *)a)->name,
					       ((const struct cjc_stats_row *)b)->name);
}

struct cjc_stats_row *report_sorted_targets(const struct report *r)
{
	struct cjc_stats_row *rows = cjc_xcalloc(r->ntargets + 1, sizeof *rows);
	if (r->ntargets) {
		memcpy(rows, r->targets, r->ntargets * sizeof *rows);
		qsort(rows, r->ntargets, sizeof *rows, by_saved);
	}
	return rows;
}

static int by_misses(const void *a, const void *b)
{
	uint64_t x = ((const struct report_cause *)a)->misses, y = ((const struct report_cause *)b)->misses;
	return x < y ? 1 : x > y ? -1 : strcmp(((const struct report_cause *)a)->cause,
					       ((const struct report_cause *)b)->cause);
}

void report_sorted_causes(const struct report *r, struct report_cause out[REPORT_CAUSES])
{
	if (!r->ncauses)
		return;
	memcpy(out, r->causes, r->ncauses * sizeof *out);
	qsort(out, r->ncauses, sizeof *out, by_misses);
}
void report_duration(struct cjc_buf *b, uint64_t ms)
{
	double s = (double)ms / 1000.0;
	if (ms < 1000)
		cjc_buf_addf(b, "%llu ms", (unsigned long long)ms);
	else if (s < 60)
		cjc_buf_addf(b, "%.1f s", s);
	else if (s < 3600)
		cjc_buf_addf(b, "%d min %02d s", (int)(s / 60), (int)s % 60);
	else if (s < 86400 * 2)
		cjc_buf_addf(b, "%.1f h", s / 3600);
	else
		cjc_buf_addf(b, "%.1f d", s / 86400);
}

void report_bytes(struct cjc_buf *b, uint64_t bytes)
{
	static const char *const units[] = { "kB", "MB", "GB", "TB", "PB" };
	double v = (double)bytes;
	size_t u = 0;
	if (bytes < 1000) {
		cjc_buf_addf(b, "%llu B", (unsigned long long)bytes);
		return;
	}
	for (v /= 1000; v >= 1000 && u + 1 < sizeof units / sizeof *units; u++)
		v /= 1000;
	cjc_buf_addf(b, "%.1f %s", v, units[u]);
}

void report_time(struct cjc_buf *b, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char text[32];
	if (gmtime_r(&tt, &tm) && strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm))
		cjc_buf_adds(b, text);
	else
		cjc_buf_adds(b, "?");
}

char *report_compiled(json_t *r)
{
	json_t *output = json_object_get(r, "output"), *jit = json_object_get(r, "jit");
	if (jit && !json_is_null(json_object_get(jit, "name"))) {
		const char *compiler = json_string_value(json_object_get(jit, "compiler"));
		bool shim = compiler && !strcmp(compiler, "nvrtc-shim");
		char *name = cjc_json_shown(json_object_get(jit, "name"), "?");
		char *label = cjc_xasprintf("%s (%s)", name, shim ? "NVRTC shim" : "JIT");
		free(name);
		return label;
	}
	return cjc_json_shown(output && !json_is_null(output) ? output : json_object_get(r, "source"),
			      "?");
}

const char *report_record_time(json_t *r)
{
	const char *t = json_string_value(json_object_get(r, "time"));
	return t ? t : "?";
}
