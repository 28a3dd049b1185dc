/*
 * metrics.h - `cjc stats --format=openmetrics`: the counters (stats.h) as
 * OpenMetrics text (https://openmetrics.io), ending in "# EOF".
 *
 * One family per counter, named cjc_<name> (counters' samples end in
 * _total; a family with a unit ends in it: cjc_saved_seconds,
 * cjc_store_bytes); the breakdowns as families of their own with a label:
 * cjc_target_*{target=...}, cjc_uncacheable_by_reason{reason=...}, and the
 * remote counters only per store, cjc_remote_*{remote=...} (the URL as
 * `cjc stats` shows it, with no password).  A label's value escapes \, "
 * and newlines as OpenMetrics asks, and spells control bytes and the bytes
 * of a name that is not UTF-8 as the text \xNN.
 */
#ifndef CJC_METRICS_H
#define CJC_METRICS_H

#include <stdint.h>

#include "store/store.h"

/* Prints the store's counters and max_size on stdout; 0, or 1 when stdout
 * cannot be written. */
int cjc_metrics_print(const struct cjc_store *s, uint64_t max_size);

#endif
