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

#include "store/store.h"

struct cjc_clean_report {
	uint64_t removed; /* entries */
	uint64_t failed;  /* entries that could not be removed */
};

/* Removes every entry, every manifest and every hash cache. */
int cjc_store_clean(const struct cjc_store *s, struct cjc_clean_report *r);
/* Moves the bad entry of a key to quarantine/<key>.<host>.<pid>.<random>;
 * *dest (malloc'd, a path to show) says where. */
int cjc_store_quarantine(const struct cjc_store *s, const char *key, char **dest);

struct cjc_reclaim_report {
	unsigned long staging, staging_kept; /* orphaned staging removed; live staging left */
	unsigned long temporaries;           /* killed writers' temporary files removed */
	unsigned long hash_caches;           /* hash caches removed */
	uint64_t hash_bytes;                 /* bytes of the hash caches left */
};

/* gc's share beyond entries; age in seconds (other hosts' staging, hash caches). */
int cjc_store_reclaim(const struct cjc_store *s, int64_t age, struct cjc_reclaim_report *r);

#endif
