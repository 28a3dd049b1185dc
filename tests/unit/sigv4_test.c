/*
 * sigv4_test.c - proves that the requests libcurl signs for the s3:// store
 * (CURLOPT_AWS_SIGV4, remote_http.c) carry AWS Signature Version 4
 * signatures that AWS would accept.  s3rver, the test S3 server, checks no
 * signature, so the requests go to this test's own listener (127.0.0.1,
 * a port the kernel picks) and are judged here.
 *
 * Usage: sigv4_test [algorithm|backend]   (no argument: both)
 *
 *   algorithm  1. An independent signer (OpenSSL HMAC-SHA256, written from
 *                 AWS's description) reproduces AWS's published worked
 *                 example, the IAM ListUsers GET of 20150830T123600Z.
 *              2. libcurl, given that request (its X-Amz-Date included),
 *                 sends the published signature.
 *              3. S3 requests shaped as remote_http.c's (PUT of a body with
 *                 x-amz-content-sha256 = its SHA-256, Content-Type,
 *                 If-None-Match, x-amz-security-token; a GET with the hash
 *                 of the empty body): the signature libcurl sends is the one
 *                 the independent signer computes for those headers and the
 *                 x-amz-date libcurl chose, and the request passes the
 *                 strict check below.
 *   backend    4. The store itself (cjc_remote_http_ops, an s3:// URL with
 *                 endpoint= this listener): its PUT and its GET pass the
 *                 strict check.
 *
 * The strict check is what an S3 server does with a request as it arrives:
 * parse the Authorization header, rebuild the canonical request from the
 * headers named in SignedHeaders (each must be in the request: AWS answers
 * "'x' is named as a SignedHeader, but it does not exist in the HTTP
 * request"; MinIO takes a missing Expect for "100-continue"), require host,
 * x-amz-date and, for s3, x-amz-content-sha256 to be signed and every
 * x-amz-* header to be signed, check x-amz-content-sha256 against the body,
 * and recompute the signature with the secret.
 *
 * Every check prints "ok" or "FAIL" and what it compared; the exit status is
 * 1 when any failed.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "remote/remote_backend.h"

/* AWS's worked example (AWS General Reference, "Signing AWS requests with
 * Signature Version 4" and "Task 1: Create a canonical request"). */
#define EX_ACCESS_KEY "AKIDEXAMPLE"
#define EX_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define EX_DATE "20150830T123600Z"
#define EX_HOST "iam.amazonaws.com"
#define EX_QUERY "Action=ListUsers&Version=2010-05-08"
#define EX_CONTENT_TYPE "application/x-www-form-urlencoded; charset=utf-8"
#define EX_CANONICAL_HASH "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
#define EX_SIGNED_HEADERS "content-type;host;x-amz-date"
#define EX_SIGNATURE "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SESSION_TOKEN "FwoGZXIvYXdzEXAMPLE/session+token="

#define CAPTURE_MAX 65536
#define MAX_HEADERS 64
#define TEXT_MAX 8192
#define IO_TIMEOUT_S 10

static int failures;
static bool quiet; /* checks expected to fail: neither printed nor counted */

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;
	if (quiet)
		return;
	printf("%s: ", ok ? "ok" : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		failures++;
}

static void check_str(const char *label, const char *what, const char *got, const char *want)
{
	bool ok = got && !strcmp(got, want);
	check(ok, "%s: %s = %s%s%s", label, what, got ? got : "(none)", ok ? "" : ", want ",
	      ok ? "" : want);
}

/* --- text -------------------------------------------------------------- */

struct text {
	char s[TEXT_MAX];
	size_t len;
};

static void text_addf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->s + t->len, sizeof t->s - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof t->s - t->len) {
		fprintf(stderr, "sigv4_test: text longer than %d bytes\n", TEXT_MAX);
		exit(2);
	}
	t->len += (size_t)n;
}

static void hex(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(p, n, md);
	hex(md, sizeof md, out);
}

static void hmac_sha256(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
	unsigned int len = 32;
	if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &len)) {
		fprintf(stderr, "sigv4_test: HMAC failed\n");
		exit(2);
	}
}

/* --- the independent signer (AWS's algorithm, written from its docs) ---- */

struct header {
	char *name, *value;
};

/* What is signed: the headers as lowercase name and canonical value (trimmed,
 * inner runs of spaces as one), in any order; the query in any order. */
struct signing {
	const char *method, *uri, *query;
	struct header headers[MAX_HEADERS];
	size_t n_headers;
	const char *payload_hash, *amz_date, *region, *service, *secret;
};

struct signature {
	char canonical_hash[65], signed_headers[TEXT_MAX], signature[65];
	struct text canonical_request;
};

static int header_cmp(const void *a, const void *b)
{
	return strcmp(((const struct header *)a)->name, ((const struct header *)b)->name);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* name:value, lowercase name, value trimmed with inner blanks collapsed. */
static void add_canonical_header(struct signing *s, const char *name, size_t nlen, const char *value)
{
	if (s->n_headers == MAX_HEADERS) {
		fprintf(stderr, "sigv4_test: more than %d headers\n", MAX_HEADERS);
		exit(2);
	}
	struct header *h = &s->headers[s->n_headers++];
	h->name = strndup(name, nlen);
	for (char *p = h->name; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	h->value = malloc(strlen(value) + 1);
	char *o = h->value;
	while (*value == ' ' || *value == '\t')
		value++;
	for (; *value; value++)
		if ((*value != ' ' && *value != '\t') || (value[1] && value[1] != ' ' && value[1] != '\t'))
			*o++ = *value == '\t' ? ' ' : *value;
	*o = '\0';
}

static void signing_release(struct signing *s)
{
	for (size_t i = 0; i < s->n_headers; i++) {
		free(s->headers[i].name);
		free(s->headers[i].value);
	}
	s->n_headers = 0;
}

static void canonical_query(const char *query, struct text *out)
{
	char copy[TEXT_MAX], *params[MAX_HEADERS], *save = NULL;
	size_t n = 0;
	snprintf(copy, sizeof copy, "%s", query ? query : "");
	for (char *p = strtok_r(copy, "&", &save); p && n < MAX_HEADERS; p = strtok_r(NULL, "&", &save))
		params[n++] = p;
	qsort(params, n, sizeof *params, str_cmp);
	for (size_t i = 0; i < n; i++)
		text_addf(out, "%s%s%s", i ? "&" : "", params[i], strchr(params[i], '=') ? "" : "=");
}

static void sign(struct signing *s, struct signature *out)
{
	struct text *cr = &out->canonical_request, scope = { .len = 0 }, to_sign = { .len = 0 };
	struct text query = { .len = 0 }, signed_headers = { .len = 0 };
	unsigned char k1[32], k2[32];
	char date[9], secret[256];

	qsort(s->headers, s->n_headers, sizeof *s->headers, header_cmp);
	canonical_query(s->query, &query);
	cr->len = 0;
	text_addf(cr, "%s\n%s\n%s\n", s->method, s->uri, query.s);
	for (size_t i = 0; i < s->n_headers; i++) {
		text_addf(cr, "%s:%s\n", s->headers[i].name, s->headers[i].value);
		text_addf(&signed_headers, "%s%s", i ? ";" : "", s->headers[i].name);
	}
	text_addf(cr, "\n%s\n%s", signed_headers.s, s->payload_hash);
	sha256_hex(cr->s, cr->len, out->canonical_hash);
	snprintf(out->signed_headers, sizeof out->signed_headers, "%s", signed_headers.s);

	snprintf(date, sizeof date, "%.8s", s->amz_date);
	text_addf(&scope, "%s/%s/%s/aws4_request", date, s->region, s->service);
	text_addf(&to_sign, "AWS4-HMAC-SHA256\n%s\n%s\n%s", s->amz_date, scope.s, out->canonical_hash);
	snprintf(secret, sizeof secret, "AWS4%s", s->secret);
	hmac_sha256(secret, strlen(secret), date, k1);
	hmac_sha256(k1, 32, s->region, k2);
	hmac_sha256(k2, 32, s->service, k1);
	hmac_sha256(k1, 32, "aws4_request", k2);
	hmac_sha256(k2, 32, to_sign.s, k1);
	hex(k1, 32, out->signature);
}

/* --- a request as it arrived ------------------------------------------- */

struct request {
	char head[CAPTURE_MAX];
	char *method, *target;
	struct header headers[MAX_HEADERS];
	size_t n_headers;
	const char *body;
	size_t body_len;
};

/* The request's header name (case-insensitive): the first value, and how
 * many times it occurs. */
static const char *request_header(const struct request *r, const char *name, int *count)
{
	const char *first = NULL;
	int n = 0;
	for (size_t i = 0; i < r->n_headers; i++)
		if (!strcasecmp(r->headers[i].name, name) && n++ == 0)
			first = r->headers[i].value;
	if (count)
		*count = n;
	return first;
}

/* Splits data (head_len bytes of head, then the body) into r; r->body
 * points into data.  0, or -1 when the head does not parse. */
static int parse_request(const char *data, size_t head_len, size_t len, struct request *r)
{
	char *save = NULL, *line;
	if (head_len >= sizeof r->head)
		return -1;
	memcpy(r->head, data, head_len);
	r->head[head_len] = '\0';
	r->n_headers = 0;
	r->body = data + head_len;
	r->body_len = len - head_len;
	line = strtok_r(r->head, "\r\n", &save);
	if (!line || !(r->method = strtok_r(line, " ", &(char *){ NULL })))
		return -1;
	r->target = line + strlen(r->method) + 1;
	char *sp = strchr(r->target, ' ');
	if (!sp)
		return -1;
	*sp = '\0';
	while ((line = strtok_r(NULL, "\r\n", &save)) && r->n_headers < MAX_HEADERS) {
		char *colon = strchr(line, ':');
		if (!colon)
			return -1;
		*colon = '\0';
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		size_t vl = strlen(v);
		while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
			v[--vl] = '\0';
		r->headers[r->n_headers].name = line;
		r->headers[r->n_headers++].value = v;
	}
	return 0;
}

struct authorization {
	char access_key[128], scope[256], date[16], region[64], service[64];
	char signed_headers[1024], signature[128];
};

/* "AWS4-HMAC-SHA256 Credential=K/D/R/S/aws4_request, SignedHeaders=a;b, Signature=hex" */
static int parse_authorization(const char *v, struct authorization *a)
{
	const char *c, *sh, *sg;
	memset(a, 0, sizeof *a);
	if (!v || strncmp(v, "AWS4-HMAC-SHA256 ", 17) || !(c = strstr(v, "Credential=")) ||
	    !(sh = strstr(v, "SignedHeaders=")) || !(sg = strstr(v, "Signature=")))
		return -1;
	c += 11, sh += 14, sg += 10;
	snprintf(a->signed_headers, sizeof a->signed_headers, "%.*s", (int)strcspn(sh, ", "), sh);
	snprintf(a->signature, sizeof a->signature, "%.*s", (int)strcspn(sg, ", "), sg);
	size_t klen = strcspn(c, "/");
	snprintf(a->access_key, sizeof a->access_key, "%.*s", (int)klen, c);
	if (c[klen] != '/')
		return -1;
	snprintf(a->scope, sizeof a->scope, "%.*s", (int)strcspn(c + klen + 1, ", "), c + klen + 1);
	char rest[256];
	snprintf(rest, sizeof rest, "%s", a->scope);
	char *save = NULL, *date = strtok_r(rest, "/", &save), *region = strtok_r(NULL, "/", &save);
	char *service = strtok_r(NULL, "/", &save), *term = strtok_r(NULL, "/", &save);
	if (!date || !region || !service || !term || strcmp(term, "aws4_request"))
		return -1;
	snprintf(a->date, sizeof a->date, "%s", date);
	snprintf(a->region, sizeof a->region, "%s", region);
	snprintf(a->service, sizeof a->service, "%s", service);
	return 0;
}

static bool is_hex64(const char *s)
{
	size_t i = 0;
	for (; s && s[i]; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return i == 64;
}

/*
 * The strict check: what an S3 server does with r.  Prints each finding;
 * returns true when the signature verifies.  sig gets the recomputed one.
 */
static bool verify(const char *label, const struct request *r, const char *secret, struct signature *sig)
{
	struct authorization a;
	struct signing s = { .n_headers = 0 }, as_empty = { .n_headers = 0 };
	char body_hash[65], names[sizeof a.signed_headers + 2], *save = NULL;
	bool ok = true;
	int n, missing = 0;

	const char *auth = request_header(r, "Authorization", &n);
	if (n != 1 || parse_authorization(auth, &a)) {
		check(false, "%s: one parsable AWS4-HMAC-SHA256 Authorization header (%d found)", label, n);
		return false;
	}
	const char *amz_date = request_header(r, "x-amz-date", &n);
	ok &= n == 1;
	check(n == 1, "%s: the request has one x-amz-date header (%d)", label, n);
	if (!amz_date)
		return false;
	check(!strncmp(amz_date, a.date, 8) && strlen(amz_date) == 16,
	      "%s: x-amz-date %s is of the credential scope's day %s", label, amz_date, a.date);

	snprintf(names, sizeof names, ";%s;", a.signed_headers);
	bool s3 = !strcmp(a.service, "s3");
	const char *required[] = { "host", "x-amz-date", s3 ? "x-amz-content-sha256" : NULL };
	for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
		char want[64];
		if (!required[i])
			continue;
		snprintf(want, sizeof want, ";%s;", required[i]);
		bool signed_ = strstr(names, want) != NULL;
		ok &= signed_;
		check(signed_, "%s: %s is signed (SignedHeaders=%s)", label, required[i], a.signed_headers);
	}
	for (size_t i = 0; i < r->n_headers; i++) {
		char want[256];
		if (strncasecmp(r->headers[i].name, "x-amz-", 6))
			continue;
		snprintf(want, sizeof want, ";%s;", r->headers[i].name);
		for (char *p = want; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		bool signed_ = strstr(names, want) != NULL;
		ok &= signed_;
		if (!signed_)
			check(false, "%s: header %s is sent but not signed", label, r->headers[i].name);
	}

	/* Each signed header from the request: all its values, joined by ','.
	 * as_empty also takes a missing one as empty, to say why it failed. */
	snprintf(names, sizeof names, "%s", a.signed_headers);
	for (char *name = strtok_r(names, ";", &save); name; name = strtok_r(NULL, ";", &save)) {
		struct text joined = { .len = 0 };
		int count = 0;
		for (size_t i = 0; i < r->n_headers; i++)
			if (!strcasecmp(r->headers[i].name, name))
				text_addf(&joined, "%s%s", count++ ? "," : "", r->headers[i].value);
		add_canonical_header(&as_empty, name, strlen(name), joined.s);
		if (!count) {
			ok = false;
			missing++;
			check(false, "%s: '%s' is named as a signed header, but the request has no %s header",
			      label, name, name);
			continue;
		}
		add_canonical_header(&s, name, strlen(name), joined.s);
	}

	sha256_hex(r->body, r->body_len, body_hash);
	const char *content_sha = request_header(r, "x-amz-content-sha256", NULL);
	if (s3) {
		bool present = content_sha != NULL;
		ok &= present;
		check(present, "%s: an s3 request carries x-amz-content-sha256 (S3 requires it on every "
			       "SigV4 request)", label);
		if (content_sha && is_hex64(content_sha)) {
			bool same = !strcmp(content_sha, body_hash);
			ok &= same;
			check(same, "%s: x-amz-content-sha256 %s is the SHA-256 of the %zu body bytes received",
			      label, content_sha, r->body_len);
		} else if (content_sha) {
			check(!strcmp(content_sha, "UNSIGNED-PAYLOAD"),
			      "%s: x-amz-content-sha256 is UNSIGNED-PAYLOAD or 64 hex digits (%s)", label,
			      content_sha);
		}
	}

	char uri[TEXT_MAX];
	snprintf(uri, sizeof uri, "%s", r->target);
	char *q = strchr(uri, '?');
	if (q)
		*q++ = '\0';
	s.method = r->method;
	s.uri = uri;
	s.query = q;
	s.payload_hash = s3 && content_sha ? content_sha : body_hash;
	s.amz_date = amz_date;
	s.region = a.region;
	s.service = a.service;
	s.secret = secret;
	sign(&s, sig);
	signing_release(&s);
	bool match = !strcmp(sig->signature, a.signature);
	ok &= match;
	check(match, "%s: recomputed from the request as received, the signature is %s (sent %s)", label,
	      sig->signature, a.signature);
	if (missing && !quiet) {
		static struct signature guess;
		as_empty.method = s.method, as_empty.uri = s.uri, as_empty.query = s.query;
		as_empty.payload_hash = s.payload_hash, as_empty.amz_date = s.amz_date;
		as_empty.region = s.region, as_empty.service = s.service, as_empty.secret = secret;
		sign(&as_empty, &guess);
		if (!strcmp(guess.signature, a.signature))
			printf("hint: %s: the sender signed the missing header(s) as empty: it signed a header "
			       "it did not send.  libcurl 7.88 does that with a header removed by \"Name:\" "
			       "in CURLOPT_HTTPHEADER, such as \"Expect:\" (curl issue #11664, fixed by curl "
			       "PR #11668, August 2023); "
			       "AWS refuses such a request, MinIO takes a missing Expect for \"100-continue\".\n",
			       label);
	}
	signing_release(&as_empty);
	return ok;
}

/* --- the listener ------------------------------------------------------ */

struct listener {
	int fd;
	unsigned short port;
};

/* One request/answer on the listener, served by its own thread. */
struct exchange {
	struct listener *l;
	pthread_t thread;
	char data[CAPTURE_MAX];
	size_t len, head_len, body_len;
	char error[160];
};

static int listener_open(struct listener *l)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof addr;
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* SO_RCVTIMEO bounds accept() too: a client that never comes. */
	if (l->fd < 0 || setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
	    bind(l->fd, (struct sockaddr *)&addr, sizeof addr) || listen(l->fd, 8) ||
	    getsockname(l->fd, (struct sockaddr *)&addr, &len)) {
		perror("sigv4_test: listener");
		return -1;
	}
	l->port = ntohs(addr.sin_port);
	return 0;
}

/* Content-Length of the head (0 when absent). */
static size_t content_length(const char *head, size_t len)
{
	for (const char *p = head; p && p < head + len; p = memchr(p, '\n', (size_t)(head + len - p))) {
		if (*p == '\n')
			p++;
		if (!strncasecmp(p, "Content-Length:", 15))
			return strtoul(p + 15, NULL, 10);
	}
	return 0;
}

static void *serve_one(void *arg)
{
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	struct exchange *ex = arg;
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	int c = accept(ex->l->fd, NULL, NULL);
	if (c < 0) {
		snprintf(ex->error, sizeof ex->error, "accept: %s", strerror(errno));
		return NULL;
	}
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	/* Read until the blank line, then Content-Length more bytes; bounded by
	 * the buffer and the timeout. */
	while (!ex->head_len || ex->len < ex->head_len + ex->body_len) {
		if (ex->len == sizeof ex->data - 1) {
			snprintf(ex->error, sizeof ex->error, "request larger than %d bytes", CAPTURE_MAX);
			break;
		}
		ssize_t n = recv(c, ex->data + ex->len, sizeof ex->data - 1 - ex->len, 0);
		if (n <= 0) {
			snprintf(ex->error, sizeof ex->error, "the request ended early: %s",
				 n ? strerror(errno) : "connection closed");
			break;
		}
		ex->len += (size_t)n;
		const char *end = ex->head_len ? NULL : memmem(ex->data, ex->len, "\r\n\r\n", 4);
		if (end) {
			ex->head_len = (size_t)(end - ex->data) + 4;
			ex->body_len = content_length(ex->data, ex->head_len);
		}
	}
	ex->data[ex->len] = '\0';
	if (send(c, reply, sizeof reply - 1, MSG_NOSIGNAL) < 0 && !ex->error[0])
		snprintf(ex->error, sizeof ex->error, "send: %s", strerror(errno));
	close(c);
	return NULL;
}

static void exchange_start(struct exchange *ex, struct listener *l)
{
	memset(ex, 0, sizeof *ex);
	ex->l = l;
	if (pthread_create(&ex->thread, NULL, serve_one, ex)) {
		fprintf(stderr, "sigv4_test: cannot start the listener thread\n");
		exit(2);
	}
}

/* Waits for the listener's thread and parses what it got into r. */
static bool exchange_finish(struct exchange *ex, const char *label, struct request *r)
{
	pthread_join(ex->thread, NULL);
	if (ex->error[0] || !ex->head_len) {
		check(false, "%s: the listener got a whole request (%s)", label,
		      ex->error[0] ? ex->error : "no head");
		return false;
	}
	if (parse_request(ex->data, ex->head_len, ex->len, r)) {
		check(false, "%s: the request parses", label);
		return false;
	}
	printf("--- %s: the request as received (%zu body bytes) ---\n%.*s", label, r->body_len,
	       (int)ex->head_len, ex->data);
	return true;
}

/* Runs c against the listener; the request as received goes to r. */
static bool curl_exchange(CURL *c, struct listener *l, const char *label, struct request *r)
{
	static struct exchange ex;
	char error[CURL_ERROR_SIZE] = "";
	exchange_start(&ex, l);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
	curl_easy_setopt(c, CURLOPT_PROXY, ""); /* never an http_proxy of the environment */
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)IO_TIMEOUT_S);
	CURLcode code = curl_easy_perform(c);
	bool ok = exchange_finish(&ex, label, r);
	check(code == CURLE_OK, "%s: libcurl finished the request (%s)", label,
	      error[0] ? error : curl_easy_strerror(code));
	return ok && code == CURLE_OK;
}

/* --- 1, 2: AWS's worked example ---------------------------------------- */

static void example_signing(struct signing *s)
{
	*s = (struct signing){ .method = "GET", .uri = "/", .query = EX_QUERY,
			       .payload_hash = EMPTY_SHA256, .amz_date = EX_DATE, .region = "us-east-1",
			       .service = "iam", .secret = EX_SECRET };
	add_canonical_header(s, "Host", 4, EX_HOST);
	add_canonical_header(s, "Content-Type", 12, EX_CONTENT_TYPE);
	add_canonical_header(s, "X-Amz-Date", 10, EX_DATE);
}

static void test_example_independent(void)
{
	struct signing s;
	static struct signature sig;
	char empty[65];
	puts("== 1. AWS's example, independent signer ==");
	sha256_hex("", 0, empty);
	check_str("example", "SHA-256 of the empty payload", empty, EMPTY_SHA256);
	example_signing(&s);
	sign(&s, &sig);
	signing_release(&s);
	printf("canonical request:\n%s\n", sig.canonical_request.s);
	check_str("example", "hashed canonical request", sig.canonical_hash, EX_CANONICAL_HASH);
	check_str("example", "SignedHeaders", sig.signed_headers, EX_SIGNED_HEADERS);
	check_str("example", "Signature", sig.signature, EX_SIGNATURE);
}

static void test_example_curl(struct listener *l)
{
	static struct request r;
	struct authorization a;
	struct curl_slist *headers = NULL;
	char connect_to[64];
	int count;
	puts("== 2. AWS's example, signed by libcurl ==");
	CURL *c = curl_easy_init();
	/* http, so that the listener reads it; the scheme is not signed. */
	snprintf(connect_to, sizeof connect_to, "%s:80:127.0.0.1:%u", EX_HOST, l->port);
	struct curl_slist *to = curl_slist_append(NULL, connect_to);
	headers = curl_slist_append(headers, "Content-Type: " EX_CONTENT_TYPE);
	headers = curl_slist_append(headers, "X-Amz-Date: " EX_DATE);
	curl_easy_setopt(c, CURLOPT_URL, "http://" EX_HOST "/?" EX_QUERY);
	curl_easy_setopt(c, CURLOPT_CONNECT_TO, to);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:iam");
	curl_easy_setopt(c, CURLOPT_USERPWD, EX_ACCESS_KEY ":" EX_SECRET);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	if (curl_exchange(c, l, "example/curl", &r)) {
		const char *auth = request_header(&r, "Authorization", NULL);
		if (parse_authorization(auth, &a)) {
			check(false, "example/curl: Authorization parses (%s)", auth ? auth : "absent");
		} else {
			check_str("example/curl", "access key", a.access_key, EX_ACCESS_KEY);
			check_str("example/curl", "credential scope", a.scope, "20150830/us-east-1/iam/aws4_request");
			check_str("example/curl", "SignedHeaders", a.signed_headers, EX_SIGNED_HEADERS);
			check_str("example/curl", "Signature", a.signature, EX_SIGNATURE);
		}
		check_str("example/curl", "Host", request_header(&r, "Host", NULL), EX_HOST);
		check_str("example/curl", "request target", r.target, "/?" EX_QUERY);
		/* libcurl signs with the X-Amz-Date it is given, and sends it
		 * twice: its own copy and the caller's (the same value). */
		const char *date = request_header(&r, "X-Amz-Date", &count);
		check_str("example/curl", "X-Amz-Date sent", date, EX_DATE);
		for (size_t i = 0; i < r.n_headers; i++)
			if (!strcasecmp(r.headers[i].name, "X-Amz-Date") && strcmp(r.headers[i].value, EX_DATE))
				check(false, "example/curl: every X-Amz-Date header is %s (one is %s)", EX_DATE,
				      r.headers[i].value);
		printf("note: libcurl %s used the X-Amz-Date given and sent %d X-Amz-Date header(s)\n",
		       curl_version_info(CURLVERSION_NOW)->version, count);
	}
	curl_slist_free_all(headers);
	curl_slist_free_all(to);
	curl_easy_cleanup(c);
}

/* --- 3: S3 requests shaped as remote_http.c's --------------------------- */

static const unsigned char put_body[] = "CJCE\0\x01 a small artifact\n\xff\xfe";

static bool is_amz_date_now(const char *d)
{
	struct tm tm = { .tm_isdst = 0 };
	if (!d || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z' ||
	    sscanf(d, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
		   &tm.tm_sec) != 6)
		return false;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	double skew = difftime(timegm(&tm), time(NULL));
	return skew > -900 && skew < 900; /* AWS refuses more than 15 minutes */
}

/*
 * One hand-made S3 request through libcurl: method, path (on the listener),
 * the extra headers ("Name: value"), the body (PUT) or none.  Checks that
 * the signature libcurl sent is the independent signer's for exactly those
 * headers plus host and x-amz-date (the date libcurl chose), and that the
 * request passes the strict check.
 */
static void s3_request(struct listener *l, const char *label, const char *method, const char *path,
		       const char *const *extra, const void *body, size_t body_len)
{
	static struct request r;
	static struct signature want, got;
	struct authorization a;
	struct signing s = { .n_headers = 0 };
	struct curl_slist *headers = NULL;
	char url[256], host[64], body_hash[65];
	printf("== 3. %s, signed by libcurl ==\n", label);
	CURL *c = curl_easy_init();
	snprintf(url, sizeof url, "http://127.0.0.1:%u%s", l->port, path);
	snprintf(host, sizeof host, "127.0.0.1:%u", l->port);
	for (size_t i = 0; extra[i]; i++)
		headers = curl_slist_append(headers, extra[i]);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
	curl_easy_setopt(c, CURLOPT_USERNAME, EX_ACCESS_KEY);
	curl_easy_setopt(c, CURLOPT_PASSWORD, EX_SECRET);
	if (!strcmp(method, "PUT")) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	if (curl_exchange(c, l, label, &r)) {
		const char *date = request_header(&r, "x-amz-date", NULL);
		check(is_amz_date_now(date), "%s: x-amz-date %s is now, in YYYYMMDDTHHMMSSZ", label,
		      date ? date : "(none)");
		check(r.body_len == body_len && !memcmp(r.body, body, body_len),
		      "%s: the body received is the %zu bytes sent", label, body_len);
		/* What should be signed, from what was asked for. */
		sha256_hex(body, body_len, body_hash);
		s = (struct signing){ .method = method, .uri = path, .query = "", .payload_hash = body_hash,
				      .amz_date = date ? date : "", .region = "us-east-1", .service = "s3",
				      .secret = EX_SECRET };
		add_canonical_header(&s, "host", 4, host);
		add_canonical_header(&s, "x-amz-date", 10, date ? date : "");
		for (size_t i = 0; extra[i]; i++)
			add_canonical_header(&s, extra[i], strcspn(extra[i], ":"), strchr(extra[i], ':') + 1);
		sign(&s, &want);
		signing_release(&s);
		printf("canonical request (independent):\n%s\n", want.canonical_request.s);
		if (parse_authorization(request_header(&r, "Authorization", NULL), &a)) {
			check(false, "%s: Authorization parses", label);
		} else {
			check_str(label, "access key", a.access_key, EX_ACCESS_KEY);
			check(!strncmp(a.scope, date ? date : "-", 8) && strstr(a.scope, "/us-east-1/s3/aws4_request"),
			      "%s: credential scope %s", label, a.scope);
			check_str(label, "SignedHeaders (every header given, host, x-amz-date)", a.signed_headers,
				  want.signed_headers);
			check_str(label, "Signature (the independent signer's)", a.signature, want.signature);
		}
		verify(label, &r, EX_SECRET, &got);
	}
	curl_slist_free_all(headers);
	curl_easy_cleanup(c);
}

static void test_s3_requests(struct listener *l)
{
	char sha[65], content_sha[96];
	sha256_hex(put_body, sizeof put_body - 1, sha);
	snprintf(content_sha, sizeof content_sha, "x-amz-content-sha256: %s", sha);
	/* remote_http.c's put-if-absent, less its "Expect:" (see backend). */
	const char *const put[] = { "Content-Type: application/octet-stream", content_sha, "If-None-Match: *",
				    "x-amz-security-token: " SESSION_TOKEN, NULL };
	s3_request(l, "s3 PUT", "PUT", "/cjc-bucket/ci/v1/linux-x86_64/c/0123abcd", put, put_body,
		   sizeof put_body - 1);
	const char *const get[] = { "x-amz-content-sha256: " EMPTY_SHA256, NULL };
	s3_request(l, "s3 GET", "GET", "/cjc-bucket/ci/v1/linux-x86_64/c/0123abcd", get, "", 0);

	/* The strict check has teeth: a wrong secret, a changed body. */
	static struct request r;
	static struct signature sig;
	CURL *c = curl_easy_init();
	struct curl_slist *headers = curl_slist_append(NULL, content_sha);
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%u/cjc-bucket/x", l->port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
	curl_easy_setopt(c, CURLOPT_USERPWD, EX_ACCESS_KEY ":" EX_SECRET);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, put_body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(sizeof put_body - 1));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	puts("== 3. the strict check refuses a wrong secret and a changed body ==");
	if (curl_exchange(c, l, "control", &r)) {
		bool as_sent = verify("control", &r, EX_SECRET, &sig);
		quiet = true;
		bool wrong_secret = verify("control, wrong secret", &r, "not the secret", &sig);
		((char *)r.body)[0] ^= 1;
		bool changed_body = verify("control, changed body", &r, EX_SECRET, &sig);
		quiet = false;
		check(as_sent && !wrong_secret && !changed_body,
		      "control: the strict check takes the request as sent and refuses it with a wrong "
		      "secret (%s) or a changed body (%s)", wrong_secret ? "taken" : "refused",
		      changed_body ? "taken" : "refused");
	}
	curl_slist_free_all(headers);
	curl_easy_cleanup(c);
}

/* --- 4: the store's own requests (remote_http.c) ------------------------ */

static void test_backend(struct listener *l)
{
	static struct request r;
	static struct signature sig;
	static struct exchange ex;
	struct cjc_buf why = CJC_BUF_INIT, out = CJC_BUF_INIT;
	char url[256];
	int rc;
	puts("== 4. the s3:// store's own requests (remote_http.c) ==");
	setenv("AWS_ACCESS_KEY_ID", EX_ACCESS_KEY, 1);
	setenv("AWS_SECRET_ACCESS_KEY", EX_SECRET, 1);
	setenv("AWS_SESSION_TOKEN", SESSION_TOKEN, 1);
	snprintf(url, sizeof url, "s3://cjc-bucket/ci?endpoint=http://127.0.0.1:%u&region=eu-west-1", l->port);
	struct cjc_remote_url u = { .url = url, .shown = url, .connect_ms = IO_TIMEOUT_S * 1000,
				    .operation_ms = IO_TIMEOUT_S * 1000 };
	struct cjc_remote_backend *b = cjc_remote_http_ops.open(&u, &why);
	if (!b) {
		check(false, "backend: opens %s (%s)", url, why.data ? why.data : "");
		cjc_buf_release(&why);
		return;
	}

	exchange_start(&ex, l);
	rc = cjc_remote_http_ops.put(b, "v1/linux-x86_64/e/0123abcd", put_body, sizeof put_body - 1, true, &why);
	if (exchange_finish(&ex, "backend PUT", &r)) {
		check(rc == CJC_REMOTE_OK, "backend PUT: answered ok (%s)", why.data ? why.data : "");
		check_str("backend PUT", "request target", r.target, "/cjc-bucket/ci/v1/linux-x86_64/e/0123abcd");
		check(r.body_len == sizeof put_body - 1 && !memcmp(r.body, put_body, r.body_len),
		      "backend PUT: the body received is the one put");
		verify("backend PUT", &r, EX_SECRET, &sig);
		const char *auth = request_header(&r, "Authorization", NULL);
		check(auth && strstr(auth, "/eu-west-1/s3/aws4_request"), "backend PUT: signed for region eu-west-1");
	}
	cjc_buf_reset(&why);

	exchange_start(&ex, l);
	rc = cjc_remote_http_ops.get(b, "v1/linux-x86_64/e/0123abcd", 1 << 20, &out, &why);
	if (exchange_finish(&ex, "backend GET", &r)) {
		check(rc == CJC_REMOTE_ABSENT, "backend GET: an empty 200 is absent (%d)", rc);
		verify("backend GET", &r, EX_SECRET, &sig);
	}
	cjc_remote_http_ops.close(b);
	cjc_buf_release(&why);
	cjc_buf_release(&out);
}

int main(int argc, char **argv)
{
	struct listener l;
	const char *part = argc > 1 ? argv[1] : "";
	bool algorithm = !*part || !strcmp(part, "algorithm"), backend = !*part || !strcmp(part, "backend");
	if (argc > 2 || (!algorithm && !backend)) {
		fprintf(stderr, "usage: sigv4_test [algorithm|backend]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Every request goes to the listener, never to a proxy of the environment. */
	setenv("no_proxy", "*", 1);
	setenv("NO_PROXY", "*", 1);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) || listener_open(&l))
		return 2;
	printf("libcurl %s; listening on 127.0.0.1:%u\n", curl_version_info(CURLVERSION_NOW)->version, l.port);
	if (algorithm) {
		test_example_independent();
		test_example_curl(&l);
		test_s3_requests(&l);
	}
	if (backend)
		test_backend(&l);
	close(l.fd);
	curl_global_cleanup();
	printf("%s: %d check(s) failed\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
