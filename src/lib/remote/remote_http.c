/*
 * remote_http.c - the HTTP, HTTPS and S3 backend (remote.h), through libcurl.
 *
 *     http://[USER:PASSWORD@]HOST[:PORT]/PREFIX   https://...
 *         GET, PUT and HEAD of PREFIX/<name>, as nginx's WebDAV module,
 *         bazel-remote or ccache's HTTP storage servers take them; basic
 *         authentication from the user info, or bearer-token-file=FILE;
 *         ca-file=FILE for a server whose certificate the system's CAs do
 *         not sign.
 *     s3://BUCKET/PREFIX?endpoint=URL&region=R
 *         S3, signed by libcurl (CURLOPT_AWS_SIGV4) with AWS_ACCESS_KEY_ID,
 *         AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; path-style
 *         (ENDPOINT/BUCKET/PREFIX) with an endpoint, else AWS's
 *         virtual-hosted https://BUCKET.s3.REGION.amazonaws.com/PREFIX.
 *
 * 404 is absent; 401 and 403 are refused credentials (a matter of the
 * settings); any other status but 2xx is an error.  A put-if-absent sends
 * If-None-Match: * and takes 412 as "there already"; a server that ignores
 * the header overwrites, which for artifacts (stored by their hash) writes
 * the same bytes, and for an entry record another valid record of the same
 * key.  A body is read only up to the bound: a Content-Length past it is
 * refused before any of the body is read, and a body that grows past it
 * is cut off.  Each request ends at the deadline remote.c set (the store's
 * operation-timeout, shared by all requests of a compile), however the
 * server sends.  One handle per store keeps its connection between requests.
 *
 * libcurl is loaded with dlopen the first time a store needs it, not linked:
 * it brings some thirty libraries, whose loading cost every cjc process
 * 2.3 ms, a hit included, where no remote store is even set.
 */
#include "remote/curl.h"
#include "remote/remote_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/hash.h"
#include "base/oom.h"

struct cjc_remote_backend {
	CURL *curl;
	char *base; /* requests go to base/name */
	char *user, *password, *bearer, *ca_file, *sigv4, *token_header;
	const struct cjc_remote_url *u; /* its deadline, read at each request */
	char error[CURL_ERROR_SIZE];
};

static void backend_free(struct cjc_remote_backend *b)
{
	if (b->curl)
		cjc_curl.easy_cleanup(b->curl);
	free(b->base);
	free(b->user);
	cjc_free_secret(b->password);
	cjc_free_secret(b->bearer);
	free(b->ca_file);
	free(b->sigv4);
	cjc_free_secret(b->token_header);
	free(b);
}

/* http(s)://[USER:PASSWORD@]HOST...: base without the user info. */
static int parse_http(struct cjc_remote_backend *b, const char *url)
{
	const char *host = strstr(url, "://") + 3;
	/* the user info runs to the URL's last '@' (cjc_remote_redact) */
	const char *at = strrchr(host, '@');
	if (at) {
		const char *colon = memchr(host, ':', (size_t)(at - host));
		b->user = cjc_xstrndup(host, (size_t)((colon ? colon : at) - host));
		b->password = colon ? cjc_xstrndup(colon + 1, (size_t)(at - colon - 1)) : cjc_xstrdup("");
	}
	const char *rest = at ? at + 1 : host;
	size_t len = strlen(rest);
	while (len && rest[len - 1] == '/')
		len--;
	b->base = cjc_xasprintf("%.*s%.*s", (int)(host - url), url, (int)len, rest);
	return 0;
}

/* The value of name=... in a query, or NULL. */
static char *query_value(const char *query, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == '=')
			return cjc_xstrndup(p + n + 1, strcspn(p + n + 1, "&"));
	return NULL;
}

static int parse_s3(struct cjc_remote_backend *b, const char *url, struct cjc_buf *why)
{
	const char *bucket = url + 5;
	const char *q = strchr(bucket, '?');
	char *path = q ? cjc_xstrndup(bucket, (size_t)(q - bucket)) : cjc_xstrdup(bucket);
	char *endpoint = q ? query_value(q + 1, "endpoint") : NULL;
	char *region = q ? query_value(q + 1, "region") : NULL;
	const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
	const char *token = getenv("AWS_SESSION_TOKEN");
	size_t len = strlen(path);
	while (len && path[len - 1] == '/')
		path[--len] = '\0';
	char *slash = strchr(path, '/');
	int rc = 0;
	if (!*path || *path == '/') {
		cjc_buf_adds(why, "setting: an s3:// URL needs a bucket");
		rc = -1;
	} else if (!id || !*id || !secret || !*secret) {
		cjc_buf_adds(why, "setting: an s3:// store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
		rc = -1;
	} else if (endpoint) {
		size_t elen = strlen(endpoint);
		while (elen && endpoint[elen - 1] == '/')
			elen--;
		b->base = cjc_xasprintf("%.*s/%s", (int)elen, endpoint, path);
	} else {
		b->base = cjc_xasprintf("https://%.*s.s3.%s.amazonaws.com%s",
					(int)(slash ? slash - path : (long)len), path,
					region ? region : "us-east-1", slash ? slash : "");
	}
	if (!rc) {
		b->sigv4 = cjc_xasprintf("aws:amz:%s:s3", region ? region : "us-east-1");
		b->user = cjc_xstrdup(id);
		b->password = cjc_xstrdup(secret);
		if (token && *token)
			b->token_header = cjc_xasprintf("x-amz-security-token: %s", token);
	}
	free(path);
	free(endpoint);
	free(region);
	return rc;
}

static struct cjc_remote_backend *http_open(const struct cjc_remote_url *u, struct cjc_buf *why)
{
	const char *load_error = cjc_curl_load();
	if (load_error) {
		cjc_buf_addf(why, "setting: %s", load_error);
		errno = ENOSYS;
		return NULL;
	}
	struct cjc_remote_backend *b = cjc_xcalloc(1, sizeof *b);
	b->u = u;
	int rc = cjc_starts_with(u->url, "s3://") ? parse_s3(b, u->url, why)
		 : parse_http(b, u->url) ? (cjc_buf_addf(why, "setting: malformed URL %s", u->shown), -1)
					 : 0;
	if (!rc && u->bearer_token_file)
		rc = (b->bearer = cjc_curl_read_secret(u->bearer_token_file, "bearer-token-file", why))
			     ? 0 : -1;
	if (!rc && u->ca_file)
		b->ca_file = cjc_xstrdup(u->ca_file);
	if (!rc && !(b->curl = cjc_curl.easy_init()))
		rc = -1, cjc_buf_adds(why, "cannot start libcurl");
	if (rc) {
		backend_free(b);
		errno = EINVAL;
		return NULL;
	}
	return b;
}

struct body {
	struct cjc_buf *out;
	size_t max;
	bool too_large;
	bool out_of_memory; /* not kept: curl's callbacks may not jump (base/oom.h) */
};

static size_t take_body(char *p, size_t size, size_t n, void *ctx)
{
	struct body *body = ctx;
	if (!body->out)
		return size * n;
	if (body->out->len + size * n > body->max) {
		body->too_large = true;
		return 0;
	}
	if (!cjc_buf_try_add(body->out, p, size * n))
		return body->out_of_memory = true, 0;
	return size * n;
}

/* Sets what every request has; returns the header list to free.  S3 wants
 * the payload's SHA-256 in a header, which curl then signs with the rest. */
static struct curl_slist *setup(struct cjc_remote_backend *b, const char *name, struct body *body,
				const void *payload, size_t n)
{
	CURL *c = b->curl;
	char *url = cjc_xasprintf("%s/%s", b->base, name);
	struct curl_slist *headers = NULL;
	cjc_curl.easy_reset(c);
	cjc_curl.easy_setopt(c, CURLOPT_URL, url);
	free(url);
	cjc_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cjc_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, b->error);
	cjc_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, take_body);
	cjc_curl.easy_setopt(c, CURLOPT_WRITEDATA, body);
	cjc_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (b->ca_file)
		cjc_curl.easy_setopt(c, CURLOPT_CAINFO, b->ca_file);
	if (b->user) {
		cjc_curl.easy_setopt(c, CURLOPT_USERNAME, b->user);
		cjc_curl.easy_setopt(c, CURLOPT_PASSWORD, b->password);
	}
	if (b->sigv4)
		cjc_curl.easy_setopt(c, CURLOPT_AWS_SIGV4, b->sigv4);
	if (b->bearer) {
		cjc_curl.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		cjc_curl.easy_setopt(c, CURLOPT_XOAUTH2_BEARER, b->bearer);
	}
	if (b->token_header)
		headers = cjc_curl.slist_append(headers, b->token_header);
	if (b->sigv4) {
		char hash[CJC_HEX_LEN + 1];
		cjc_hash_buf_hex(payload, n, hash);
		char *h = cjc_xasprintf("x-amz-content-sha256: %s", hash);
		headers = cjc_curl.slist_append(headers, h);
		free(h);
	}
	b->error[0] = '\0';
	return headers;
}

/* Runs the request set up on b, ending it at the deadline; the result by
 * its status. */
static int perform(struct cjc_remote_backend *b, struct curl_slist *headers, const struct body *body,
		   struct cjc_buf *why)
{
	long left = cjc_remote_time_left(b->u);
	if (left <= 0) {
		cjc_curl_free_headers(headers);
		cjc_buf_adds(why, "timed out: the operation-timeout is spent");
		errno = ETIMEDOUT;
		return CJC_REMOTE_TIMEOUT;
	}
	cjc_curl.easy_setopt(b->curl, CURLOPT_CONNECTTIMEOUT_MS, left < b->u->connect_ms ? left : b->u->connect_ms);
	cjc_curl.easy_setopt(b->curl, CURLOPT_TIMEOUT_MS, left);
	if (headers)
		cjc_curl.easy_setopt(b->curl, CURLOPT_HTTPHEADER, headers);
	CURLcode code = cjc_curl.easy_perform(b->curl);
	cjc_curl_free_headers(headers);
	if (body && body->out_of_memory)
		cjc_oom_raise(0); /* now that curl's frames are gone */
	long status = 0;
	cjc_curl.easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &status);
	if (body && (body->too_large || code == CURLE_FILESIZE_EXCEEDED)) {
		cjc_buf_addf(why, "the reply is larger than %zu bytes", body->max);
		return CJC_REMOTE_ERROR;
	}
	if (code == CURLE_OPERATION_TIMEDOUT)
		return cjc_curl_timed_out(b->error, why);
	if (code != CURLE_OK) {
		bool setting = code == CURLE_URL_MALFORMAT || code == CURLE_SSL_CACERT_BADFILE ||
			       code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_COULDNT_RESOLVE_HOST;
		cjc_buf_addf(why, "%s%s", setting ? "setting: " : "",
			     b->error[0] ? b->error : cjc_curl.easy_strerror(code));
		return CJC_REMOTE_ERROR;
	}
	if (status == 404)
		return CJC_REMOTE_ABSENT;
	if (status >= 200 && status < 300)
		return CJC_REMOTE_OK;
	if (status == 401 || status == 403)
		cjc_buf_addf(why, "setting: authentication refused (HTTP %ld)", status);
	else
		cjc_buf_addf(why, "HTTP status %ld", status);
	return CJC_REMOTE_ERROR;
}

static int http_get(struct cjc_remote_backend *b, const char *name, size_t max, struct cjc_buf *out,
		    struct cjc_buf *why)
{
	struct body body = { .out = out, .max = max };
	struct curl_slist *headers = setup(b, name, &body, "", 0);
	cjc_curl.easy_setopt(b->curl, CURLOPT_HTTPGET, 1L);
	cjc_curl.easy_setopt(b->curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
	int rc = perform(b, headers, &body, why);
	if (rc == CJC_REMOTE_OK && !out->len)
		rc = CJC_REMOTE_ABSENT; /* no valid value is empty */
	return rc;
}

static int http_put(struct cjc_remote_backend *b, const char *name, const void *p, size_t n,
		    bool only_if_absent, struct cjc_buf *why)
{
	struct body body = { .out = NULL };
	struct curl_slist *headers = setup(b, name, &body, p, n);
	cjc_curl.easy_setopt(b->curl, CURLOPT_CUSTOMREQUEST, "PUT");
	cjc_curl.easy_setopt(b->curl, CURLOPT_POSTFIELDS, p);
	cjc_curl.easy_setopt(b->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
	headers = cjc_curl.slist_append(headers, "Content-Type: application/octet-stream");
	/* No "Expect: 100-continue" wait; but not under SigV4, where curl 7.88
	 * signs the emptied header it then does not send (curl #11664). */
	if (!b->sigv4)
		headers = cjc_curl.slist_append(headers, "Expect:");
	if (only_if_absent)
		headers = cjc_curl.slist_append(headers, "If-None-Match: *");
	int rc = perform(b, headers, NULL, why);
	long status = 0;
	cjc_curl.easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CJC_REMOTE_ERROR && status == 412) {
		cjc_buf_reset(why);
		rc = CJC_REMOTE_OK; /* there already: first writer wins */
	}
	return rc == CJC_REMOTE_ABSENT ? CJC_REMOTE_ERROR : rc;
}

static int http_exists(struct cjc_remote_backend *b, const char *name, struct cjc_buf *why)
{
	struct body body = { .out = NULL };
	struct curl_slist *headers = setup(b, name, &body, "", 0);
	cjc_curl.easy_setopt(b->curl, CURLOPT_NOBODY, 1L);
	return perform(b, headers, NULL, why);
}

static void http_close(struct cjc_remote_backend *b)
{
	backend_free(b);
}

const struct cjc_remote_ops cjc_remote_http_ops = {
	http_open, http_get, http_put, http_exists, http_close, NULL, NULL, /* no leases yet */
	true,                                                               /* combined values */
};
