/*
 * evict.h - keeping the store under its size limit, least recently used
 * entries first, without a global lock.
 *
 * Recency is an entry directory's mtime: the rename that publishes an entry
 * leaves it at publication time, and every hit refreshes it with one
 * futimens() on its open fd (cjc_evict_touch).  Nothing inside the entry changes.
 *
 * Size is counted in the stats shards (stats.h): a writer that wins a
 * publication adds the entry's bytes to the shard of the key's first hex
 * digit (cjc_evict_account).  When that shard holds more than a sixteenth of
 * the limit, the writer evicts the oldest entries of entries/<d>?/ — one
 * sixteenth of the store — down to 90% of that share (cjc_evict_published).
 * One evictor per shard and user works at a time, under a lock only that
 * user can open (stats/evict.<n>.<uid>); no one else can switch eviction
 * off: not by holding a lock, not by planting a FIFO, a link or a directory
 * at a lock's or a counter's name (evict.c says how, and why evicting
 * without the lock is safe).  When the shard's count cannot be made or read,
 * the shard is measured instead.
 * `cjc gc --max-size` evicts across the whole store, oldest first, exactly to
 * the size asked, and recounts every shard.
 *
 * Removing an entry renames it into staging/ first (a reader sees the whole
 * entry or nothing), then removes the renamed tree; an evictor killed in
 * between leaves staging that `cjc gc` reclaims.  Two evictors racing for
 * one entry are harmless: one rename wins, the other sees ENOENT.  Entries
 * are named by their keys and opened, renamed and removed relative to the
 * store's directory fds, never by a path (store.h); cjc_evict_touch sets
 * the times through the entry's open fd.
 */
#ifndef CJC_EVICT_H
#define CJC_EVICT_H

#include <stdint.h>
#include <time.h>

#include "store/store.h"

struct cjc_evict_report {
	uint64_t entries, bytes;         /* in the store before */
	uint64_t evicted, evicted_bytes; /* removed */
	struct timespec oldest_left;     /* the last use of the least recently used entry left;
					  * {0, 0}: none (or, when not known, the epoch's first ns) */
};

/* Marks an entry as just used (ignores failure: a read-only store). */
void cjc_evict_touch(const struct cjc_entry *e);
/* Counts a newly published entry of `bytes` in its shard (-1: not counted,
 * the shard's file being held or unusable: stats.h). */
int cjc_evict_account(const struct cjc_store *s, const char *key, uint64_t bytes);
/* After a publication that won: counts the entry, then, with max_size set,
 * evicts from the key's shard when it is over its share. */
int cjc_evict_published(const struct cjc_store *s, const char *key, uint64_t bytes,
			uint64_t max_size, struct cjc_evict_report *r);
/* Evicts, oldest first, every entry unused for `older_than` seconds (-1: no
 * age limit) and then more until the store holds at most max_size bytes (0:
 * no size limit); recounts every shard. */
int cjc_evict_store(const struct cjc_store *s, uint64_t max_size, int64_t older_than,
		    struct cjc_evict_report *r);
/* Takes the entry of a key out of the store and uncounts its bytes: renamed
 * to dest, a name in the namespace (quarantine), or, with dest NULL, renamed
 * aside and deleted; every step relative to directory fds (store.h). */
int cjc_evict_remove(const struct cjc_store *s, const char *key, const char *dest);

#endif
