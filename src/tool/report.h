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
 * What it gathers is the model (report_model.h), which one of two writers
 * prints: report_html.h, one self-contained page, or report_md.h, the same
 * summary as GitHub-flavoured Markdown.
 *
 * Everything shown from a store (paths, labels, reasons, URLs) is escaped
 * for the page it goes into; control characters first (cjc_printable).
 */
#ifndef CJC_REPORT_H
#define CJC_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report_model.h" /* report_hit_rate, which `cjc stats` shows too */
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

#endif
