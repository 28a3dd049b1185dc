/*
 * remote.h - remote stores (docs/remote.md): the backend seam, the remote
 * layout, and fetching and publishing whole entries.
 *
 * The `remote` setting holds store URLs separated by spaces, each with
 * attributes after `|` (read-only, connect-timeout=T, operation-timeout=T,
 * shards=A,B(2),..., bearer-token-file=F, credentials-file=F, ca-file=F,
 * helper, no-helper, helper-idle=T).  cjc_remote_open() parses them without connecting; a backend
 * connects on its first request.
 *
 * The seam (remote_backend.h, private to this folder): a backend answers
 * get, put-if-absent, put (replace) and exists for a name, each bounded by
 * the store's timeouts, with one result:
 *
 *     CJC_REMOTE_OK, CJC_REMOTE_ABSENT, CJC_REMOTE_ERROR, CJC_REMOTE_TIMEOUT
 *
 * and, on an error, a message in `why` that names no secret.  One file per
 * backend: remote_redis.c (hiredis), remote_http.c (libcurl: http, https and
 * s3 through libcurl's SigV4 signing), remote_oci.c (libcurl: OCI registries,
 * oci:// and oci+http://); each is built when its library is.  What this
 * header offers is built on them by the seam's files: remote.c (a handle's
 * stores and the requests to them), setting.c (the `remote` setting),
 * fetch.c, send.c, leases.c and check.c; the values' formats are
 * layout.h's.  The backends use remote_backend.h and layout.h only, never
 * the seam, so no file below calls up into it.
 *
 * The layout on every backend, under the store's prefix (NS is the local
 * namespace, e.g. v1/linux-x86_64, so platforms never mix):
 *
 *     NS/c/<sha256>     an artifact, content-addressed: whoever fetches it
 *                       checks its SHA-256 and size against the entry record,
 *                       so a tampered or truncated one is only a miss
 *     NS/e/<entry key>  the entry record: a blob (blob.h, magic "CJCE") of
 *                       two strings, metadata.json's exact bytes and the
 *                       signature file's (empty when unsigned, sign.h)
 *     NS/x/<entry key>  the combined value (layout.h, magic "CJCX"): the
 *                       entry record and, inline, the artifacts that fit
 *                       its bounds, so that a hit is two requests, the
 *                       manifest and this; written beside NS/e and NS/c
 *                       (which an older cjc reads) by stores that keep
 *                       any value (Redis, HTTP, S3: not OCI registries,
 *                       whose manifests embed an entry instead).  A
 *                       reader that finds none reads NS/e and NS/c
 *     NS/m/<direct key> the manifest (manifest.h), a hint merged by writers:
 *                       the manifest file as the local store keeps it
 *                       (magic "CJCM") when unsigned; signed, a blob (magic
 *                       "CJCS") of two strings, the manifest file's exact
 *                       bytes and the signature file's (sign.h) over
 *                       "cudajitcache.manifest.v1 <direct key>\n" and them
 *
 * Why a poisoned manifest or entry record can only cause a miss: the
 * fetcher recomputes the entry key from the manifest record's files as they
 * are on its own disk (cjc_manifest_match), so a record can only name the
 * entry those files give; the entry record's metadata must parse strictly
 * and name that same key, and every artifact it lists is fetched by its
 * SHA-256, or taken from the combined value, and checked the same way.  With trusted_keys set, the
 * metadata must also carry a signature of a trusted key (sign.h).
 *
 * Why, with trusted_keys, a manifest must be signed too: matching a record
 * stats and hashes the files it names, and which entry record is asked for
 * next tells the server whether they exist and what they hold (a record
 * naming /root/secret with a guessed SHA-256).  So an unsigned manifest,
 * or one no trusted key signed, is a miss (untrusted) and nothing in it is
 * looked at.  A writer with sign_key signs the manifests it writes, over
 * records it can vouch for: a record is as good as the entry it names
 * (the entry key is the hash of the record's files, and the entry's
 * metadata binds it), so it signs a record whose entry bears its own or a
 * trusted key's signature, and keeps the old records only of a manifest
 * that such a key signed.  Writers without sign_key write unsigned ones,
 * as before, but leave a signed one as it is; readers without trusted_keys
 * take either.
 *
 * What a remote store returns is read up to a bound, known before anything
 * is allocated: the manifest and record caps of store.h (each plus a
 * signature; a combined value the record's plus CJC_REMOTE_INLINE_MAX), and
 * each artifact's listed size, itself at most
 * CJC_REMOTE_MAX_ARTIFACT (remote_backend.h; a record naming more is bad
 * data).  A backend
 * stops reading a reply as soon as it would pass the bound (a Redis reply
 * by its length prefix, an HTTP body by Content-Length or by what came).
 *
 * The deadline: one operation-timeout per handle (one compile), shared by
 * all its requests to all its stores, connections included, whatever the
 * servers do (drip, stall, answer each request just in time).  Each store
 * spends at most its own operation-timeout; all of them together at most
 * the largest.  Before each
 * request the caller sets u->deadline_ms to what is left; the backend
 * stops waiting at it, and a request that would start after it is a
 * timeout.  Time spent outside requests (nvcc running) does not count.
 *
 * Failure policy: the first error or timeout of a store marks it failed for
 * the rest of this handle (one compile), so a dead store costs at most its
 * timeout once.  Every outcome is counted per store (stats.h); nothing here
 * fails a build.  Authentication and configuration failures are reported
 * through the `report` callback once per store (the tool prints them).
 */
#ifndef CJC_REMOTE_H
#define CJC_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"
#include "keys/manifest.h"
#include "keys/place.h"
#include "remote/layout.h"
#include "store/store.h"

/* The setting with the user info of each URL as *** (malloc'd), parsed by
 * the URLs' structure, whatever characters a password holds (setting.c). */
char *cjc_remote_redact(const char *text);
/* What may be shown of a value that was rejected: the scheme of each URL and
 * nothing more ("redis://... ..."), since where a password ends in a
 * malformed value is anyone's guess. */
char *cjc_remote_redact_rejected(const char *text);
/* Checks the `remote` setting's syntax: 0, or -1 with a message. */
int cjc_remote_check_setting(const char *text, struct cjc_buf *why);

struct cjc_remotes;
typedef void (*cjc_remote_report_fn)(const char *store, const char *message);

/* NULL when text names no store.  sign_key (signs the manifests this
 * handle writes) and trusted_keys (what it accepts) may be NULL. */
struct cjc_remotes *cjc_remote_open(const char *text, const struct cjc_store *local,
				    const char *sign_key, const char *trusted_keys,
				    cjc_remote_report_fn report);
void cjc_remote_close(struct cjc_remotes *r);
size_t cjc_remote_count(const struct cjc_remotes *r);
const char *cjc_remote_shown(const struct cjc_remotes *r, size_t i);

/*
 * Looks for the compile's entry in each store in order: match (called with
 * ctx) says which record of a store's manifest for direct_key names it, as
 * the caller checks its files (cjc_manifest_match, for a cjc compile); the
 * first store that has that entry, verified, publishes it into the local
 * store (and its record into the local manifest).  0: it is there now, and
 * rec is the record that named it (the caller releases it: manifest.h), so
 * the caller serves it without reading the manifest again; new_bytes is its
 * size when this call published it (0 when another writer had); -1: no
 * store had it.
 */
typedef long (*cjc_remote_match_fn)(void *ctx, const struct cjc_manifest *m);
int cjc_remote_fetch(struct cjc_remotes *r, const char *direct_key, cjc_remote_match_fn match,
		     void *ctx, struct cjc_manifest_record *rec, uint64_t *new_bytes);
/* The same for remote_only (docs/remote.md): the entry is not published
 * into the local store but left in *st, a finished staging (store.h) that
 * was never fsynced, for the caller to serve (cjc_staging_open_entry) and
 * then remove (cjc_staging_abort); the local manifest is not written. */
int cjc_remote_fetch_unpublished(struct cjc_remotes *r, const char *direct_key,
				 cjc_remote_match_fn match, void *ctx,
				 struct cjc_manifest_record *rec, struct cjc_staging *st);

/* Closes the open connections (a failed store stays failed): before nvcc
 * runs, so a server's idle timeout cannot close one under a long compile,
 * and a fleet of compiling runners holds no connections it does not use. */
void cjc_remote_hang_up(struct cjc_remotes *r);

/* Sends a local entry, with the signature it has if any (its writer signed
 * it; nothing here signs an entry it did not make), and the manifest record
 * naming it (signed as above), to every store that is not read-only.  rec
 * may be NULL (no manifest update).  Returns the number of stores that now
 * hold it. */
int cjc_remote_publish(struct cjc_remotes *r, const char *entry_key, const char *direct_key,
		       const struct cjc_manifest_record *rec);
/* The same for an entry finished in st and never published (remote_only). */
int cjc_remote_publish_staged(struct cjc_remotes *r, const struct cjc_staging *st,
			      const char *entry_key, const char *direct_key,
			      const struct cjc_manifest_record *rec);

/*
 * Leases (compile/lease.h): NS/l/<direct key>, a short value naming its
 * holder, with an expiry, in the first store that is not read-only and
 * whose backend takes leases (Redis: SET NX PX; unlease compares with
 * GETRANGE, then SET XX PX 1, so only the commands a writer's ACL already
 * allows are used).  Lease requests are bounded by the store's timeouts
 * like any request, and end by `until` (cjc_now_ms(); 0: none), the wait's
 * bound, when it comes first: a request that would start past it is not
 * sent, one that reaches it is a timeout.  They are not charged to the
 * compile's operation-timeout: the lease's own wait bounds how many there
 * are.  A store that fails a lease request fails for the handle, as for
 * any request.
 */
enum cjc_remote_lease {
	CJC_REMOTE_LEASE_NONE,  /* no store takes leases, or it failed */
	CJC_REMOTE_LEASE_TAKEN, /* this handle holds it until cjc_remote_lease_end() */
	CJC_REMOTE_LEASE_HELD   /* another holds it */
};
enum cjc_remote_lease cjc_remote_lease_take(struct cjc_remotes *r, const char *direct_key,
					    long ttl_ms, int64_t until);
/* Whether the lease cjc_remote_lease_take() found held is still there: 1
 * held, 0 let go, -1 the store failed or the request reached until. */
int cjc_remote_lease_held(struct cjc_remotes *r, const char *direct_key, int64_t until);
/* The store that takes leases, as shown (no secret), or NULL when none does. */
const char *cjc_remote_lease_store(struct cjc_remotes *r);
/* Ends this handle's lease, if it took one. */
void cjc_remote_lease_end(struct cjc_remotes *r, const char *direct_key);

/* `cjc remote check`: reach, write, read back, for store i; 0 or -1 with why. */
int cjc_remote_check(struct cjc_remotes *r, size_t i, struct cjc_buf *report);

#endif
