/*
 * stats.h - counters of what the cache did, kept right under concurrent
 * builds without a global lock.
 *
 * The counters live in CJC_STATS_SHARDS files stats/<n> of the store; a
 * process adds to the shard of its pid under flock(2) on that shard alone,
 * so parallel compiles rarely wait on each other and no update is lost.
 * Each shard is a blob (blob.h, magic "CJCS"): u32 count, then that many u64
 * values in the order of enum cjc_counter.  A damaged shard reads as zeros
 * and is rewritten on the next update.  Reading sums the shards.
 *
 * Two counters are not events but the store's size (evict.h): bytes and
 * entries, kept in the shard named by the first hex digit of each entry's
 * key, so eviction can judge one sixteenth of the store from one shard.
 * `cjc stats --zero` leaves them; `cjc gc` recounts them.
 */
#ifndef CJC_STATS_H
#define CJC_STATS_H

#include <stdint.h>

#include "store.h"

enum cjc_counter {
	CJC_STAT_HITS,
	CJC_STAT_MISSES,
	CJC_STAT_UNCACHEABLE,
	CJC_STAT_ERRORS,
	CJC_STAT_DAMAGED,
	CJC_STAT_COMPILE_FAILED,
	CJC_STAT_SAVED_MS,
	CJC_STAT_BYTES,   /* size, not an event: never zeroed */
	CJC_STAT_ENTRIES, /* size, not an event: never zeroed */
	CJC_STAT_COUNT
};

#define CJC_STATS_SHARDS 16

const char *cjc_stats_name(enum cjc_counter c);
/* Adds one to a counter (and saved_ms to the time saved, on a hit). */
int cjc_stats_bump(const struct cjc_store *s, enum cjc_counter c, uint64_t saved_ms);
int cjc_stats_add(const struct cjc_store *s, const uint64_t delta[CJC_STAT_COUNT]);
/* The same on a given shard (deltas are modulo 2^64: add -x to subtract). */
int cjc_stats_add_shard(const struct cjc_store *s, int shard, const uint64_t delta[CJC_STAT_COUNT]);
int cjc_stats_read(const struct cjc_store *s, uint64_t out[CJC_STAT_COUNT]);
int cjc_stats_read_shard(const struct cjc_store *s, int shard, uint64_t out[CJC_STAT_COUNT]);
int cjc_stats_zero(const struct cjc_store *s);

#endif
