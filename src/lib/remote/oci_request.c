/*
 * oci_request.c - one HTTP exchange with a registry (oci_internal.h):
 * libcurl set up for a request within its deadline, the reply's headers
 * and body read up to their bounds, and what it came to as a result of
 * the seam (remote_backend.h).  Credentials are oci_auth.c's.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/oom.h"
#include "remote/oci_internal.h"

#define HEADER_MAX 4096
#define ERROR_BODY_MAX 512
#define MAX_REDIRS 3L

static bool is_2xx(CURL *c)
{
	long status = 0;
	cjc_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	return status >= 200 && status < 300;
}

static size_t take_body(char *p, size_t size, size_t n, void *ctx)
{
	struct oci_reply *r = ctx;
	size_t len = size * n;
	if (!is_2xx(r->curl)) {
		if (r->error.len < ERROR_BODY_MAX &&
		    !cjc_buf_try_add(&r->error, p, len < ERROR_BODY_MAX ? len : ERROR_BODY_MAX))
			return r->out_of_memory = true, 0;
		return r->error.len < 64 * 1024 ? len : 0;
	}
	if (!r->rq->out)
		return len;
	if (r->rq->out->len + len > r->rq->max) {
		r->too_large = true;
		return 0;
	}
	if (!cjc_buf_try_add(r->rq->out, p, len))
		return r->out_of_memory = true, 0;
	return len;
}

/* A header's value when line is that header (case-insensitive), else NULL. */
static char *header_value(const char *line, size_t len, const char *name)
{
	size_t nl = strlen(name);
	if (len <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return NULL;
	const char *v = line + nl + 1;
	const char *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	return strndup(v, (size_t)(end - v)); /* in curl's callback: NULL, the header unread */
}

static size_t take_header(char *p, size_t size, size_t n, void *ctx)
{
	struct oci_reply *r = ctx;
	size_t len = size * n;
	char *v;
	if (len > HEADER_MAX)
		return len; /* not one of those read here */
	if (len > 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a redirect) */
		free(r->challenge);
		free(r->location);
		r->challenge = r->location = NULL;
	} else if ((v = header_value(p, len, "www-authenticate"))) {
		free(r->challenge);
		r->challenge = v;
	} else if ((v = header_value(p, len, "location"))) {
		free(r->location);
		r->location = v;
	} else if ((v = header_value(p, len, "content-length"))) {
		bool over = r->rq->out && is_2xx(r->curl) && strtoull(v, NULL, 10) > r->rq->max;
		free(v);
		if (over) {
			r->too_large = true; /* refused before any of the body is read */
			return 0;
		}
	}
	return len;
}

/* The length of url's scheme, host and port ("https://host:443"). */
static size_t origin_len(const char *url)
{
	const char *host = strstr(url, "://");
	return host ? (size_t)(host + 3 - url) + strcspn(host + 3, "/?#") : 0;
}

/* Whether two URLs are of one origin: a reply from b's when a is asked. */
static bool same_origin(const char *a, const char *b)
{
	size_t n = origin_len(a);
	return n && n == origin_len(b) && !strncasecmp(a, b, n);
}

/* Whether url is on the registry itself (credentials may go there). */
bool oci_on_registry(const struct cjc_remote_backend *b, const char *url)
{
	size_t n = strlen(b->origin);
	return !strncmp(url, b->origin, n) && (url[n] == '/' || !url[n]);
}

static struct curl_slist *add_header(struct curl_slist *headers, const char *name, const char *value)
{
	char *h = cjc_xasprintf("%s: %s", name, value);
	headers = cjc_curl.slist_append(headers, h);
	free(h);
	return headers;
}

/* Sets c up to send rq, its reply into r, within left ms, as yet without
 * credentials (oci_authorize adds them); error (or NULL) takes curl's
 * message.  The headers it carries, to be freed once it was sent. */
struct curl_slist *oci_prepare(struct cjc_remote_backend *b, CURL *c, const struct oci_request *rq,
			       struct oci_reply *r, long left, char *error)
{
	struct curl_slist *headers = NULL;
	cjc_curl.easy_reset(c);
	cjc_curl.easy_setopt(c, CURLOPT_URL, rq->url);
	cjc_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (error)
		cjc_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, error), error[0] = '\0';
	cjc_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, take_body);
	cjc_curl.easy_setopt(c, CURLOPT_WRITEDATA, r);
	cjc_curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, take_header);
	cjc_curl.easy_setopt(c, CURLOPT_HEADERDATA, r);
	cjc_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, b->tls ? "https" : "http,https");
	cjc_curl.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, b->tls ? "https" : "http,https");
	cjc_curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, rq->follow ? 1L : 0L);
	cjc_curl.easy_setopt(c, CURLOPT_MAXREDIRS, MAX_REDIRS);
	cjc_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, left < b->u->connect_ms ? left : b->u->connect_ms);
	cjc_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
	if (b->ca_file)
		cjc_curl.easy_setopt(c, CURLOPT_CAINFO, b->ca_file);
	if (!strcmp(rq->method, "HEAD"))
		cjc_curl.easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (!strcmp(rq->method, "GET"))
		cjc_curl.easy_setopt(c, CURLOPT_HTTPGET, 1L);
	else {
		cjc_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
		cjc_curl.easy_setopt(c, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		cjc_curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->n);
		headers = cjc_curl.slist_append(headers, "Expect:");
	}
	if (rq->accept)
		headers = add_header(headers, "Accept", rq->accept);
	if (rq->content_type)
		headers = add_header(headers, "Content-Type", rq->content_type);
	if (headers)
		cjc_curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	r->curl = c;
	r->rq = rq;
	r->status = 0;
	r->too_large = false;
	r->out_of_memory = false;
	cjc_buf_reset(&r->error);
	if (rq->out)
		cjc_buf_reset(rq->out);
	return headers;
}

/* What the request sent on c came to: its status, and whether another
 * host answered. */
void oci_answered(CURL *c, struct oci_reply *r)
{
	if (r->out_of_memory)
		cjc_oom_raise(0); /* now that curl's frames are gone */
	char *url = NULL;
	cjc_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	cjc_curl.easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &url);
	r->elsewhere = !url || !same_origin(url, r->rq->url);
}

/* The result of a request that was sent, by curl's code and the status. */
int oci_result_of(struct cjc_remote_backend *b, CURLcode code, struct oci_reply *r, struct cjc_buf *why)
{
	if (r->too_large) {
		cjc_buf_addf(why, "the reply is larger than %zu bytes", r->rq->max);
		return CJC_REMOTE_ERROR;
	}
	if (code == CURLE_OPERATION_TIMEDOUT)
		return cjc_curl_timed_out(b->error, why);
	if (code != CURLE_OK) {
		/* the store's own URL, not one a server gave (a redirect, a realm,
		 * an upload Location): a server cannot pass for a setting's mistake */
		bool setting = !r->elsewhere && oci_on_registry(b, r->rq->url) &&
			       (code == CURLE_URL_MALFORMAT || code == CURLE_SSL_CACERT_BADFILE ||
				code == CURLE_PEER_FAILED_VERIFICATION ||
				code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_UNSUPPORTED_PROTOCOL);
		cjc_buf_addf(why, "%s%s", setting ? "setting: " : "",
			     b->error[0] ? b->error : cjc_curl.easy_strerror(code));
		return CJC_REMOTE_ERROR;
	}
	if (r->status >= 200 && r->status < 300)
		return CJC_REMOTE_OK;
	if (r->status == 404)
		return CJC_REMOTE_ABSENT;
	json_t *doc = json_loadb(r->error.data ? r->error.data : "", r->error.len, 0, NULL);
	const char *ecode = json_string_value(
		json_object_get(json_array_get(json_object_get(doc, "errors"), 0), "code"));
	if ((r->status == 401 || r->status == 403) && !r->elsewhere)
		cjc_buf_addf(why, "setting: authentication failed (HTTP %ld%s%s): check the store's "
			     "credentials", r->status, ecode ? " " : "", ecode ? ecode : "");
	else
		cjc_buf_addf(why, "HTTP status %ld%s%s", r->status, ecode ? " " : "", ecode ? ecode : "");
	json_decref(doc);
	return CJC_REMOTE_ERROR;
}
