/*
 * `cjc stats --format=openmetrics` (metrics.h): the counters as OpenMetrics
 * text, for a dashboard (a node exporter's text-file collector, a CI
 * system's metrics report).
 */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "store/stats.h"

/* How a counter is exposed: its family's name (after "cjc_"), its type, its
 * unit (a family with one ends in it), and a line of help. */
struct family {
	enum cjc_counter c;
	const char *name;
	const char *type;
	const char *unit;
	const char *help;
};

#define MS_TO_SECONDS 0.001

static const struct family totals[] = {
	{ CJC_STAT_HITS, "hits", "counter", NULL, "Compiles served from an entry." },
	{ CJC_STAT_MISSES, "misses", "counter", NULL, "Compiles that ran nvcc through the cache." },
	{ CJC_STAT_UNCACHEABLE, "uncacheable", "counter", NULL, "Compiles passed through uncached." },
	{ CJC_STAT_ERRORS, "errors", "counter", NULL, "Problems on the cache's side." },
	{ CJC_STAT_DAMAGED, "damaged", "counter", NULL, "Entries found but rejected when read." },
	{ CJC_STAT_COMPILE_FAILED, "compile_failed", "counter", NULL, "Misses where nvcc failed." },
	{ CJC_STAT_SAVED_MS, "saved_seconds", "counter", "seconds",
	  "The recorded nvcc time of every entry served." },
	{ CJC_STAT_UNTRUSTED, "untrusted", "counter", NULL,
	  "Entries refused: not signed by a trusted key." },
	{ CJC_STAT_BYTES, "store_bytes", "gauge", "bytes", "The store's size." },
	{ CJC_STAT_ENTRIES, "store_entries", "gauge", NULL, "Entries in the store." },
	{ CJC_STAT_EVICTED, "evicted", "counter", NULL, "Entries evicted." },
	{ CJC_STAT_EVICTED_BYTES, "evicted_bytes", "counter", "bytes", "Bytes of the entries evicted." },
	{ CJC_STAT_BAD_SETTINGS, "bad_settings", "counter", NULL,
	  "Compiles that ran with a broken setting (unknown, or a bad value: ignored or failing closed)." },
	{ CJC_STAT_VERIFIED, "verified", "counter", NULL,
	  "Sampled hits compiled again and found the same (verify_rate)." },
	{ CJC_STAT_VERIFY_MISMATCHES, "verify_mismatches", "counter", NULL,
	  "Sampled hits compiled again and found different: never served again." },
	{ CJC_STAT_VERIFY_SKIPPED, "verify_skipped", "counter", NULL,
	  "Sampled hits not compiled again (-G, or every verifier busy)." },
};

/* The breakdowns (stats.h): one family per counter, a label per name. */
static const struct family per_target[] = {
	{ CJC_STAT_HITS, "target_hits", "counter", NULL, "Hits of a build target." },
	{ CJC_STAT_MISSES, "target_misses", "counter", NULL, "Misses of a build target." },
	{ CJC_STAT_UNCACHEABLE, "target_uncacheable", "counter", NULL,
	  "Compiles of a build target passed through uncached." },
	{ CJC_STAT_ERRORS, "target_errors", "counter", NULL, "Cache errors of a build target." },
	{ CJC_STAT_COMPILE_FAILED, "target_compile_failed", "counter", NULL,
	  "Failed compiles of a build target." },
	{ CJC_STAT_SAVED_MS, "target_saved_seconds", "counter", "seconds",
	  "The nvcc time saved for a build target." },
};
static const struct family per_reason[] = {
	{ CJC_STAT_UNCACHEABLE, "uncacheable_by_reason", "counter", NULL,
	  "Compiles passed through uncached, by reason." },
};
static const struct family per_setting[] = {
	{ CJC_STAT_BAD_SETTINGS, "bad_settings_by_setting", "counter", NULL,
	  "Compiles that ran with this setting broken." },
};

/* The remote counters only per store: their sum is the total. */
static const struct family per_remote[] = {
	{ CJC_STAT_REMOTE_HITS, "remote_hits", "counter", NULL, "Remote lookups that found an entry." },
	{ CJC_STAT_REMOTE_MISSES, "remote_misses", "counter", NULL, "Remote lookups that found none." },
	{ CJC_STAT_REMOTE_ERRORS, "remote_errors", "counter", NULL, "Compiles the remote store failed." },
	{ CJC_STAT_REMOTE_TIMEOUTS, "remote_timeouts", "counter", NULL,
	  "Compiles the remote store timed out." },
	{ CJC_STAT_UNTRUSTED, "remote_untrusted", "counter", NULL,
	  "Remote entries refused: not signed by a trusted key." },
	{ CJC_STAT_REMOTE_READ, "remote_read_bytes", "counter", "bytes",
	  "Bytes fetched from the remote store." },
	{ CJC_STAT_REMOTE_WRITTEN, "remote_written_bytes", "counter", "bytes",
	  "Bytes sent to the remote store." },
};

#define COUNT_OF(a) (sizeof(a) / sizeof *(a))

static const struct breakdown {
	enum cjc_stats_breakdown b;
	const char *label;
	const struct family *families;
	size_t n;
} breakdowns[] = {
	{ CJC_STATS_BY_TARGET, "target", per_target, COUNT_OF(per_target) },
	{ CJC_STATS_BY_REASON, "reason", per_reason, COUNT_OF(per_reason) },
	{ CJC_STATS_BY_REMOTE, "remote", per_remote, COUNT_OF(per_remote) },
	{ CJC_STATS_BY_SETTING, "setting", per_setting, COUNT_OF(per_setting) },
};

static void family_header(struct cjc_buf *b, const struct family *f)
{
	cjc_buf_addf(b, "# TYPE cjc_%s %s\n", f->name, f->type);
	if (f->unit)
		cjc_buf_addf(b, "# UNIT cjc_%s %s\n", f->name, f->unit);
	cjc_buf_addf(b, "# HELP cjc_%s %s\n", f->name, f->help);
}

/* A value in the family's unit: seconds for the time saved. */
static void value(struct cjc_buf *b, const struct family *f, uint64_t v)
{
	if (f->c == CJC_STAT_SAVED_MS)
		cjc_buf_addf(b, "%.3f\n", (double)v * MS_TO_SECONDS);
	else
		cjc_buf_addf(b, "%llu\n", (unsigned long long)v);
}

static const char *suffix(const struct family *f)
{
	return strcmp(f->type, "counter") ? "" : "_total";
}

/* A label's value: control and bidi characters, and the bytes of a name
 * that is not UTF-8, as \\xNN or \\u{XXXX} text (cjc_printable), then \
 * and " escaped as OpenMetrics asks. */
static void label_value(struct cjc_buf *b, const char *s)
{
	char *shown = cjc_printable(s);
	for (const char *p = shown; *p; p++) {
		if (*p == '\\' || *p == '"')
			cjc_buf_addf(b, "\\%c", *p);
		else
			cjc_buf_add(b, p, 1);
	}
	free(shown);
}

static void write_breakdown(struct cjc_buf *b, const struct cjc_store *s, const struct breakdown *d)
{
	struct cjc_stats_row *rows = NULL;
	size_t n = 0;
	cjc_stats_read_named(s, d->b, &rows, &n);
	for (size_t k = 0; k < d->n; k++) {
		const struct family *f = &d->families[k];
		family_header(b, f);
		for (size_t i = 0; i < n; i++) {
			cjc_buf_addf(b, "cjc_%s%s{%s=\"", f->name, suffix(f), d->label);
			label_value(b, rows[i].name);
			cjc_buf_adds(b, "\"} ");
			value(b, f, rows[i].v[f->c]);
		}
	}
	cjc_stats_rows_free(rows, n);
}

int cjc_metrics_print(const struct cjc_store *s, uint64_t max_size)
{
	struct cjc_buf b = CJC_BUF_INIT;
	uint64_t v[CJC_STAT_COUNT];
	cjc_stats_read(s, v);
	cjc_buf_addf(&b, "# TYPE cjc_build info\n# HELP cjc_build The cjc that wrote these.\n"
		     "cjc_build_info{version=\"%s\"} 1\n", CJC_VERSION);
	for (size_t i = 0; i < COUNT_OF(totals); i++) {
		family_header(&b, &totals[i]);
		cjc_buf_addf(&b, "cjc_%s%s ", totals[i].name, suffix(&totals[i]));
		value(&b, &totals[i], v[totals[i].c]);
	}
	cjc_buf_addf(&b, "# TYPE cjc_max_size_bytes gauge\n# UNIT cjc_max_size_bytes bytes\n"
		     "# HELP cjc_max_size_bytes The store's size limit (0: none).\n"
		     "cjc_max_size_bytes %llu\n", (unsigned long long)max_size);
	for (size_t i = 0; i < COUNT_OF(breakdowns); i++)
		write_breakdown(&b, s, &breakdowns[i]);
	cjc_buf_adds(&b, "# EOF\n");
	int rc = fwrite(b.data, 1, b.len, stdout) == b.len && !fflush(stdout) ? 0 : 1;
	if (rc)
		perror("cjc stats: cannot write the metrics");
	cjc_buf_release(&b);
	return rc;
}
