/*
 * oci_internal.h - what the OCI registry backend's files share (private to
 * this folder): the backend, a request and its reply, and each file's
 * calls.  remote_oci.c is the backend the seam calls (its head comment is
 * the manual: the layout in a registry, authentication); below it, each
 * file one concern, none calling up:
 *
 *     oci_blobs.c     blob transfer: get, HEAD and upload, many at once
 *     oci_auth.c      authentication: credentials, tokens, a 401 answered
 *     oci_request.c   one HTTP exchange: set up, bounded, its result
 *     oci_manifest.c  our OCI manifests, read and written (oci.h)
 *     oci_shelf.c     values carried in or named by another's manifest
 */
#ifndef CJC_OCI_INTERNAL_H
#define CJC_OCI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "base/util.h"
#include "remote/curl.h"
#include "remote/remote_backend.h"

#define MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_EMPTY "application/vnd.oci.empty.v1+json"
#define EMPTY_HEX "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
#define FETCH_AT_ONCE 8 /* blobs fetched at once: a value's and its entry's */
#define SHELF_ITEM_MAX ((size_t)1 << 20) /* the largest value the shelf keeps */

enum oci_scope { OCI_PULL, OCI_PUSH, OCI_NSCOPES };
struct oci_auth; /* oci_auth.c's */

struct cjc_remote_backend {
	CURL *curl;
	char *origin; /* http(s)://HOST[:PORT] */
	char *repo;
	char *user, *password; /* basic credentials, or NULL */
	char *bearer;          /* bearer-token-file's ready token, or NULL */
	char *ca_file;
	bool tls;
	struct oci_auth *auth;        /* in auths, or own when they are all taken */
	struct oci_auth *own;
	char absent[CJC_HEX_LEN + 1]; /* the blob the last exists found absent */
	bool empty_there;         /* the empty config blob is in the repository */
	bool merging;             /* an entry record was just put: the next get of a
				   * direct-mode manifest is its writer's, to merge */
	const struct cjc_remote_url *u;
	char error[CURL_ERROR_SIZE];
	CURLM *multi;                /* blobs fetched at once (get_at_once), */
	CURL *side[FETCH_AT_ONCE];   /* on handles of their own */
};

struct oci_request {
	const char *method; /* GET, HEAD, PUT, POST */
	char *url;          /* absolute */
	enum oci_scope scope;
	const char *accept, *content_type;
	const void *body;
	size_t n;
	struct cjc_buf *out; /* a 2xx reply's body, at most max bytes */
	size_t max;
	bool follow; /* redirects (a blob's GET: registries send them to storage) */
};

struct oci_reply {
	CURL *curl;
	const struct oci_request *rq;
	long status;
	bool too_large;
	bool out_of_memory; /* a body not kept: curl's callbacks may not jump (base/oom.h) */
	bool elsewhere;             /* answered by another host than the one asked (a redirect) */
	char *challenge, *location; /* the last response's */
	struct cjc_buf error;       /* a non-2xx body's start */
};

/* --- oci_request.c ----------------------------------------------------- */

struct curl_slist *oci_prepare(struct cjc_remote_backend *b, CURL *c, const struct oci_request *rq,
			       struct oci_reply *r, long left, char *error);
/* What the request sent on c came to: its status, and whether another
 * host answered. */
void oci_answered(CURL *c, struct oci_reply *r);
/* The result (remote_backend.h) of a request that was sent, by curl's code
 * and the status, with why. */
int oci_result_of(struct cjc_remote_backend *b, CURLcode code, struct oci_reply *r, struct cjc_buf *why);
/* Whether url is on the registry itself (credentials may go there). */
bool oci_on_registry(const struct cjc_remote_backend *b, const char *url);

/* --- oci_auth.c ------------------------------------------------------------ */

/* The store's credentials-file (USER:SECRET) into b: 0, or -1 with why. */
int oci_read_credentials(struct cjc_remote_backend *b, const char *file, struct cjc_buf *why);
/* b->auth: the process's memory of what this registry asks for, with
 * these credentials (b->own when that memory is full, freed with b). */
void oci_auth_find(struct cjc_remote_backend *b);
void oci_auth_free(struct oci_auth *a);
/* c carries what the request carries now: a ready token, a fetched one,
 * the basic credentials once the registry asked for them, or nothing. */
void oci_authorize(struct cjc_remote_backend *b, CURL *c, const struct oci_request *rq);
/* One request, answering one 401; location (when not NULL) takes the
 * reply's Location.  A result (remote_backend.h). */
int oci_ask(struct cjc_remote_backend *b, const struct oci_request *rq, char **location,
	    struct cjc_buf *why);

/* --- oci_blobs.c ----------------------------------------------------------- */

/* The blobs of a batch, fetched at once (oci_get_blobs). */
struct oci_wanted {
	char hex[CJC_HEX_LEN + 1];
	char key[CJC_HEX_LEN + 1]; /* a record's entry (on the shelf as "e:KEY"), or "" */
	uint64_t size;
	struct cjc_buf bytes; /* once fetched whole */
	bool whole;
};

struct oci_batch {
	struct oci_wanted w[FETCH_AT_ONCE];
	size_t n;
};

char *oci_blob_url(const struct cjc_remote_backend *b, const char *hex);
/* A blob, at most max bytes, checked against its digest. */
int oci_blob_get(struct cjc_remote_backend *b, const char *hex, size_t max, struct cjc_buf *out,
		 struct cjc_buf *why);
/* A HEAD of url (freed here): a manifest's, or a blob's. */
int oci_head_url(struct cjc_remote_backend *b, char *url, bool manifest, struct cjc_buf *why);
/* Uploads a blob (POST, then PUT to the Location with its digest). */
int oci_upload(struct cjc_remote_backend *b, const char *hex, const void *p, size_t n,
	       struct cjc_buf *why);
/* The same, unless a HEAD finds it there. */
int oci_blob_put(struct cjc_remote_backend *b, const char *hex, const void *p, size_t n,
		 struct cjc_buf *why);
/* Adds a blob a manifest names to the batch (its last place is the value's). */
void oci_want(struct oci_batch *bt, const char *hex, const char *entry_key, uint64_t size);
/* The blobs of bt at once: the last, with value, into out; the others to
 * the shelf. */
int oci_get_blobs(struct cjc_remote_backend *b, struct oci_batch *bt, bool value, struct cjc_buf *out,
		  struct cjc_buf *why);

/* --- oci_manifest.c -------------------------------------------------------- */

/* What a manifest of each kind says it is ('e': an entry record, 'm': a
 * direct-mode manifest), and its value's layer; NULL for another letter. */
struct oci_kind {
	char letter;
	const char *artifact_type, *layer_type;
};
const struct oci_kind *oci_kind_of(char letter);
/* The manifest carrying value p (n bytes, SHA-256 hex) of kind k, key its
 * entry or direct key (malloc'd JSON, or NULL). */
char *oci_manifest_for(const struct oci_kind *k, const char *key, const void *p, size_t n,
		       const char *hex);

/* --- oci_shelf.c ----------------------------------------------------------- */

/* The shelf's name of a blob (entry_key NULL) or of an entry's record. */
void oci_shelf_name(const char *hex, const char *entry_key, char name[CJC_HEX_LEN + 3]);
/* Keeps a copy of bytes whose SHA-256 is hex, when small enough. */
void oci_shelf_put(const char *hex, const char *entry_key, const void *p, size_t n);
/* A copy of name's bytes, at most max, into out: whether there. */
bool oci_shelf_copy(const char *name, uint64_t max, struct cjc_buf *out);
bool oci_shelf_has(const char *name);
/* The same as oci_shelf_copy, taking them off the shelf. */
bool oci_shelf_take(const char *name, size_t max, struct cjc_buf *out);

#endif
