/*
 * stats.h - counters of what the cache did, kept right under concurrent
 * builds without a global lock.
 *
 * The counters live in CJC_STATS_SHARDS files stats/<n> of the store; a
 * process adds to the shard of its pid under flock(2) on that shard alone,
 * or, when that one is locked, to the first other shard free at once, so
 * parallel compiles rarely wait on each other and no update is lost.
 *
 * No compile waits on anyone else: whoever can read a counter file (another
 * member of a group store, or a user who may only read it) can hold a lock
 * on it for as long as they like.  So a lock not granted at once is retried
 * for a few milliseconds in all (cjc_lock_bounded, fs.h) and then the update
 * is skipped: the function returns -1 with EWOULDBLOCK and the counter loses
 * that change.  A counter may be lost; a compile is not.  The size counters
 * then drift until `cjc gc` recounts them, and eviction measures the shard
 * itself when its count could not be made (evict.h).
 * Each shard is a blob (blob.h, magic "CJCS"): u32 count, then that many u64
 * values in the order of enum cjc_counter.  A damaged shard reads as zeros
 * and is rewritten on the next update.  Reading sums the shards.
 *
 * Two counters are not events but the store's size (evict.h): bytes and
 * entries, kept in the shard named by the first hex digit of each entry's
 * key, so eviction can judge one sixteenth of the store from one shard.
 * `cjc stats --zero` leaves them; `cjc gc` recounts them.
 *
 * Named counters break the events down: per build target (stats/targets)
 * and per reason a compile was uncacheable (stats/uncacheable), and the
 * remote counters per store (stats/remotes, by the store's URL as shown,
 * with no password), and the compiles that ran with each broken setting
 * (stats/settings, by the setting's name).  Each file
 * is one blob (magic "CJCN": u32 version (2), u32 count, u32 values per
 * name, then per name: u32 length, the name, the u64 values; version 1 had
 * no values field and 9 values) updated under flock(2), as bounded.  At
 * most CJC_STATS_MAX_NAMES names are kept apart; later ones are added up
 * under "(other)".  `cjc stats --zero` empties them.
 */
#ifndef CJC_STATS_H
#define CJC_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

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
	/* Remote stores (remote.h): in the shards, all stores together; per
	 * store in the stats/remotes breakdown. */
	CJC_STAT_REMOTE_HITS,
	CJC_STAT_REMOTE_MISSES,
	CJC_STAT_REMOTE_ERRORS,
	CJC_STAT_REMOTE_TIMEOUTS,
	CJC_STAT_UNTRUSTED,     /* fetched, but not signed by a trusted key */
	CJC_STAT_REMOTE_READ,   /* bytes fetched */
	CJC_STAT_REMOTE_WRITTEN, /* bytes sent */
	/* The store's eviction (evict.h): entries and bytes removed to keep it
	 * under max_size or --older-than; store-wide, in no breakdown. */
	CJC_STAT_EVICTED,
	CJC_STAT_EVICTED_BYTES,
	/* Leases (lease.h): a miss that waited for another compile of its key;
	 * one that waited its whole bound and then compiled itself. */
	CJC_STAT_LEASE_WAITS,
	CJC_STAT_LEASE_TIMEOUTS,
	/* Compiles that ran with a broken setting (compile/config.h): an
	 * unknown one, or a bad value ignored or failing closed; which, in the
	 * stats/settings breakdown (by the setting's name). */
	CJC_STAT_BAD_SETTINGS,
	/* verify_rate (config.h): hits compiled again after they were served
	 * and found the same; found different (the entry is never served
	 * again); sampled but not verified (-G, or every verifier busy). */
	CJC_STAT_VERIFIED,
	CJC_STAT_VERIFY_MISMATCHES,
	CJC_STAT_VERIFY_SKIPPED,
	CJC_STAT_COUNT
};

#define CJC_STATS_SHARDS 16

const char *cjc_stats_name(enum cjc_counter c);
/* Whether a counter is of the store as a whole (its size, its evictions):
 * kept in no breakdown. */
bool cjc_stats_store_wide(enum cjc_counter c);
/* Adds one to a counter (and saved_ms to the time saved, on a hit). */
int cjc_stats_bump(const struct cjc_store *s, enum cjc_counter c, uint64_t saved_ms);
/* Adds events to whichever shard is free first (no sizes: those go to their
 * own shard, below). */
int cjc_stats_add(const struct cjc_store *s, const uint64_t delta[CJC_STAT_COUNT]);
/* The same on a given shard, as sizes must be (deltas are modulo 2^64: add
 * -x to subtract). */
int cjc_stats_add_shard(const struct cjc_store *s, int shard, const uint64_t delta[CJC_STAT_COUNT]);
int cjc_stats_read(const struct cjc_store *s, uint64_t out[CJC_STAT_COUNT]);
int cjc_stats_read_shard(const struct cjc_store *s, int shard, uint64_t out[CJC_STAT_COUNT]);
int cjc_stats_zero(const struct cjc_store *s);

#define CJC_STATS_MAX_NAMES 256

enum cjc_stats_breakdown { CJC_STATS_BY_TARGET, CJC_STATS_BY_REASON, CJC_STATS_BY_REMOTE,
			   CJC_STATS_BY_SETTING };

struct cjc_stats_row {
	char *name;
	uint64_t v[CJC_STAT_COUNT];
};

/* Adds one to counter c (and saved_ms to the time saved) under name. */
int cjc_stats_bump_named(const struct cjc_store *s, enum cjc_stats_breakdown b,
			 const char *name, enum cjc_counter c, uint64_t saved_ms);
int cjc_stats_add_named(const struct cjc_store *s, enum cjc_stats_breakdown b, const char *name,
			const uint64_t delta[CJC_STAT_COUNT]);
/* The rows of a breakdown, in name order; free with cjc_stats_rows_free(). */
int cjc_stats_read_named(const struct cjc_store *s, enum cjc_stats_breakdown b,
			 struct cjc_stats_row **rows, size_t *n);
void cjc_stats_rows_free(struct cjc_stats_row *rows, size_t n);

#endif
