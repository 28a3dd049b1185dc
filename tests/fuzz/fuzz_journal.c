/* fuzz_journal.c - libFuzzer: what reads the journal and the named counters
 * (journal.h, compile/why.h, the tool's why.h and report.h, stats.h, metrics.h).
 * The input becomes the journal and then a named-counter file framed with a
 * valid CRC, so the records are what gets fuzzed; `cjc why`, the explanation
 * of a miss, `cjc report` (skimming each line) and the OpenMetrics text read
 * them. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cudajitcache.h"
#include "metrics.h"
#include "report.h"
#include "why.h"

static struct cjc_store store;
static char dir[64];
static int quiet_fd, stderr_fd;

/* What `cjc why` prints goes to /dev/null; libFuzzer's own reports do not. */
static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/cjc-fuzz-journal.%d", (int)getpid());
	quiet_fd = open("/dev/null", O_WRONLY);
	stderr_fd = dup(2);
	if (cjc_store_open(&store, dir) || !freopen("/dev/null", "w", stdout) || quiet_fd < 0 ||
	    stderr_fd < 0)
		__builtin_trap();
}

static void explain_a_miss(void)
{
	json_t *r = json_pack("{s:s, s:s, s:s, s:n, s:s, s:s, s:b, s:{s:[s], s:{}}}", "time", "t",
			      "result", "miss", "source", "/x/k.cu", "target", "output", "/x/k.o",
			      "entry", "00", "published", 1, "facts", "args", "-DX=1", "env");
	struct cjc_dep dep = { .path = "/x/k.cu" };
	cjc_why_miss(&store, r, &dep, 1);
	json_decref(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!store.dir)
		setup();
	char *journal = cjc_store_path(&store, "journal");
	char *targets = cjc_store_path(&store, "stats/targets");
	struct cjc_buf framed = CJC_BUF_INIT;
	if (cjc_replace_file(journal, data, size))
		__builtin_trap();
	dup2(quiet_fd, 2);
	(void)cjc_why_print(&store, "/x/k.o", false, false);
	(void)cjc_why_print(&store, "/x/k.cu", false, true);
	(void)cjc_why_print(&store, "P:k.cu", true, false);
	struct cjc_report_options report = { .store = &store, .markdown = size & 1 };
	(void)cjc_report(&report);
	dup2(stderr_fd, 2);
	explain_a_miss();
	cjc_blob_encode(&framed, "CJCN", data, size);
	if (cjc_replace_file(targets, framed.data, framed.len))
		__builtin_trap();
	struct cjc_stats_row *rows;
	size_t n;
	(void)cjc_stats_read_named(&store, CJC_STATS_BY_TARGET, &rows, &n);
	cjc_stats_rows_free(rows, n);
	(void)cjc_stats_bump_named(&store, CJC_STATS_BY_TARGET, "app", CJC_STAT_HITS, 5);
	(void)cjc_metrics_print(&store, 0);
	cjc_buf_release(&framed);
	free(journal);
	free(targets);
	return 0;
}
