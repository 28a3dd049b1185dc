/*
 * seam.h - the seam the NVRTC shim (src/shim, docs/nvrtc-shim.md) builds on:
 * the part of the JIT library's modules (jit_internal.h, which includes
 * this) that a compile through the shim uses too: a job on a handle, its
 * store, remote stores, hash memo, counters and journal.  The handle's
 * layout stays private: the shim sees it through the calls below.
 *
 * Only src/jit and src/shim may include it (tests/layers_test.sh); the shim
 * includes nothing else of src/jit but the public <cudajitcache/jit.h>.
 * Functions return 0 or -1 and set the handle's error (jit_fail) unless a
 * comment says otherwise.
 */
#ifndef CJC_JIT_SEAM_H
#define CJC_JIT_SEAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/hash.h"
#include "base/util.h"
#include "compile/lookup.h"
#include "compile/publish.h"
#include "compile/watch.h"
#include "cudajitcache/jit.h"
#include "keys/manifest.h"
#include "keys/metadata.h"
#include "keys/nvcc_args.h"
#include "keys/place.h"
#include "remote/remote.h"
#include "store/identity.h"
#include "store/store.h"

struct cjc_jit;

/* handle.c: what the shim reads of a handle.  The store is the handle's once
 * jit_store_ready() said yes; readonly is its `readonly` setting. */
struct cjc_store *jit_store_of(struct cjc_jit *h);
bool jit_readonly(const struct cjc_jit *h);

/* ---- handle.c ---- */

/* Opens the handle's store at the first call (cjc_jit_open touches nothing
 * on disk) and says whether it is usable; thread-safe, and cheap after the
 * first call.  It sets no error: an unusable store means compiling without
 * it (docs/jit.md). */
bool jit_store_ready(struct cjc_jit *h);

/* Sets this thread's error on the handle; always returns -1. */
int jit_fail(struct cjc_jit *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line for the cjc log (the `log` setting), when there is one. */
void jit_note(const struct cjc_jit *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A publication (publish.h) of entry key, for source name, into the
 * handle's store with its settings; notes go to the cjc log (jit_note).
 * The caller adds the artifact and what else it has. */
struct cjc_publish jit_publish_of(struct cjc_jit *h, const char *key, const char *name,
				  const struct cjc_metadata *md);

/* The remote tier: the handle's remote stores (the `remote` setting), opened
 * for one compile's miss and closed after it, so a store that failed is
 * tried again at the next miss; NULL when there are none or readonly is set. */
struct cjc_remotes *jit_remote_open(struct cjc_jit *h);

/* What went into a compile's key, for its journal record (journal.c): set
 * once the compile is looked up in the store; borrowed from the compiler's
 * job, which outlives every record. */
struct jit_why {
	bool set;
	const struct cjc_compile *c; /* nvcc */
	const char *cwd;
	const struct cjc_identity *nvcc, *host;
	const struct cjc_strvec *env;
	const struct cjc_strvec *options; /* NVRTC */
	struct cjc_identity library;      /* NVRTC: its strings borrowed */
};

/* What one compile works with, whichever the compiler. */
struct jit_job {
	struct cjc_jit *h;
	const struct cjc_jit_request *req;
	const char *name;
	const char *arch;
	const char *ext;           /* "cubin", "fatbin", "ptx" */
	unsigned char code_sha[CJC_DIGEST_LEN];
	char *source;              /* the source's path as keyed: JIT_KEYED_SOURCE_DIR/<name> */
	json_t *meta;              /* metadata.json's "jit": name, source, extra_signature, hook */
	struct cjc_jit_result *out;
	bool cached;               /* jit_cacheable() said yes */
	const char *compiler;      /* for the journal, when not the handle's ("nvrtc-shim") */
	struct jit_why why;
};

/* The entry's copy of the source (an artifact of every JIT entry). */
#define JIT_SOURCE_FILE CJC_JIT_SOURCE_FILE

/* Whether a compile may use the store: not with `disable` set, nor when the
 * store is unusable (jit_store_ready); when not, one note says why and the
 * compile runs without the cache. */
bool jit_cacheable(struct jit_job *j);

/* Where the key and metadata.json say the source is: a path that cannot
 * exist, for where the file really lies (below) must be no part of a key. */
#define JIT_KEYED_SOURCE_DIR CJC_JIT_SOURCE_DIR

/* Counts a hit or a miss in the store (stats.h). */
void jit_count(struct jit_job *j, int counter, uint64_t saved_ms);

/* ---- hit.c ---- */

/* The handle's part of a lookup (compile/lookup.h) for a job's direct key:
 * its store (the metadata memo loaded first), trusted_keys, readonly and
 * max_size, its counters (jit_count) and notes (jit_note).  The caller adds
 * match, deliver and ctx, and the remote stores. */
struct cjc_lookup_request jit_lookup_request(struct jit_job *j, const char *direct_key);
/* After a lookup: whether it served the entry, then journaled as a hit
 * (jit_journal_hit). */
bool jit_lookup_served(struct jit_job *j, const struct cjc_lookup_result *r);

/* ---- deps.c ---- */

/* deps.c: the first record of m whose entry key its files give and whose
 * files are unchanged, or -1.  The source (the path source, or named when
 * not NULL: nvcc.c keys a request's source by either) is compared with
 * source_sha, the bytes in hand. */
long jit_deps_match(struct cjc_jit *h, const struct cjc_manifest *m, const char *direct_key,
		    const struct cjc_place *place, const char *source,
		    const unsigned char source_sha[CJC_DIGEST_LEN]);
long jit_deps_match_named(struct cjc_jit *h, const struct cjc_manifest *m, const char *direct_key,
			  const struct cjc_place *place, const char *source, const char *named,
			  const unsigned char source_sha[CJC_DIGEST_LEN]);
/* The size and SHA-256 of a file as it is now, remembered by its stamp.
 * With expect (not JIT_ANY_SIZE), a file of another size is -1 unread: a
 * record's file that has changed size, or a huge one a record names, is
 * not hashed to find that out. */
#define JIT_ANY_SIZE UINT64_MAX
int jit_deps_hash(struct cjc_jit *h, const char *path, uint64_t expect, uint64_t *size,
		  unsigned char sha[CJC_DIGEST_LEN]);
/* The record of what a watched NVRTC compile of job j read (compile/watch.h,
 * settled here): the source (j->source, source_size bytes, j->code_sha),
 * each file found, hashed now (its stamp held through the compile), and
 * each name not found; rec's entry key is the caller's.  0; or -1 with why
 * (what the watch could not key, a file that cannot be read, or one that
 * names __DATE__, __TIME__ or __TIMESTAMP__: rules.h). */
int jit_deps_record(struct jit_job *j, size_t source_size, struct cjc_watch *w,
		    struct cjc_manifest_record *rec, struct cjc_buf *why);
/* The hashes remembered across processes: the store's memo "hashes/jit"
 * (records.h: a memo of yours or root's), read before the handle's first
 * lookup and written after a miss and at close when a hash was taken.
 * Each is used only while its file's stamp holds, as in the handle. */
void jit_deps_load(struct cjc_jit *h);
void jit_deps_save(struct cjc_jit *h);

/*
 * journal.c: a record in the cjc journal (store/journal.h; fields in
 * compile/why.h) for each compile looked up in the store, as cjc's launcher
 * writes one, so that `cjc why --jit NAME` explains it.  A hit from a
 * handle's memory writes none: it would cost more than the hit.  Each call
 * is one line in nvcc.c or nvrtc.c; failures to write are noted (jit_note),
 * never returned.
 *
 *   jit_journal_facts_nvcc/_nvrtc  what went into the key: after this, the
 *                                  compile's records are written
 *   jit_journal_uncacheable        the compile is not cached, and why (NULL: nothing)
 *   jit_journal_hit                an entry served from the store (or a remote store)
 *   jit_journal_compiled           after the compiler ran: rc != 0, "failed"
 *                                  with the call's error; else a miss, its
 *                                  record (rec, with the entry key when it
 *                                  can be published), whether the entry is
 *                                  in the store, or why not (unstable)
 */
void jit_journal_facts_nvcc(struct jit_job *j, const struct cjc_compile *c, const char *cwd,
			    const struct cjc_identity *nvcc, const struct cjc_identity *host,
			    const struct cjc_strvec *env);
void jit_journal_facts_nvrtc(struct jit_job *j, const struct cjc_strvec *options,
			     const char *realpath, const char *version, const char *digest);
void jit_journal_uncacheable(struct jit_job *j, const char *reason);
void jit_journal_hit(struct jit_job *j, const char *key, int64_t saved_ms);
void jit_journal_compiled(struct jit_job *j, int rc, const struct cjc_manifest_record *rec,
			  bool published, int64_t duration_ms, const char *unstable);

/* ---- nvrtc.c ---- */

/* The identity of the NVRTC that holds the function version (nvrtcVersion)
 * and was asked for as path: its version, the library and the
 * libnvrtc-builtins beside it hashed, remembered in the handle's store when
 * it is usable (identity.h); -1 with the reason in why. */
int jit_nvrtc_identify(struct cjc_jit *h, int (*version)(int *, int *), const char *path,
		       struct cjc_identity *id, struct cjc_buf *why);

#endif
