/*
 * lookup.h - the one hit path, beside the one miss path (publish.h): cjc's
 * compile (src/tool/launcher.c), the JIT library's nvcc and NVRTC paths
 * (src/jit) and the NVRTC shim (src/shim) describe a request; this finds
 * its entry and has it delivered, or says why it missed.
 *
 * A front end fills a struct cjc_lookup_request: the store and the direct
 * key, the rules that are its own (match: which record of a manifest holds
 * here; deliver: the entry's artifacts to the user, read and so verified),
 * and how events are counted and said (count, note).  Then:
 *
 *   cjc_lookup_local()   the direct key's manifest (manifest.h) in the
 *                        store; match names the record whose files are
 *                        unchanged; its entry is served (below).
 *   cjc_lookup_remote()  after a local miss: the first remote store
 *                        (remote.h) whose manifest has a record match
 *                        takes, its entry verified and published into the
 *                        store (the store kept within max_size), then
 *                        served; with remote_only it is served from its
 *                        staging, never published, and removed.
 *   cjc_lookup_entry()   the last step alone, for a caller whose record is
 *                        known (the JIT's NVRTC path: the source alone).
 *
 * Serving an entry: it is opened and its metadata checked (store.h); one
 * another user wrote must be signed by a trusted key (trusted_keys,
 * sign.h), else it is a miss counted CJC_STAT_UNTRUSTED; deliver reads
 * every byte it hands out against the metadata's hashes (cjc_entry_copy,
 * cjc_entry_read), and a failure is a miss counted CJC_STAT_DAMAGED; a
 * delivered entry is marked used (touch: evict.h) and counted
 * CJC_STAT_HITS with its recorded compile time.  Nothing is ever served
 * that was not verified on this read.
 *
 * The result says hit or why not (the status, and for a miss found in the
 * store the text that `cjc why` and the journal give); on a hit it holds
 * the record served (moved out of the manifest) and the entry's compile
 * time.  Journal records are the caller's (why.h, the JIT's journal).
 * Ownership: the caller releases the result (cjc_lookup_result_release).
 */
#ifndef CJC_LOOKUP_H
#define CJC_LOOKUP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"
#include "keys/manifest.h"
#include "remote/remote.h"
#include "store/stats.h"
#include "store/store.h"

enum cjc_lookup_status {
	CJC_LOOKUP_HIT,
	CJC_LOOKUP_NO_MANIFEST, /* nothing was cached with this direct key (or it is unusable) */
	CJC_LOOKUP_NO_MATCH,    /* no record's files are unchanged here */
	CJC_LOOKUP_ABSENT,      /* the record's entry is not in the store (evicted, cleaned) */
	CJC_LOOKUP_EVICTED,     /* evicted while being read */
	CJC_LOOKUP_DAMAGED,     /* failed verification (counted) */
	CJC_LOOKUP_UNTRUSTED,   /* not signed by a trusted key (counted) */
	CJC_LOOKUP_NOT_WRITTEN, /* verified, but deliver could not write it where it goes */
	CJC_LOOKUP_NO_REMOTE,   /* no remote store had it */
	CJC_LOOKUP_UNSOUND,     /* it did not reproduce when verified (maintain.h): never served */
};

/* deliver's answers besides 0 (delivered): the entry is damaged (-1), or
 * it is fine but the output could not be written here. */
#define CJC_LOOKUP_UNWRITTEN (-2)

struct cjc_lookup_request {
	struct cjc_store *store;      /* searched, and where remote entries are published */
	const char *direct_key;
	const char *trusted_keys;     /* config.h; NULL: every entry may be served */
	bool touch;                   /* mark a served entry used (not when the store is read-only) */
	struct cjc_remotes *remotes;  /* for cjc_lookup_remote; NULL: none */
	bool remote_only;             /* a remote entry is served from its staging, never published */
	uint64_t max_size;            /* the store's limit, for a remote entry published here */
	/* The record of m whose files are unchanged here, or -1. */
	long (*match)(void *ctx, const struct cjc_manifest *m);
	/* Delivers the entry rec names: 0; -1 (damaged) or CJC_LOOKUP_UNWRITTEN, why says. */
	int (*deliver)(void *ctx, const struct cjc_entry *e, const struct cjc_manifest_record *rec,
		       struct cjc_buf *why);
	void *ctx; /* for match and deliver */
	/* Counts an event (stats.h); says a line for the log; both with events. */
	void (*count)(void *events, enum cjc_counter what, uint64_t saved_ms);
	void (*note)(void *events, const char *line);
	void *events;
};

struct cjc_lookup_result {
	enum cjc_lookup_status status;
	char entry_key[CJC_HEX_LEN + 1]; /* on a hit: the entry served */
	struct cjc_manifest_record rec; /* on a hit: the record served (not cjc_lookup_entry's) */
	int64_t duration_ms;            /* on a hit: the entry's recorded compile time */
	char *why;                      /* on a miss in the store: what was found, or NULL */
};

enum cjc_lookup_status cjc_lookup_local(const struct cjc_lookup_request *q,
					struct cjc_lookup_result *out);
enum cjc_lookup_status cjc_lookup_remote(const struct cjc_lookup_request *q,
					 struct cjc_lookup_result *out);
/* Serves the entry rec names from the store; rec stays the caller's. */
enum cjc_lookup_status cjc_lookup_entry(const struct cjc_lookup_request *q,
					const struct cjc_manifest_record *rec,
					struct cjc_lookup_result *out);
void cjc_lookup_result_release(struct cjc_lookup_result *r);

#endif
