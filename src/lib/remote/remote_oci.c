/*
 * remote_oci.c - the OCI registry backend (remote.h), through libcurl:
 * any registry of the OCI Distribution Spec (GHCR, GitLab's, Harbor,
 * Artifactory, ECR, ACR, a plain registry:2).  docs/remote.md#oci-registries.
 *
 *     oci://[USER[:PASSWORD]@]HOST[:PORT]/NAMESPACE/REPO        (https)
 *     oci+http://[USER[:PASSWORD]@]HOST[:PORT]/NAMESPACE/REPO   (plain http)
 *
 * The layout (remote.h) in the repository NAMESPACE/REPO:
 *   NS/c/<sha256>  the blob sha256:<hex>, which the registry keeps by its
 *                  digest; a get checks the bytes' SHA-256 against it.
 *   NS/e/<key>     an OCI image manifest tagged "<NS, '/' as '.'>.e.<key>",
 *   NS/m/<key>     and ".m.<key>": artifactType application/vnd.cudajitcache.
 *                  entry.v1 (manifest.v1), the OCI empty config, and layers:
 *                  first the value itself, as a blob and, when small,
 *                  embedded too (so a get is one request), deflated and
 *                  base64'd in the layer's annotation org.cudajitcache.
 *                  deflate (a reader takes OCI 1.1's `data` as well); then,
 *                  for an entry record, one layer per artifact its
 *                  metadata lists, so the registry keeps them with it and
 *                  shows them (small ones embedded: the shelf, below);
 *                  for a direct-mode manifest, the record of the
 *                  entry its newest record names, and that entry's
 *                  artifacts, when this process just wrote them (a layer
 *                  of the record's type, annotated with the entry key),
 *                  embedded when they fit, else named (a reader fetches
 *                  their blobs at once with the value's: get_at_once), so
 *                  that a hit on an empty local store is one request for
 *                  a small entry, two round trips for a large one.
 * A value's blob is uploaded (POST, then PUT to the Location with
 * ?digest=) only when a HEAD says it is not there.  A put-if-absent HEADs
 * the tag first; two writers racing past it may both write, each a valid
 * record of the key.  The m/ manifest is replaced on put (send.c merges).
 * No leases: a registry has no atomic create (leases stay on a Redis or
 * HTTP store listed beside this one).
 *
 * Authentication as registries do it: anonymous first; a 401's
 * WWW-Authenticate says Basic (the credentials are sent from then on) or
 * Bearer realm=,service=,scope= (a token fetched from the realm, with the
 * basic credentials if any, cached for its expires_in per scope, pull or
 * push), and the request is sent again once.  Credentials: the URL's user
 * info, the store's credentials-file=F (one line USER:SECRET), or
 * bearer-token-file=F (a ready token, sent as it is).  A TLS store sends
 * credentials only over https (a realm or an upload Location on plain http
 * is refused).  They go to the registry and to the token server its own
 * 401 names (as every registry client does: a registry could as well ask
 * for them itself), never to a host a redirect leads to (libcurl drops
 * them, and a 401 from there is not answered: a storage host cannot name
 * a realm) nor to an upload Location elsewhere.  No message holds a
 * secret.  Every request, the token's included, ends at the deadline
 * remote.c set; every body is read up to its bound.
 *
 * This file is the backend the seam calls: its handle, the names of the
 * layout as a registry's blobs and tags, get, put and exists.  What it
 * stands on, one concern a file, is listed in oci_internal.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "remote/oci.h"
#include "remote/oci_internal.h"

/* What a manifest of ours can be (the embedded bytes base64'd, a layer per
 * artifact): CJC_OCI_EMBED_MAX base64'd, and the layers. */
#define MANIFEST_READ_MAX ((size_t)512 << 10)

static void backend_free(struct cjc_remote_backend *b)
{
	if (b->curl)
		cjc_curl.easy_cleanup(b->curl);
	for (size_t i = 0; i < FETCH_AT_ONCE; i++)
		if (b->side[i])
			cjc_curl.easy_cleanup(b->side[i]);
	if (b->multi)
		cjc_curl.multi_cleanup(b->multi);
	free(b->origin);
	free(b->repo);
	free(b->user);
	cjc_free_secret(b->password);
	cjc_free_secret(b->bearer);
	free(b->ca_file);
	if (b->own)
		oci_auth_free(b->own);
	free(b);
}

static bool repo_ok(const char *repo)
{
	return *repo && strspn(repo, "abcdefghijklmnopqrstuvwxyz0123456789._-/") == strlen(repo) &&
	       isalnum((unsigned char)repo[0]) && !strstr(repo, "//");
}

/* oci[+http]://[USER[:PASSWORD]@]HOST[:PORT]/REPO: the user info runs to
 * the URL's last '@', as cjc_remote_redact takes it. */
static int parse_url(struct cjc_remote_backend *b, const char *url, struct cjc_buf *why)
{
	b->tls = cjc_starts_with(url, "oci://");
	const char *host = strstr(url, "://") + 3;
	const char *at = strrchr(host, '@');
	if (at) {
		const char *colon = memchr(host, ':', (size_t)(at - host));
		b->user = cjc_xstrndup(host, (size_t)((colon ? colon : at) - host));
		b->password = colon ? cjc_xstrndup(colon + 1, (size_t)(at - colon - 1)) : cjc_xstrdup("");
		host = at + 1;
	}
	const char *slash = strchr(host, '/');
	size_t len = slash ? strlen(slash + 1) : 0;
	while (len && slash[len] == '/')
		len--;
	b->repo = slash ? cjc_xstrndup(slash + 1, len) : cjc_xstrdup("");
	if (!slash || slash == host || !repo_ok(b->repo)) {
		cjc_buf_adds(why, "setting: an oci:// URL is oci://HOST[:PORT]/NAMESPACE/REPO, the "
			     "repository in lower case (a-z, 0-9, '.', '_', '-', '/')");
		return -1;
	}
	b->origin = cjc_xasprintf("%s://%.*s", b->tls ? "https" : "http", (int)(slash - host), host);
	return 0;
}

static struct cjc_remote_backend *oci_open(const struct cjc_remote_url *u, struct cjc_buf *why)
{
	const char *load_error = cjc_curl_load();
	if (load_error) {
		cjc_buf_addf(why, "setting: %s", load_error);
		errno = ENOSYS;
		return NULL;
	}
	struct cjc_remote_backend *b = cjc_xcalloc(1, sizeof *b);
	b->u = u;
	int rc = parse_url(b, u->url, why);
	if (!rc && u->credentials_file)
		rc = oci_read_credentials(b, u->credentials_file, why);
	if (!rc && u->bearer_token_file && !(b->bearer = cjc_curl_read_secret(u->bearer_token_file,
								     "bearer-token-file", why)))
		rc = -1;
	if (!rc && u->ca_file)
		b->ca_file = cjc_xstrdup(u->ca_file);
	if (!rc)
		oci_auth_find(b);
	if (!rc && !(b->curl = cjc_curl.easy_init()))
		rc = -1, cjc_buf_adds(why, "cannot start libcurl");
	if (rc) {
		backend_free(b);
		errno = EINVAL;
		return NULL;
	}
	return b;
}

struct target {
	char kind;
	char hex[CJC_HEX_LEN + 1];
	char tag[129];
};

/* NS/c/<hex>, NS/e/<key>, NS/m/<key> (remote.h): what it is in the registry. */
static int parse_name(const char *name, struct target *t, struct cjc_buf *why)
{
	const char *slash = strrchr(name, '/');
	size_t ns = slash && slash - name >= 2 && slash[-2] == '/' ? (size_t)(slash - name - 2) : 0;
	t->kind = ns ? slash[-1] : 0;
	if (!ns || (t->kind != 'c' && !oci_kind_of(t->kind)) || !cjc_is_hex64(slash + 1)) {
		cjc_buf_addf(why, "no place in a registry for %s", name);
		return -1;
	}
	memcpy(t->hex, slash + 1, CJC_HEX_LEN + 1);
	int n = snprintf(t->tag, sizeof t->tag, "%.*s.%c.%s", (int)ns, name, t->kind, t->hex);
	for (char *p = t->tag; *p; p++)
		*p = *p == '/' ? '.' : *p;
	if (t->kind != 'c' && (n >= (int)sizeof t->tag || !isalnum((unsigned char)t->tag[0]) ||
			       strspn(t->tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					      "0123456789._-") != (size_t)n)) {
		cjc_buf_addf(why, "no OCI tag can name %s", name);
		return -1;
	}
	return 0;
}

static char *manifest_url(const struct cjc_remote_backend *b, const char *tag)
{
	return cjc_xasprintf("%s/v2/%s/manifests/%s", b->origin, b->repo, tag);
}

/* What a manifest's layers give beside its value: the bytes it embeds,
 * checked, to the shelf; the blobs it only names, to the batch (if any). */
static void found(const char *hex, const char *entry_key, const void *p, size_t n, void *ctx)
{
	if (p)
		oci_shelf_put(hex, entry_key, p, n);
	else if (ctx)
		oci_want(ctx, hex, entry_key, n);
}

static int oci_get(struct cjc_remote_backend *b, const char *name, size_t max, struct cjc_buf *out,
		   struct cjc_buf *why)
{
	struct target t;
	bool merging = b->merging;
	b->absent[0] = 0;
	b->merging = false;
	if (parse_name(name, &t, why))
		return CJC_REMOTE_ERROR;
	char shelved[CJC_HEX_LEN + 3];
	oci_shelf_name(t.hex, t.kind == 'e' ? t.hex : NULL, shelved);
	if (t.kind != 'm' && oci_shelf_take(shelved, max, out))
		return CJC_REMOTE_OK;
	if (t.kind == 'c')
		return oci_blob_get(b, t.hex, max, out, why);
	struct cjc_buf text = CJC_BUF_INIT;
	/* what a manifest of ours can be (the embedded bytes base64'd, a layer
	 * per artifact), far below the value's own bound: a larger value is a
	 * blob, and JSON takes tens of bytes of memory per byte parsed */
	size_t cap = MANIFEST_READ_MAX;
	struct oci_request rq = { .method = "GET", .url = manifest_url(b, t.tag), .scope = OCI_PULL,
			      .accept = MT_MANIFEST, .out = &text, .max = cap };
	int rc = oci_ask(b, &rq, NULL, why);
	free(rq.url);
	struct oci_batch bt = { .n = 0 };
	struct oci_wanted *value = &bt.w[FETCH_AT_ONCE - 1];
	bool named = t.kind != 'm' || !merging; /* a writer merging wants no entry */
	int has = rc == CJC_REMOTE_OK ? cjc_oci_manifest_value(text.data, text.len, t.kind, max, out,
							       value->hex, &value->size, found,
							       named ? &bt : NULL, why)
				      : 0;
	cjc_buf_release(&text);
	if (has < 0)
		return CJC_REMOTE_ERROR;
	if (has == 1 && !bt.n)
		return oci_blob_get(b, value->hex, value->size, out, why);
	if (has == 1) /* the batch's last */
		memmove(&bt.w[bt.n++], value, sizeof *value);
	return bt.n ? oci_get_blobs(b, &bt, has == 1, out, why) : rc;
}

static int oci_put(struct cjc_remote_backend *b, const char *name, const void *p, size_t n,
		   bool only_if_absent, struct cjc_buf *why)
{
	struct target t;
	char hex[CJC_HEX_LEN + 1];
	if (parse_name(name, &t, why))
		return CJC_REMOTE_ERROR;
	b->merging = t.kind == 'e';
	cjc_hash_buf_hex(p, n, hex);
	if (t.kind == 'c' && strcmp(hex, t.hex)) {
		cjc_buf_adds(why, "a blob's bytes are not its name's SHA-256");
		return CJC_REMOTE_ERROR;
	}
	bool absent = t.kind == 'c' && !strcmp(b->absent, hex); /* exists just said so (send.c) */
	b->absent[0] = 0;
	if (t.kind == 'c') {
		int rc = absent ? oci_upload(b, hex, p, n, why) : oci_blob_put(b, hex, p, n, why);
		if (rc == CJC_REMOTE_OK) /* for the entry's manifest that follows */
			oci_shelf_put(hex, NULL, p, n);
		return rc;
	}
	int rc = only_if_absent ? oci_head_url(b, manifest_url(b, t.tag), true, why) : CJC_REMOTE_ABSENT;
	if (rc != CJC_REMOTE_ABSENT)
		return rc; /* there (first writer wins), or the error */
	rc = oci_blob_put(b, hex, p, n, why);
	if (rc == CJC_REMOTE_OK && !b->empty_there && (rc = oci_blob_put(b, EMPTY_HEX, "{}", 2, why)) == CJC_REMOTE_OK)
		b->empty_there = true;
	char *text = rc == CJC_REMOTE_OK ? oci_manifest_for(oci_kind_of(t.kind), t.hex, p, n, hex) : NULL;
	if (rc == CJC_REMOTE_OK && !text)
		rc = CJC_REMOTE_ERROR, cjc_buf_adds(why, "cannot make the manifest");
	if (text) {
		struct oci_request rq = { .method = "PUT", .url = manifest_url(b, t.tag), .scope = OCI_PUSH,
				      .body = text, .n = strlen(text), .content_type = MT_MANIFEST };
		rc = oci_ask(b, &rq, NULL, why);
		free(rq.url);
	}
	if (rc == CJC_REMOTE_OK && t.kind == 'e') /* for the direct-mode manifest that follows */
		oci_shelf_put(hex, t.hex, p, n);
	free(text);
	return rc == CJC_REMOTE_ABSENT ? (cjc_buf_adds(why, "HTTP status 404 on a manifest's put"),
					  CJC_REMOTE_ERROR)
				       : rc;
}

static int oci_exists(struct cjc_remote_backend *b, const char *name, struct cjc_buf *why)
{
	struct target t;
	b->absent[0] = 0;
	if (parse_name(name, &t, why))
		return CJC_REMOTE_ERROR;
	int rc = t.kind == 'c' ? oci_head_url(b, oci_blob_url(b, t.hex), false, why)
			       : oci_head_url(b, manifest_url(b, t.tag), true, why);
	if (t.kind == 'c' && rc == CJC_REMOTE_ABSENT)
		memcpy(b->absent, t.hex, sizeof b->absent); /* the put that follows need not ask again */
	return rc;
}

static void oci_close(struct cjc_remote_backend *b)
{
	backend_free(b);
}

const struct cjc_remote_ops cjc_remote_oci_ops = {
	oci_open, oci_get, oci_put, oci_exists, oci_close, NULL, NULL, /* no leases: see above */
	false, /* no combined values: each entry's is in its manifests */
};
