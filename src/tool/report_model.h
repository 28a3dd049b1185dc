/*
 * report_model.h - what `cjc report` (report.h) gathered, as both of its
 * writers read it (report_html.h, report_md.h), and what they print the
 * same way.  It is filled by report.c; the writers only read it.
 */
#ifndef CJC_REPORT_MODEL_H
#define CJC_REPORT_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"
#include "store/journal.h"
#include "store/stats.h"

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

/* Spreads the records' points over buckets of one width, the narrowest
 * that gives at most REPORT_BUCKETS (and at least REPORT_MIN_BUCKETS,
 * the latest at the right). */
void report_make_buckets(struct report *r);

/*
 * What both writers print the same way.
 */
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

#endif
