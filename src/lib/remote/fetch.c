/*
 * fetch.c - fetching an entry from the remote stores (remote.h): a store's
 * manifest for the direct key, matched by the caller; the entry record it
 * names, checked (and, with trusted_keys, its signature); the artifacts,
 * each checked against the record's hashes, staged; and the entry
 * published into the local store or left staged for the caller.  The
 * first record's entry is fetched ahead, on a thread, while the caller
 * matches (below).
 */
#include "remote/remote.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/compress.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/oom.h"
#include "base/thread.h"
#include "keys/metadata.h"
#include "keys/metamemo.h"
#include "remote/layout.h"
#include "remote/remote_internal.h"
#include "store/index.h"
#include "store/records.h"
#include "store/sign.h"

struct fetched {
	/* record: the value got, an entry record or a combined value */
	struct cjc_buf record, meta, sig;
	struct cjc_remote_combined inline_files; /* a combined value's, pointing into record */
	json_t *doc;
	struct cjc_artifact *files;
	size_t nfiles;
	const atomic_bool *stop; /* a fetch ahead no longer wanted (below): no more requests */
};

static void fetched_release(struct fetched *f)
{
	cjc_buf_release(&f->record);
	cjc_buf_release(&f->meta);
	cjc_buf_release(&f->sig);
	json_decref(f->doc);
	cjc_artifacts_free(f->files, f->nfiles);
}

/* The entry record of key from g, from its combined value where the store
 * keeps one (a hit's second and last round trip: the record and the small
 * artifacts at once), else from NS/e (a store an older cjc filled): 0, a
 * CJC_REMOTE_ABSENT, or -1 (counted). */
static int get_record(struct cjc_remotes *r, struct remote_group *g, const char *key,
		      struct fetched *f)
{
	struct cjc_remote_combined *c = &f->inline_files;
	int rc = g->combined ? remote_get(r, g, 'x', key, CJC_REMOTE_COMBINED_MAX, &f->record)
			     : CJC_REMOTE_ABSENT;
	if (rc == CJC_REMOTE_OK) {
		if (cjc_remote_decode_combined(f->record.data, f->record.len, c) ||
		    cjc_remote_decode_record(c->record, c->record_len, &f->meta, &f->sig))
			return remote_bad_data(r, g, "combined value", key, "damaged");
		return 0;
	}
	if (rc == CJC_REMOTE_ABSENT)
		rc = remote_get(r, g, 'e', key, CJC_REMOTE_RECORD_MAX, &f->record);
	if (rc != CJC_REMOTE_OK)
		return -1;
	if (cjc_remote_decode_record(f->record.data, f->record.len, &f->meta, &f->sig))
		return remote_bad_data(r, g, "entry record", key, "not a record");
	return 0;
}

/* The entry record of key from g, checked: 0, or -1 (counted). */
static int fetch_record(struct cjc_remotes *r, struct remote_group *g, const char *key, struct fetched *f)
{
	if (get_record(r, g, key, f))
		return -1;
	struct cjc_buf why = CJC_BUF_INIT;
	if (r->trusted_keys &&
	    cjc_sign_verify(r->trusted_keys, f->meta.data, f->meta.len, f->sig.data, f->sig.len, &why)) {
		cjc_log("remote store %s: entry %s not served: %s", g->shown, key, why.data);
		g->counts[CJC_STAT_UNTRUSTED]++;
		cjc_buf_release(&why);
		return -1;
	}
	if (!r->trusted_keys)
		cjc_buf_reset(&f->sig); /* not checked here: not kept, not passed on */
	f->doc = cjc_metadata_parse(f->meta.data, f->meta.len, key, &why);
	if (f->doc)
		f->files = cjc_metadata_artifacts(f->doc, &f->nfiles);
	int rc = f->doc && f->files
			 ? 0
			 : remote_bad_data(r, g, "metadata", key, why.len ? why.data : "no files");
	if (!rc) { /* checked: the local read that serves it need not parse it again */
		unsigned char sha[CJC_DIGEST_LEN];
		cjc_hash_buf(f->meta.data, f->meta.len, sha);
		cjc_metamemo_add(key, sha, f->files, f->nfiles,
				 json_integer_value(json_object_get(f->doc, "duration_ms")));
	}
	cjc_buf_release(&why);
	return rc;
}

static int hash_sink(void *ctx, const void *p, size_t n)
{
	cjc_hash_update(ctx, p, n);
	return 0;
}

/* Whether a's stored bytes, compressed, inflate to the bytes its record
 * names (SPEC 4.1: integrity covers both), never past their size. */
static bool inflates_right(const struct cjc_artifact *a, const void *p, size_t n)
{
	struct cjc_inflate z;
	struct cjc_hash h;
	char sha[CJC_HEX_LEN + 1];
	if (!a->stored_size)
		return true;
	cjc_hash_init(&h);
	int rc = cjc_inflate_begin(&z, a->size) ? -1 : cjc_inflate_feed(&z, p, n, hash_sink, &h);
	if (cjc_inflate_end(&z) || rc || z.made != a->size)
		return false;
	cjc_hash_final_hex(&h, sha);
	return !strcmp(sha, a->sha256);
}

/* An artifact's stored bytes, fetched or inline, checked against the
 * record and staged: 0, or -1 (counted). */
static int stage_artifact(struct cjc_remotes *r, struct remote_group *g, const char *key,
			  const struct cjc_artifact *a, const void *p, size_t n,
			  struct cjc_staging *st)
{
	char sha[CJC_HEX_LEN + 1];
	cjc_hash_buf_hex(p, n, sha);
	if (n != cjc_artifact_stored_size(a) || strcmp(sha, cjc_artifact_stored_sha(a)))
		return remote_bad_data(r, g, "artifact", key,
				       "size or SHA-256 differs from the metadata");
	if (!inflates_right(a, p, n))
		return remote_bad_data(r, g, "artifact", key,
				       "inflates to other bytes than the metadata's");
	if (cjc_staging_add_stored(st, a, p, n)) {
		cjc_log("cannot stage %s: %s", a->name, strerror(errno));
		return -1;
	}
	return 0;
}

/* Each artifact into the staging, checked: from the combined value when it
 * carries it, else fetched by its hash. */
static int fetch_artifacts(struct cjc_remotes *r, struct remote_group *g, const char *key,
			   const struct fetched *f, struct cjc_staging *st)
{
	struct cjc_buf data = CJC_BUF_INIT;
	int rc = 0;
	for (size_t i = 0; !rc && i < f->nfiles; i++) {
		const struct cjc_artifact *a = &f->files[i];
		const struct cjc_remote_inline *in = cjc_remote_inline_find(
			&f->inline_files, cjc_artifact_stored_sha(a));
		if (in) {
			rc = stage_artifact(r, g, key, a, in->p, in->n, st);
			continue;
		}
		if (f->stop && atomic_load(f->stop)) {
			rc = -1;
			break;
		}
		uint64_t size = cjc_artifact_stored_size(a); /* sent as stored (send.c) */
		if (size > CJC_REMOTE_MAX_ARTIFACT) {
			rc = remote_bad_data(r, g, "artifact", key, "larger than a remote artifact may be");
			break;
		}
		int got = remote_get(r, g, 'c', cjc_artifact_stored_sha(a), size, &data);
		if (got == CJC_REMOTE_ABSENT)
			snprintf(g->broken, sizeof g->broken, "%s", key); /* evicted: see send_entry */
		rc = got == CJC_REMOTE_OK ? stage_artifact(r, g, key, a, data.data, data.len, st)
					  : -1;
	}
	cjc_buf_release(&data);
	return rc;
}

/* The manifest a store holds for direct_key, decoded: 0, or -1 (counted).
 * With trusted_keys, only one that a trusted key signed; any other is a
 * miss, counted as untrusted, and nothing it names is looked at on this
 * machine: a server's records never make it stat or hash a file. */
static int fetch_manifest(struct cjc_remotes *r, struct remote_group *g, const char *direct_key,
			  struct cjc_manifest *m)
{
	struct cjc_buf raw = CJC_BUF_INIT, why = CJC_BUF_INIT;
	const void *file = NULL, *sig = NULL;
	size_t file_len = 0, sig_len = 0;
	int rc = remote_get(r, g, 'm', direct_key, CJC_REMOTE_MANIFEST_MAX, &raw) == CJC_REMOTE_OK ? 0 : -1;
	if (!rc && cjc_remote_decode_manifest(raw.data, raw.len, &file, &file_len, &sig, &sig_len))
		rc = remote_bad_data(r, g, "manifest", direct_key, "damaged");
	if (!rc && r->trusted_keys &&
	    cjc_remote_manifest_verify(r->trusted_keys, NULL, direct_key, file, file_len, sig, sig_len, &why)) {
		cjc_log("remote store %s: manifest %s not used: %s", g->shown, direct_key, why.data);
		g->counts[CJC_STAT_UNTRUSTED]++;
		rc = -1;
	}
	if (!rc && cjc_manifest_decode_file(file, file_len, m))
		rc = remote_bad_data(r, g, "manifest", direct_key, "damaged");
	cjc_buf_release(&raw);
	cjc_buf_release(&why);
	return rc;
}

/* The staging of a fetched entry: a local copy of one the remote store
 * keeps, whose rename need not be made durable (store.h), or with
 * transient one that is only served. */
static int begin_copy(const struct cjc_remotes *r, struct cjc_staging *st, bool transient)
{
	int rc = cjc_staging_begin_as(r->local, st, transient);
	if (!rc)
		st->copy = true;
	return rc;
}

/* An entry's record, checked, and its artifacts, staged (into st, begun
 * here unless the caller began it): 0, or -1 (counted). */
static int fetch_entry(struct cjc_remotes *r, struct remote_group *g, const char *key, struct fetched *f,
		       struct cjc_staging *st, bool transient)
{
	int rc = fetch_record(r, g, key, f);
	if (!rc && !st->dir)
		rc = begin_copy(r, st, transient);
	if (!rc)
		rc = fetch_artifacts(r, g, key, f, st);
	return rc;
}

/*
 * The entry of a manifest's first record (the newest: what a fleet's
 * runners match), fetched into a staging (sealed, when it is to be
 * published: cjc_staging_seal) on a thread of its own while the
 * caller matches the manifest against this machine's files, so that the
 * requests, the record's parsing and the artifacts' checks run beside the
 * hashing instead of after it (measured: a heavy remote hit 7 % faster on
 * Redis, 12 % on HTTP; docs/fleet.md).  Which entry it asks for does not
 * depend on those files, so it tells the server nothing that the manifest
 * did not say (the head comment of remote.h).
 *
 * Used only when that record is the one that matches.  Otherwise it is
 * stopped (no request after the one under way), dropped, its staging
 * removed, and what it did to the store's state is undone (struct undo):
 * its errors, a server it marked failed (that connection is closed), an
 * entry it found broken.  What stays is the time and the bytes it took.
 * Until the thread is joined only it uses the store's connections; it
 * runs with all signals blocked, and the staging is made before it starts
 * (the temporary-file list is the main thread's; fs.h).  Only for a record
 * of at least AHEAD_MIN files: a match that hashes fewer is over before a
 * thread would pay (NVRTC's records name one file).
 */
#define AHEAD_MIN 64

/* The store's state before a fetch ahead, put back when it is dropped. */
struct undo {
	uint64_t counts[CJC_STAT_COUNT];
	char broken[CJC_HEX_LEN + 1];
	bool *failed;
};

struct ahead {
	struct cjc_remotes *r;
	struct remote_group *g;
	const char *key;
	struct fetched f;
	struct cjc_staging st;
	atomic_bool stop;
	int rc;
	bool started;
	bool transient; /* the staging's (store.h) */
	pthread_t thread;
	struct undo undo;
};

/* The entry, staged; one to be published is also sealed here, so that its
 * fsyncs wait beside the match instead of after it (docs/fleet.md).  One
 * already stopped is not: it is dropped, and the caller is waiting. */
static void *fetch_ahead(void *arg)
{
	struct ahead *a = arg;
	a->rc = fetch_entry(a->r, a->g, a->key, &a->f, &a->st, a->transient);
	if (!a->rc && !a->transient && !atomic_load(&a->stop) &&
	    cjc_staging_seal(&a->st, &a->f.meta, &a->f.sig)) {
		cjc_log("cannot stage %s: %s", a->key, strerror(errno));
		a->rc = -1;
	}
	return NULL;
}

/* Where the match is abandoned (base/oom.h), the fetch ahead stops before
 * it is joined, instead of reading the whole entry for no one. */
static void stop_ahead(void *a)
{
	atomic_store(&((struct ahead *)a)->stop, true);
}

/* Starts the fetch ahead of m's first record (its staging made here);
 * a->started says whether it did. */
static void start_ahead(struct ahead *a, const struct cjc_manifest *m)
{
	if (!m->n || m->recs[0].ndeps < AHEAD_MIN ||
	    begin_copy(a->r, &a->st, a->transient))
		return;
	struct undo *u = &a->undo;
	a->key = m->recs[0].entry_key;
	a->f.stop = &a->stop;
	memcpy(u->counts, a->g->counts, sizeof u->counts);
	memcpy(u->broken, a->g->broken, sizeof u->broken);
	u->failed = cjc_xcalloc(a->g->n, sizeof *u->failed);
	for (size_t k = 0; k < a->g->n; k++)
		u->failed[k] = a->g->servers[k].failed;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	a->started = !cjc_thread_start(&a->thread, fetch_ahead, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!a->started) {
		cjc_staging_abort(&a->st);
		free(u->failed);
	} else {
		cjc_oom_undo_push(stop_ahead, a);
	}
}

/* Puts back what a dropped fetch ahead changed (struct undo), but for the
 * bytes it read; a server it failed is asked again on a new connection. */
static void undo_ahead(struct remote_group *g, struct undo *u)
{
	uint64_t read = g->counts[CJC_STAT_REMOTE_READ];
	memcpy(g->counts, u->counts, sizeof g->counts);
	g->counts[CJC_STAT_REMOTE_READ] = read;
	memcpy(g->broken, u->broken, sizeof g->broken);
	for (size_t k = 0; k < g->n; k++) {
		struct remote_server *sv = &g->servers[k];
		if (sv->failed && !u->failed[k] && sv->b) {
			sv->ops->close(sv->b);
			sv->b = NULL;
		}
		sv->failed = u->failed[k];
	}
}

/* Record i's entry, as fetch_entry gives it: the fetch ahead's when that
 * was record 0's, else fetched now, the fetch ahead (if any) stopped,
 * dropped and undone. */
static int entry_of(struct ahead *a, const struct cjc_manifest *m, long i, struct fetched *f,
		    struct cjc_staging *st)
{
	if (a->started) {
		cjc_oom_undo_pop(stop_ahead, a);
		if (i != 0)
			atomic_store(&a->stop, true);
		cjc_thread_join(a->thread);
		a->f.stop = NULL;
		if (i != 0) {
			cjc_staging_abort(&a->st);
			fetched_release(&a->f);
			undo_ahead(a->g, &a->undo);
		}
		free(a->undo.failed);
	}
	if (a->started && i == 0) {
		*f = a->f;
		*st = a->st;
		return a->rc;
	}
	return i >= 0 ? fetch_entry(a->r, a->g, m->recs[i].entry_key, f, st, a->transient) : -1;
}

/* The fetched entry of key in the local store (and its record in the
 * local manifest), or, with keep, left finished in *keep, unpublished.
 * *new_bytes: its size when this call published it. */
static int settle(struct cjc_remotes *r, struct fetched *f, struct cjc_staging *st,
		  const char *direct_key, const struct cjc_manifest_record *rec,
		  struct cjc_staging *keep, uint64_t *new_bytes)
{
	if (keep) {
		int rc = cjc_staging_finish(st, &f->meta, &f->sig);
		if (rc)
			cjc_staging_abort(st);
		else
			*keep = *st, keep->index_doc = NULL; /* f's, released by the caller */
		return rc;
	}
	bool won = false;
	uint64_t bytes = f->meta.len;
	for (size_t k = 0; k < st->nfiles; k++)
		bytes += cjc_artifact_stored_size(&st->files[k]);
	if (cjc_staging_publish(r->local, st, rec->entry_key, &f->meta, &f->sig, &won))
		return -1;
	char *mname = cjc_store_manifest_name(direct_key);
	if (cjc_manifest_add(r->local, mname, rec))
		cjc_log("cannot update manifest %s: %s", mname, cjc_untrusted_error(errno));
	free(mname);
	*new_bytes = won ? bytes : 0;
	return 0;
}

/* Tries one store: 0 when its entry is now in the local store, or in *keep. */
static int fetch_from(struct cjc_remotes *r, struct remote_group *g, const char *direct_key,
		      cjc_remote_match_fn match, void *ctx, struct cjc_manifest_record *out,
		      struct cjc_staging *keep, uint64_t *new_bytes)
{
	struct cjc_manifest m = { 0 };
	struct fetched f = { 0 };
	struct cjc_staging st = { 0 };
	uint64_t failures = g->counts[CJC_STAT_REMOTE_ERRORS] + g->counts[CJC_STAT_REMOTE_TIMEOUTS];
	int rc = fetch_manifest(r, g, direct_key, &m);
	struct ahead a = { .r = r, .g = g, .transient = keep != NULL };
	if (!rc)
		start_ahead(&a, &m);
	long i = rc ? -1 : match(ctx, &m);
	rc = entry_of(&a, &m, i, &f, &st);
	st.index_doc = f.doc;
	st.published = cjc_index_published; /* `cjc ls`'s row, as a local publication's */
	if (!rc)
		rc = settle(r, &f, &st, direct_key, &m.recs[i], keep, new_bytes);
	else if (st.dir)
		cjc_staging_abort(&st);
	if (!rc) {
		cjc_log("remote hit %s from %s", m.recs[i].entry_key, g->shown);
		*out = m.recs[i]; /* moved out: m no longer owns it */
		memset(&m.recs[i], 0, sizeof m.recs[i]);
	}
	if (!rc)
		g->counts[CJC_STAT_REMOTE_HITS]++;
	else if (g->counts[CJC_STAT_REMOTE_ERRORS] + g->counts[CJC_STAT_REMOTE_TIMEOUTS] == failures)
		g->counts[CJC_STAT_REMOTE_MISSES]++; /* a failed store is counted as failed only */
	fetched_release(&f);
	cjc_manifest_release(&m);
	return rc;
}

int cjc_remote_fetch(struct cjc_remotes *r, const char *direct_key, cjc_remote_match_fn match,
		     void *ctx, struct cjc_manifest_record *rec, uint64_t *new_bytes)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (!fetch_from(r, &r->groups[i], direct_key, match, ctx, rec, NULL, new_bytes))
			return 0;
	return -1;
}

int cjc_remote_fetch_unpublished(struct cjc_remotes *r, const char *direct_key,
				 cjc_remote_match_fn match, void *ctx,
				 struct cjc_manifest_record *rec, struct cjc_staging *st)
{
	uint64_t none = 0;
	for (size_t i = 0; r && i < r->n; i++)
		if (!fetch_from(r, &r->groups[i], direct_key, match, ctx, rec, st, &none))
			return 0;
	return -1;
}
