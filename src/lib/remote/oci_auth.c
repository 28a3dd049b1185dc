/*
 * oci_auth.c - the OCI backend's authentication (remote_oci.c's head
 * comment says what registries ask for and where credentials may go):
 * the credentials a store is given, what each registry asked for and the
 * tokens fetched for it, kept for the process, what a request carries,
 * and a request sent with one 401 answered (oci_ask).
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/oom.h"
#include "remote/oci.h"
#include "remote/oci_internal.h"

#define TOKEN_REPLY_MAX (64 * 1024)

static const char *const scope_actions[OCI_NSCOPES] = { "pull", "pull,push" };

struct token {
	char *value;
	int64_t expires_ms;
};

/* What a registry asked for, kept for the process across the store's
 * backends: remote.c closes a backend before nvcc runs (cjc_remote_hang_up)
 * and opens another after it, and a helper keeps a pool of them.  Keyed
 * by a hash of the registry, the repository and the credentials; read and
 * written under auth_lock. */
struct oci_auth {
	char key[CJC_HEX_LEN + 1]; /* "" when free */
	bool basic;                /* the registry asked for basic credentials */
	char *realm, *service;     /* the token server it named, once it did */
	struct token tokens[OCI_NSCOPES];
};
#define NAUTH 8
static struct oci_auth auths[NAUTH];
static pthread_mutex_t auth_lock = PTHREAD_MUTEX_INITIALIZER;

void oci_auth_free(struct oci_auth *a)
{
	free(a->realm);
	free(a->service);
	for (int s = 0; s < OCI_NSCOPES; s++)
		cjc_free_secret(a->tokens[s].value);
	free(a);
}

/* credentials-file: USER:SECRET (a CI token as SECRET). */
int oci_read_credentials(struct cjc_remote_backend *b, const char *file, struct cjc_buf *why)
{
	char *line = cjc_curl_read_secret(file, "credentials-file", why);
	if (!line)
		return -1;
	char *colon = strchr(line, ':');
	if (!colon || colon == line) {
		cjc_buf_addf(why, "setting: credentials-file %s is not USER:SECRET", file);
		cjc_free_secret(line);
		return -1;
	}
	free(b->user);
	cjc_free_secret(b->password);
	b->user = cjc_xstrndup(line, (size_t)(colon - line));
	b->password = cjc_xstrdup(colon + 1);
	cjc_free_secret(line);
	return 0;
}

static void add_part(struct cjc_hash *h, const char *s)
{
	cjc_hash_update(h, s ? s : "", s ? strlen(s) + 1 : 0);
	cjc_hash_update(h, s ? "+" : "-", 1);
}

/* The process's memory of what this registry asks for, with these credentials. */
void oci_auth_find(struct cjc_remote_backend *b)
{
	struct cjc_hash h;
	char key[CJC_HEX_LEN + 1];
	cjc_hash_init(&h);
	add_part(&h, b->origin);
	add_part(&h, b->repo);
	add_part(&h, b->user);
	add_part(&h, b->password);
	add_part(&h, b->bearer);
	cjc_hash_final_hex(&h, key);
	cjc_oom_lock(&auth_lock);
	for (int i = 0; i < NAUTH && !b->auth; i++)
		if (!auths[i].key[0] || !strcmp(auths[i].key, key)) {
			b->auth = &auths[i];
			memcpy(auths[i].key, key, sizeof key);
		}
	cjc_oom_unlock(&auth_lock);
	if (!b->auth)
		b->auth = b->own = cjc_xcalloc(1, sizeof *b->own);
}

/* A copy of the token of scope when one is cached and fresh, else NULL. */
static char *token_for(const struct cjc_remote_backend *b, enum oci_scope s)
{
	cjc_oom_lock(&auth_lock);
	const struct token *t = &b->auth->tokens[s];
	char *v = t->value && cjc_now_ms() < t->expires_ms ? cjc_xstrdup(t->value) : NULL;
	cjc_oom_unlock(&auth_lock);
	return v;
}

/* Whether the registry asked for basic credentials.  Not before it asks,
 * as every registry client does: a registry's answer to credentials it did
 * not ask for is its own (a token registry may refuse them). */
static bool asked_basic(const struct cjc_remote_backend *b)
{
	cjc_oom_lock(&auth_lock);
	bool basic = b->auth->basic;
	cjc_oom_unlock(&auth_lock);
	return basic;
}

/* c carries the basic credentials, when there are any. */
static void send_basic(const struct cjc_remote_backend *b, CURL *c)
{
	if (!b->user)
		return;
	cjc_curl.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
	cjc_curl.easy_setopt(c, CURLOPT_USERNAME, b->user);
	cjc_curl.easy_setopt(c, CURLOPT_PASSWORD, b->password);
}

/* What the request carries on c: a ready token, a fetched one, the basic
 * credentials once the registry asked for them, or nothing. */
void oci_authorize(struct cjc_remote_backend *b, CURL *c, const struct oci_request *rq)
{
	if (!oci_on_registry(b, rq->url))
		return;
	char *token = b->bearer ? cjc_xstrdup(b->bearer) : token_for(b, rq->scope);
	if (token) { /* libcurl copies it */
		cjc_curl.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		cjc_curl.easy_setopt(c, CURLOPT_XOAUTH2_BEARER, token);
		cjc_free_secret(token);
	} else if (asked_basic(b)) {
		send_basic(b, c);
	}
}

/* Sends rq once, as authorized now; curl's result. */
static CURLcode send_once(struct cjc_remote_backend *b, const struct oci_request *rq, struct oci_reply *r,
			  bool only_basic, long left)
{
	struct curl_slist *headers = oci_prepare(b, b->curl, rq, r, left, b->error);
	if (only_basic)
		send_basic(b, b->curl);
	else
		oci_authorize(b, b->curl, rq);
	CURLcode code = cjc_curl.easy_perform(b->curl);
	cjc_curl.slist_free_all(headers);
	oci_answered(b->curl, r);
	return code;
}

char *cjc_oci_challenge_param(const char *challenge, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = challenge; (p = strcasestr(p, name)); p += n) {
		bool starts = p == challenge || p[-1] == ' ' || p[-1] == ',';
		if (!starts || p[n] != '=')
			continue;
		const char *v = p + n + 1;
		size_t token = strcspn(v, ", \t"); /* RFC 7235's token form: up to a comma or a blank */
		if (*v != '"')
			return token ? cjc_xstrndup(v, token) : NULL;
		const char *end = strchr(v + 1, '"');
		return end ? cjc_xstrndup(v + 1, (size_t)(end - v - 1)) : NULL;
	}
	return NULL;
}

/* Percent-encodes s (RFC 3986 unreserved kept) onto out. */
static void add_escaped(struct cjc_buf *out, const char *s)
{
	for (; *s; s++)
		if (isalnum((unsigned char)*s) || strchr("-._~", *s))
			cjc_buf_add(out, s, 1);
		else
			cjc_buf_addf(out, "%%%02X", (unsigned char)*s);
}

/* The token server's answer's tokens wiped in place (jansson frees its
 * strings without wiping them). */
static void wipe_tokens(json_t *doc)
{
	const char *names[] = { "token", "access_token" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		json_t *t = json_object_get(doc, names[i]);
		if (json_is_string(t))
			explicit_bzero((char *)json_string_value(t), json_string_length(t));
	}
}

/* Fetches a token of scope s from the realm the registry named (with the
 * basic credentials if any), cached for its lifetime. */
static int fetch_token(struct cjc_remote_backend *b, enum oci_scope s, const char *scope,
		       struct cjc_buf *why)
{
	long left = cjc_remote_time_left(b->u);
	if (left <= 0) {
		cjc_buf_adds(why, "timed out: the operation-timeout is spent");
		errno = ETIMEDOUT;
		return CJC_REMOTE_TIMEOUT;
	}
	cjc_oom_lock(&auth_lock);
	char *realm = b->auth->realm ? cjc_xstrdup(b->auth->realm) : cjc_xstrdup("");
	char *service = b->auth->service ? cjc_xstrdup(b->auth->service) : NULL;
	cjc_oom_unlock(&auth_lock);
	if (!cjc_starts_with(realm, "https://") && (b->tls || !cjc_starts_with(realm, "http://"))) {
		cjc_buf_adds(why, "setting: the registry names a token server that is not https; "
			     "no credentials are sent there");
		free(realm);
		free(service);
		return CJC_REMOTE_ERROR;
	}
	struct cjc_buf url = CJC_BUF_INIT, body = CJC_BUF_INIT;
	cjc_buf_addf(&url, "%s%c", realm, strchr(realm, '?') ? '&' : '?');
	if (service) {
		cjc_buf_adds(&url, "service=");
		add_escaped(&url, service);
		cjc_buf_adds(&url, "&");
	}
	free(realm);
	free(service);
	cjc_buf_adds(&url, "scope=");
	add_escaped(&url, scope);
	struct oci_request rq = { .method = "GET", .url = url.data, .out = &body, .max = TOKEN_REPLY_MAX };
	struct oci_reply r = { 0 };
	CURLcode code = send_once(b, &rq, &r, true, left);
	int rc = oci_result_of(b, code, &r, why);
	if (rc == CJC_REMOTE_ABSENT)
		rc = CJC_REMOTE_ERROR, cjc_buf_adds(why, "setting: the token server answers 404");
	json_t *doc = rc == CJC_REMOTE_OK ? json_loadb(body.data, body.len, 0, NULL) : NULL;
	json_t *t = json_object_get(doc, "token");
	t = json_is_string(t) ? t : json_object_get(doc, "access_token");
	json_t *expires = json_object_get(doc, "expires_in");
	if (rc == CJC_REMOTE_OK && (!json_is_string(t) || !json_string_length(t) ||
				    strpbrk(json_string_value(t), "\r\n"))) {
		cjc_buf_adds(why, "the token server's answer holds no token");
		rc = CJC_REMOTE_ERROR;
	}
	if (rc == CJC_REMOTE_OK) {
		json_int_t secs = json_is_integer(expires) && json_integer_value(expires) > 0
					  ? json_integer_value(expires) : 60;
		if (secs > 86400)
			secs = 86400;
		char *value = cjc_xstrdup(json_string_value(t)); /* not under the lock: oom.h */
		cjc_oom_lock(&auth_lock);
		struct token *k = &b->auth->tokens[s];
		cjc_free_secret(k->value);
		k->value = value;
		/* a little before it ends, so that it does not end in flight */
		k->expires_ms = cjc_now_ms() + secs * 1000 - (secs > 20 ? 10000 : secs * 250);
		cjc_oom_unlock(&auth_lock);
	}
	wipe_tokens(doc);
	json_decref(doc);
	free(r.challenge);
	free(r.location);
	cjc_buf_release(&r.error);
	cjc_buf_release(&url);
	cjc_buf_release_secret(&body);
	return rc;
}

/* What a 401's challenge asks for, taken: 0 when the request is worth
 * sending again with what it asked for, else -1 with why. */
static int answer_challenge(struct cjc_remote_backend *b, const struct oci_request *rq,
			    const char *challenge, struct cjc_buf *why, int *rc)
{
	*rc = CJC_REMOTE_ERROR;
	if (b->bearer)
		return -1; /* the ready token was refused: result_of says so */
	if (challenge && !strncasecmp(challenge, "basic", 5)) {
		if (!b->user) {
			cjc_buf_adds(why, "setting: authentication failed: the registry asks for "
				     "credentials (give them in the URL or a credentials-file)");
			return 1;
		}
		cjc_oom_lock(&auth_lock);
		bool sent = b->auth->basic;
		b->auth->basic = true;
		cjc_oom_unlock(&auth_lock);
		return sent ? -1 : 0;
	}
	if (!challenge || strncasecmp(challenge, "bearer ", 7))
		return -1;
	char *realm = cjc_oci_challenge_param(challenge, "realm");
	char *service = cjc_oci_challenge_param(challenge, "service");
	char *scope = cjc_oci_challenge_param(challenge, "scope");
	if (!realm) {
		free(service);
		free(scope);
		return -1;
	}
	cjc_oom_lock(&auth_lock);
	free(b->auth->realm);
	free(b->auth->service);
	b->auth->realm = realm;
	b->auth->service = service;
	cjc_oom_unlock(&auth_lock);
	char *mine = cjc_xasprintf("repository:%s:%s", b->repo, scope_actions[rq->scope]);
	*rc = fetch_token(b, rq->scope, scope ? scope : mine, why);
	free(scope);
	free(mine);
	return *rc == CJC_REMOTE_OK ? 0 : 1;
}

/* Sends rq, answering one 401 (anonymous first, then what the registry
 * asks for; a token for a server already named is fetched up front). */
static int perform(struct cjc_remote_backend *b, const struct oci_request *rq, struct oci_reply *r,
		   struct cjc_buf *why)
{
	int rc = CJC_REMOTE_OK;
	cjc_oom_lock(&auth_lock);
	bool named = b->auth->realm != NULL;
	cjc_oom_unlock(&auth_lock);
	char *token = named && !b->bearer ? token_for(b, rq->scope) : NULL;
	bool fetch = named && !b->bearer && !token && oci_on_registry(b, rq->url);
	cjc_free_secret(token);
	if (fetch) {
		char *scope = cjc_xasprintf("repository:%s:%s", b->repo, scope_actions[rq->scope]);
		rc = fetch_token(b, rq->scope, scope, why);
		free(scope);
		if (rc != CJC_REMOTE_OK)
			return rc;
	}
	for (int attempt = 0;; attempt++) {
		long left = cjc_remote_time_left(b->u);
		if (left <= 0) {
			cjc_buf_adds(why, "timed out: the operation-timeout is spent");
			errno = ETIMEDOUT;
			return CJC_REMOTE_TIMEOUT;
		}
		CURLcode code = send_once(b, rq, r, false, left);
		/* only the registry's own 401 is answered: a host a redirect led to
		 * (its storage) gets no credentials, nor a say in where they go */
		if (code != CURLE_OK || r->status != 401 || attempt || r->elsewhere)
			return oci_result_of(b, code, r, why);
		char *challenge = r->challenge ? cjc_xstrdup(r->challenge) : NULL;
		int said = answer_challenge(b, rq, challenge, why, &rc);
		free(challenge);
		if (said > 0)
			return rc;
		if (said < 0)
			return oci_result_of(b, code, r, why);
	}
}

/* One request; its reply's headers released. */
int oci_ask(struct cjc_remote_backend *b, const struct oci_request *rq, char **location,
	    struct cjc_buf *why)
{
	struct oci_reply r = { 0 };
	int rc = perform(b, rq, &r, why);
	if (location)
		*location = r.location, r.location = NULL;
	free(r.challenge);
	free(r.location);
	cjc_buf_release(&r.error);
	return rc;
}
