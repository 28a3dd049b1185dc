/*
 * maintain.h - the store's housekeeping: `cjc clean`, `cjc verify --fix`'s
 * quarantine, and what `cjc gc` reclaims besides entries (evict.h).
 *
 * Everything removed is renamed into staging/ first and deleted there, so a
 * concurrent reader sees a whole entry or nothing, and a remover killed
 * half-way leaves only staging that the next gc reclaims.  Entries and parts
 * of the store are named inside the namespace (keys, "manifests") and every
 * rename and removal is relative to directory fds opened without following
 * links (store.h), never by a path.
 *
 * What gc reclaims: staging directories whose writer is gone (a dead pid on
 * this host, or another host's older than the age given), temporary files a
 * killed writer left beside manifests, hash caches and identities (named
 * "<file>.<host>.<pid>.<random>", fs.h), and hash caches (hashes/, a speed
 * cache only) unused for the age given.  Functions return 0 or -1 with
 * errno, after doing what they could; the counts say what was done.
 */
#ifndef CJC_MAINTAIN_H
#define CJC_MAINTAIN_H

#include <stdint.h>
#include <time.h>

#include "store/store.h"

struct cjc_clean_report {
	uint64_t removed; /* entries */
	uint64_t failed;  /* entries that could not be removed */
};

/* Removes every entry, every manifest, every hash cache and every unsound
 * marker (below). */
int cjc_store_clean(const struct cjc_store *s, struct cjc_clean_report *r);
/* Moves the bad entry of a key to quarantine/<key>.<host>.<pid>.<random>;
 * *dest (malloc'd, a path to show) says where. */
int cjc_store_quarantine(const struct cjc_store *s, const char *key, char **dest);

/* Entries that did not reproduce when they were compiled again (the
 * verify_rate setting): an empty file unsound/<kk>/<key> marks one, and a
 * marked key is never served again (compile/lookup.h).  The marker is
 * looked up as every file of the store is, without following a link at
 * any step (one openat2: the cost of a hit), and only nothing at its name
 * is no marker: a link or a file a member planted on the way, or anything
 * at the name, whoever's, marks the key, so a member of a shared store
 * can only make it a miss.  What she can still do, as she can to any name
 * of a group store: remove a marker (docs/trust.md). */
int cjc_store_mark_unsound(const struct cjc_store *s, const char *key);
bool cjc_store_is_unsound(const struct cjc_store *s, const char *key);

struct cjc_reclaim_report {
	unsigned long staging, staging_kept; /* orphaned staging removed; live staging left */
	unsigned long temporaries;           /* killed writers' temporary files removed */
	unsigned long hash_caches;           /* hash caches removed */
	uint64_t hash_bytes;                 /* bytes of the hash caches left */
};

/* gc's share beyond entries; age in seconds (other hosts' staging, hash caches). */
int cjc_store_reclaim(const struct cjc_store *s, int64_t age, struct cjc_reclaim_report *r);

/*
 * The bookkeeping that serves entries, after gc evicted some: a manifest
 * goes when none of its records names an entry still in the store; a hash
 * cache or metadata memo (hashes/<kk>/, a speed cache: one removed costs a
 * re-hash of that unit's headers) when it was last written before
 * hashes_before, the last use of the least recently used entry left (NULL:
 * the time gc began, when none is left; {0, 0}: none goes).  What was written since gc began
 * stays: a compile of now.  bytes: what stays of manifests/ and hashes/.
 */
struct cjc_bookkeeping_report {
	unsigned long manifests, hash_caches; /* removed */
	uint64_t bytes;                       /* left */
};

int cjc_store_reclaim_bookkeeping(const struct cjc_store *s, const struct timespec *hashes_before,
				  struct cjc_bookkeeping_report *r);
/* The bytes of manifests/ and hashes/ (what stats shows beside the entries). */
uint64_t cjc_store_bookkeeping_bytes(const struct cjc_store *s);

#endif
