/*
 * oci_blobs.c - the OCI backend's blob transfer (oci_internal.h): a blob
 * fetched and checked against its digest, uploaded unless a HEAD finds
 * it there, and a manifest's blobs fetched at once.
 *
 * A manifest's value, when it is in a blob, and the blobs of the entry the
 * manifest names (the record and artifact layers it does not embed) are
 * fetched at once, each on a handle of its own (libcurl's multi interface),
 * so that a hit on a large entry is two round trips, its direct-mode
 * manifest and then its blobs, as on Redis, not one after another.  What
 * comes back whole (2xx, its digest) is the value or goes on the shelf;
 * anything else is asked for again when it is needed, the ordinary way (a
 * 401 answered, the error reported).  At most FETCH_AT_ONCE blobs, each
 * other than the value at most SHELF_ITEM_MAX, all within the deadline.
 */
#include <stdlib.h>
#include <string.h>

#include "remote/oci_internal.h"

#define MULTI_CONNECTIONS 4L /* the connections those keep open (a helper pools 64 backends) */

char *oci_blob_url(const struct cjc_remote_backend *b, const char *hex)
{
	return cjc_xasprintf("%s/v2/%s/blobs/sha256:%s", b->origin, b->repo, hex);
}

/* A blob, at most max bytes, checked against its digest. */
int oci_blob_get(struct cjc_remote_backend *b, const char *hex, size_t max, struct cjc_buf *out,
		 struct cjc_buf *why)
{
	struct oci_request rq = { .method = "GET", .url = oci_blob_url(b, hex), .scope = OCI_PULL, .out = out,
			      .max = max, .follow = true };
	int rc = oci_ask(b, &rq, NULL, why);
	free(rq.url);
	char got[CJC_HEX_LEN + 1];
	if (rc == CJC_REMOTE_OK && (cjc_hash_buf_hex(out->data ? out->data : "", out->len, got),
				    strcmp(got, hex))) {
		cjc_buf_addf(why, "blob sha256:%.16s... differs from its digest", hex);
		rc = CJC_REMOTE_ERROR;
	}
	return rc;
}

int oci_head_url(struct cjc_remote_backend *b, char *url, bool manifest, struct cjc_buf *why)
{
	struct oci_request rq = { .method = "HEAD", .url = url, .scope = OCI_PULL,
			      .accept = manifest ? MT_MANIFEST : NULL, .follow = !manifest };
	int rc = oci_ask(b, &rq, NULL, why);
	free(url);
	return rc;
}

/* The upload URL: the registry's Location, made absolute, with the digest. */
static char *upload_url(const struct cjc_remote_backend *b, const char *location, const char *hex,
			struct cjc_buf *why)
{
	char *url = NULL;
	if (location && location[0] == '/')
		url = cjc_xasprintf("%s%s", b->origin, location);
	else if (location && (cjc_starts_with(location, "https://") ||
			      (!b->tls && cjc_starts_with(location, "http://"))))
		url = cjc_xstrdup(location);
	if (!url) {
		cjc_buf_adds(why, location ? "the registry's upload Location is not https"
					   : "the registry gave no upload Location");
		return NULL;
	}
	char *with = cjc_xasprintf("%s%cdigest=sha256:%s", url, strchr(url, '?') ? '&' : '?', hex);
	free(url);
	return with;
}

/* Uploads a blob: POST, then PUT to the Location with its digest. */
int oci_upload(struct cjc_remote_backend *b, const char *hex, const void *p, size_t n,
	       struct cjc_buf *why)
{
	int rc;
	char *start = cjc_xasprintf("%s/v2/%s/blobs/uploads/", b->origin, b->repo), *location = NULL;
	struct oci_request post = { .method = "POST", .url = start, .scope = OCI_PUSH };
	rc = oci_ask(b, &post, &location, why);
	free(start);
	char *url = rc == CJC_REMOTE_OK ? upload_url(b, location, hex, why) : NULL;
	if (rc == CJC_REMOTE_OK && url) {
		struct oci_request put = { .method = "PUT", .url = url, .scope = OCI_PUSH, .body = p, .n = n,
				       .content_type = "application/octet-stream" };
		rc = oci_ask(b, &put, NULL, why);
	} else if (rc == CJC_REMOTE_OK) {
		rc = CJC_REMOTE_ERROR;
	}
	free(url);
	free(location);
	return rc == CJC_REMOTE_ABSENT ? (cjc_buf_adds(why, "HTTP status 404 on upload"), CJC_REMOTE_ERROR)
				       : rc;
}

/* Uploads a blob unless a HEAD finds it there. */
int oci_blob_put(struct cjc_remote_backend *b, const char *hex, const void *p, size_t n,
		 struct cjc_buf *why)
{
	int rc = oci_head_url(b, oci_blob_url(b, hex), false, why);
	return rc == CJC_REMOTE_ABSENT ? oci_upload(b, hex, p, n, why) : rc;
}

/* Adds a blob the manifest names (not embedded) to the batch, unless it is
 * already in it or on the shelf, too large, or the batch is full (its last
 * place is kept for the manifest's value). */
void oci_want(struct oci_batch *bt, const char *hex, const char *entry_key, uint64_t size)
{
	char name[CJC_HEX_LEN + 3];
	oci_shelf_name(hex, entry_key, name);
	if (bt->n == FETCH_AT_ONCE - 1 || size > SHELF_ITEM_MAX || oci_shelf_has(name) ||
	    !strcmp(hex, bt->w[FETCH_AT_ONCE - 1].hex)) /* the value's own digest */
		return;
	for (size_t i = 0; i < bt->n; i++)
		if (!strcmp(bt->w[i].hex, hex) && !strcmp(bt->w[i].key, entry_key ? entry_key : ""))
			return;
	struct oci_wanted *w = &bt->w[bt->n++];
	memcpy(w->hex, hex, sizeof w->hex);
	if (entry_key)
		memcpy(w->key, entry_key, sizeof w->key);
	w->size = size;
}

/* One of the GETs at once. */
struct transfer {
	struct oci_request rq;
	struct oci_reply r;
	struct curl_slist *headers;
	CURLcode code;
};

/* Starts w's GET on side handle i, within left ms: whether it did. */
static bool start_get(struct cjc_remote_backend *b, size_t i, struct oci_wanted *w, struct transfer *t,
		      long left)
{
	if (!b->side[i] && !(b->side[i] = cjc_curl.easy_init()))
		return false;
	t->rq = (struct oci_request){ .method = "GET", .url = oci_blob_url(b, w->hex), .scope = OCI_PULL,
				  .out = &w->bytes, .max = w->size, .follow = true };
	t->headers = oci_prepare(b, b->side[i], &t->rq, &t->r, left, NULL);
	oci_authorize(b, b->side[i], &t->rq);
	t->code = CURLE_FAILED_INIT;
	if (b->tls) /* HTTP/2: one connection for them all */
		cjc_curl.easy_setopt(b->side[i], CURLOPT_PIPEWAIT, 1L);
	if (cjc_curl.multi_add_handle(b->multi, b->side[i]) == CURLM_OK)
		return true;
	cjc_curl.slist_free_all(t->headers);
	free(t->rq.url);
	return false;
}

/* Ends the GET on side handle i: whether w came whole (2xx, its size and
 * its digest). */
static bool end_get(struct cjc_remote_backend *b, size_t i, struct oci_wanted *w, struct transfer *t)
{
	char got[CJC_HEX_LEN + 1];
	cjc_curl.multi_remove_handle(b->multi, b->side[i]);
	cjc_curl.slist_free_all(t->headers);
	oci_answered(b->side[i], &t->r);
	bool whole = t->code == CURLE_OK && !t->r.too_large && t->r.status >= 200 &&
		     t->r.status < 300 && w->bytes.len == w->size &&
		     (cjc_hash_buf_hex(w->bytes.data, w->bytes.len, got), !strcmp(got, w->hex));
	free(t->rq.url);
	free(t->r.challenge);
	free(t->r.location);
	cjc_buf_release(&t->r.error);
	return whole;
}

/* GETs the blobs of bt at once, until the deadline; each whole one is
 * marked so. */
static void get_at_once(struct cjc_remote_backend *b, struct oci_batch *bt)
{
	struct transfer t[FETCH_AT_ONCE] = { 0 };
	size_t n = 0;
	long left = cjc_remote_time_left(b->u);
	if (left > 0 && !b->multi && (b->multi = cjc_curl.multi_init()))
		cjc_curl.multi_setopt(b->multi, CURLMOPT_MAXCONNECTS, MULTI_CONNECTIONS);
	while (left > 0 && b->multi && n < bt->n && start_get(b, n, &bt->w[n], &t[n], left))
		n++;
	if (!n)
		return;
	int running = 1;
	while (running && !cjc_curl.multi_perform(b->multi, &running) && running &&
	       cjc_remote_time_left(b->u) > 0)
		cjc_curl.multi_poll(b->multi, NULL, 0, 100, NULL);
	CURLMsg *msg;
	int queued;
	while ((msg = cjc_curl.multi_info_read(b->multi, &queued)))
		for (size_t i = 0; i < n; i++)
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == b->side[i])
				t[i].code = msg->data.result;
	for (size_t i = 0; i < n; i++)
		bt->w[i].whole = end_get(b, i, &bt->w[i], &t[i]);
}

/* The blobs of bt at once: the last one, with value, is the manifest's
 * value, into out (asked for again alone when it did not come whole); the
 * others go on the shelf. */
int oci_get_blobs(struct cjc_remote_backend *b, struct oci_batch *bt, bool value, struct cjc_buf *out,
		  struct cjc_buf *why)
{
	get_at_once(b, bt);
	int rc = CJC_REMOTE_OK;
	for (size_t i = 0; i < bt->n; i++) {
		struct oci_wanted *w = &bt->w[i];
		if (value && i == bt->n - 1 && w->whole) {
			cjc_buf_release(out);
			*out = w->bytes, w->bytes = (struct cjc_buf)CJC_BUF_INIT;
		} else if (value && i == bt->n - 1) {
			rc = oci_blob_get(b, w->hex, w->size, out, why);
		} else if (w->whole) {
			oci_shelf_put(w->hex, w->key[0] ? w->key : NULL, w->bytes.data, w->bytes.len);
		}
		cjc_buf_release(&w->bytes);
	}
	return rc;
}
