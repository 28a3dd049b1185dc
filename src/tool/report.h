/*
 * report.h - `cjc report [--markdown] [--merge DIR...]`: what a CI owner
 * looks at, from the counters (stats.h) and the journals (journal.h) of one
 * store, or of several (copies that CI runners saved) added together.
 *
 * report.c gathers: each store's counters and named counters (summed, the
 * breakdowns by name), and from every trusted journal file of each store
 * (journal.h, cjc_journal_scan) the time and result of each compile, the
 * cause of each miss as `cjc why` names it (why.h, cjc_why_cause) with the
 * latest miss of each cause as its example, and the slowest misses.  A
 * journal line is skimmed (cjc_journal_skim), not parsed: only a miss's
 * few small members are decoded, so a journal of a million lines takes
 * seconds (bench/report_bench).  Lines that are not records are counted.
 *
 * report_html.c writes one self-contained page: a <style> block and inline
 * SVG, no script, and a Content-Security-Policy that lets the page load
 * nothing at all.  Each number the counters give is also in a data-stat /
 * data-value attribute, so a test can read it back from the rendered page.
 * report_md.c writes the same summary as GitHub-flavoured Markdown, for a
 * CI job's page ($GITHUB_STEP_SUMMARY).
 *
 * Everything shown from a store (paths, labels, reasons, URLs) is escaped
 * for the page it goes into; control characters first (cjc_printable).
 */
#ifndef CJC_REPORT_H
#define CJC_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"
#include "store/journal.h"
#include "store/stats.h"
#include "store/store.h"

struct cjc_report_options {
	const struct cjc_store *store; /* the store of the settings, or NULL with dirs */
	char *const *dirs;             /* --merge: cache directories, as CJC_DIR names one */
	size_t ndirs;
	uint64_t max_size;             /* the settings' (0: none), for the one store */
	bool markdown;
};

/* Writes the report on stdout; returns the exit status (1: a store could
 * not be opened, with the message on stderr). */
int cjc_report(const struct cjc_report_options *o);

/* What the writers get. */
enum report_result { R_HIT, R_MISS, R_FAILED, R_UNCACHEABLE, R_ERROR, R_RESULTS };

#define REPORT_TOP 10      /* slowest misses, rows of the tables */
#define REPORT_CAUSES 32   /* kept apart; more are "(other)" */
#define REPORT_BUCKETS 48  /* at most, over time */
#define REPORT_MIN_BUCKETS 12 /* at least: the latest at the right */

struct report_store {
	char *dir; /* the namespace directory */
	uint64_t v[CJC_STAT_COUNT];
	struct cjc_journal_counts journal;
};

struct report_cause {
	const char *cause; /* static (why.h) */
	uint64_t misses;
	json_t *example;   /* the latest miss of this cause */
	struct cjc_buf line; /* its journal line, while reading */
	char example_time[32];
	size_t example_time_len;
};

struct report_bucket {
	int64_t start;
	uint64_t n[R_RESULTS];
};

struct report {
	struct report_store *stores;
	size_t nstores;
	uint64_t v[CJC_STAT_COUNT]; /* all stores */
	uint64_t max_size;          /* 0: none, or several stores */
	struct cjc_stats_row *targets, *reasons, *remotes;
	size_t ntargets, nreasons, nremotes;
	struct cjc_stats_row *settings; /* broken settings (config.h), by name */
	size_t nsettings;
	/* from the journals */
	uint64_t results[R_RESULTS];
	size_t skipped;             /* lines that are not records */
	uint64_t *points;           /* time << 3 | result, of records with a time */
	size_t npoints, cap;
	struct report_cause causes[REPORT_CAUSES];
	size_t ncauses;
	json_t *slowest[REPORT_TOP]; /* misses, longest first */
	struct cjc_buf slowest_lines[REPORT_TOP]; /* their journal lines, while reading */
	int64_t slowest_ms[REPORT_TOP];
	size_t nslowest;
	struct report_bucket *buckets;
	size_t nbuckets;
	int64_t bucket_s;           /* each bucket's width, seconds */
	char generated[32];
};

double report_hit_rate(uint64_t hits, uint64_t misses);
/* "850 ms", "12.3 s", "4 min 05 s", "3.2 h", "2.5 d" */
void report_duration(struct cjc_buf *b, uint64_t ms);
/* "70.7 kB", "1.2 GB" (powers of 1000, as `cjc stats`) */
void report_bytes(struct cjc_buf *b, uint64_t bytes);
/* "2026-12-02 01:34 UTC" */
void report_time(struct cjc_buf *b, int64_t t);
/* "1 minute", "6 hours", "1 day" */
const char *report_bucket_name(int64_t seconds);
/* What a record compiled: its output, a JIT request's or a program's name
 * (the NVRTC shim's), or its source;
 * printable (control characters escaped), in a new allocation. */
char *report_compiled(json_t *record);
/* A record's time as written, or "?". */
const char *report_record_time(json_t *record);

/* The targets, most time saved first: a copy of the rows (names borrowed), free() it. */
struct cjc_stats_row *report_sorted_targets(const struct report *r);
/* The causes, most misses first. */
void report_sorted_causes(const struct report *r, struct report_cause out[REPORT_CAUSES]);

void report_write_html(const struct report *r, struct cjc_buf *out);
void report_write_markdown(const struct report *r, struct cjc_buf *out);

#endif
