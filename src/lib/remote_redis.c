/*
 * remote_redis.c - the Redis backend (remote.h), through hiredis.
 *
 *     redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 *     redis+unix:/PATH   redis+unix://[[USER]:PASSWORD@]/PATH[?db=N]
 *
 * Names are keys prefixed "cjc/".  get is GETRANGE up to the bound, so the
 * server never sends more than we asked for (an absent key and an empty
 * value both read as absent; no valid value is empty); put-if-absent is
 * SET NX, exists is EXISTS.  The connection waits at most connect_ms, and
 * each reply at most operation_ms; a timed-out context is not used again.
 *
 * hiredis is loaded with dlopen when a store first needs it (as libcurl in
 * remote_http.c), so a cjc process that uses no Redis store never loads it.
 */
#include "remote.h"

#include <dlfcn.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "dl.h"

struct cjc_remote_backend {
	redisContext *c;
};

/* The hiredis functions used, from the library loaded at run time. */
struct redis_api {
	redisContext *(*connect)(const char *ip, int port, const struct timeval tv);
	redisContext *(*connect_unix)(const char *path, const struct timeval tv);
	int (*set_timeout)(redisContext *c, const struct timeval tv);
	void *(*command_argv)(redisContext *c, int argc, const char **argv, const size_t *lens);
	void (*free_reply)(void *reply);
	void (*free_context)(redisContext *c);
};
static struct redis_api api;
static const char *load_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define FN(field, name) CJC_DL_SYMBOL(struct redis_api, field, name)
static const struct cjc_dl_symbol redis_symbols[] = {
	FN(connect, "redisConnectWithTimeout"), FN(connect_unix, "redisConnectUnixWithTimeout"),
	FN(set_timeout, "redisSetTimeout"), FN(command_argv, "redisCommandArgv"),
	FN(free_reply, "freeReplyObject"), FN(free_context, "redisFree"),
};

static void load(void)
{
	const char *missing;
	void *lib = dlopen(CJC_HIREDIS_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib || cjc_dl_resolve(lib, redis_symbols, sizeof redis_symbols / sizeof *redis_symbols,
				   &api, &missing))
		load_error = "cannot load " CJC_HIREDIS_SONAME " (install libhiredis)";
}

struct redis_url {
	char *host, *socket, *user, *password;
	int port, db;
};

static void url_release(struct redis_url *u)
{
	free(u->host);
	free(u->socket);
	free(u->user);
	free(u->password);
}

/* [[USER]:PASSWORD@] at p, up to the last '@' before end (a password may
 * hold '/' or '@', as cjc_remote_redact assumes); returns what follows. */
static const char *parse_userinfo(const char *p, const char *end, struct redis_url *u)
{
	const char *at = memrchr(p, '@', (size_t)(end - p));
	if (!at)
		return p;
	const char *colon = memchr(p, ':', (size_t)(at - p));
	if (colon) {
		if (colon > p)
			u->user = cjc_xstrndup(p, (size_t)(colon - p));
		u->password = cjc_xstrndup(colon + 1, (size_t)(at - colon - 1));
	} else {
		u->password = cjc_xstrndup(p, (size_t)(at - p));
	}
	return at + 1;
}

static int parse_db(const char *text, int *db)
{
	char *end;
	long v = strtol(text, &end, 10);
	if (!*text || *end || v < 0 || v > 1000000)
		return -1;
	*db = (int)v;
	return 0;
}

static int parse_url(const char *url, struct redis_url *u)
{
	memset(u, 0, sizeof *u);
	u->port = 6379;
	if (cjc_starts_with(url, "redis+unix:")) {
		const char *p = url + 11;
		const char *q = strchr(p, '?');
		const char *end = q ? q : p + strlen(p);
		if (cjc_starts_with(p, "//"))
			p = parse_userinfo(p + 2, end, u);
		u->socket = cjc_xstrndup(p, (size_t)(end - p));
		return *u->socket && (!q || (cjc_starts_with(q, "?db=") && !parse_db(q + 4, &u->db)))
			       ? 0 : -1;
	}
	const char *p = url + 8; /* redis:// */
	p = parse_userinfo(p, p + strlen(p), u);
	const char *end = p + strcspn(p, "/");
	const char *colon = memchr(p, ':', (size_t)(end - p));
	u->host = cjc_xstrndup(p, (size_t)((colon ? colon : end) - p));
	if (colon) {
		char *port = cjc_xstrndup(colon + 1, (size_t)(end - colon - 1));
		char *e;
		long v = strtol(port, &e, 10);
		int bad = !*port || *e || v <= 0 || v > 65535;
		free(port);
		if (bad)
			return -1;
		u->port = (int)v;
	}
	if (*end == '/' && end[1] && parse_db(end + 1, &u->db))
		return -1;
	return *u->host ? 0 : -1;
}

static struct timeval timeval_ms(long ms)
{
	return (struct timeval){ ms / 1000, (ms % 1000) * 1000 };
}

/* The result of a failed call on c, with its message. */
static int io_failure(redisContext *c, int err, struct cjc_buf *why)
{
	bool timeout = c->err == REDIS_ERR_IO && (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT);
	cjc_buf_addf(why, "%s", timeout ? "timed out" : c->errstr[0] ? c->errstr : "connection lost");
	errno = timeout ? ETIMEDOUT : EIO;
	return timeout ? CJC_REMOTE_TIMEOUT : CJC_REMOTE_ERROR;
}

/* Runs a command (argv form); the reply, or NULL with why and errno set. */
static redisReply *command(redisContext *c, int argc, const char **argv, const size_t *lens,
			   int *result, struct cjc_buf *why)
{
	errno = 0;
	redisReply *reply = api.command_argv(c, argc, argv, lens);
	if (!reply) {
		*result = io_failure(c, errno, why);
		return NULL;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		bool auth = !strncmp(reply->str, "NOAUTH", 6) || !strncmp(reply->str, "WRONGPASS", 9) ||
			    strstr(reply->str, "invalid password") || strstr(reply->str, "invalid username");
		size_t n = strnlen(reply->str, 200);
		while (n && (reply->str[n - 1] == '.' || reply->str[n - 1] == ' '))
			n--;
		cjc_buf_addf(why, "%s%.*s", auth ? "setting: authentication refused: " : "", (int)n, reply->str);
		api.free_reply(reply);
		*result = CJC_REMOTE_ERROR;
		return NULL;
	}
	return reply;
}

static int simple(redisContext *c, int argc, const char **argv, struct cjc_buf *why)
{
	int result = CJC_REMOTE_OK;
	redisReply *reply = command(c, argc, argv, NULL, &result, why);
	api.free_reply(reply);
	return result;
}

static int authenticate(redisContext *c, const struct redis_url *u, struct cjc_buf *why)
{
	char db[16];
	snprintf(db, sizeof db, "%d", u->db);
	if (u->password) {
		const char *auth[] = { "AUTH", u->user ? u->user : u->password, u->password };
		if (simple(c, u->user ? 3 : 2, auth, why))
			return -1;
	}
	const char *select[] = { "SELECT", db };
	return u->db && simple(c, 2, select, why) ? -1 : 0;
}

static struct cjc_remote_backend *redis_open(const struct cjc_remote_url *url, struct cjc_buf *why)
{
	pthread_once(&once, load);
	if (load_error) {
		cjc_buf_addf(why, "setting: %s", load_error);
		errno = ENOSYS;
		return NULL;
	}
	struct redis_url u;
	if (parse_url(url->url, &u)) {
		cjc_buf_addf(why, "setting: malformed Redis URL %s", url->shown);
		url_release(&u);
		errno = EINVAL;
		return NULL;
	}
	struct timeval connect = timeval_ms(url->connect_ms), op = timeval_ms(url->operation_ms);
	errno = 0;
	redisContext *c = u.socket ? api.connect_unix(u.socket, connect)
				   : api.connect(u.host, u.port, connect);
	int rc = !c ? -1 : c->err ? (io_failure(c, errno, why), -1) : 0;
	if (!rc && api.set_timeout(c, op) != REDIS_OK)
		rc = -1, cjc_buf_adds(why, "cannot set the operation timeout");
	if (!rc && authenticate(c, &u, why))
		rc = -1;
	url_release(&u);
	if (rc) {
		int e = errno == ETIMEDOUT ? ETIMEDOUT : EIO;
		if (c)
			api.free_context(c);
		errno = e;
		return NULL;
	}
	struct cjc_remote_backend *b = cjc_xcalloc(1, sizeof *b);
	b->c = c;
	return b;
}

static char *key_of(const char *name)
{
	return cjc_xasprintf("cjc/%s", name);
}

static int redis_get(struct cjc_remote_backend *b, const char *name, size_t max, struct cjc_buf *out,
		     struct cjc_buf *why)
{
	char *key = key_of(name), end[24];
	snprintf(end, sizeof end, "%zu", max);
	const char *argv[] = { "GETRANGE", key, "0", end };
	int result = CJC_REMOTE_OK;
	redisReply *reply = command(b->c, 4, argv, NULL, &result, why);
	free(key);
	if (!reply)
		return result;
	if (reply->type != REDIS_REPLY_STRING)
		result = CJC_REMOTE_ERROR, cjc_buf_adds(why, "unexpected reply to GETRANGE");
	else if (!reply->len)
		result = CJC_REMOTE_ABSENT;
	else if ((size_t)reply->len > max)
		result = CJC_REMOTE_ERROR, cjc_buf_addf(why, "value %s is larger than %zu bytes", name, max);
	else
		cjc_buf_add(out, reply->str, reply->len);
	api.free_reply(reply);
	return result;
}

static int redis_put(struct cjc_remote_backend *b, const char *name, const void *p, size_t n,
		     bool only_if_absent, struct cjc_buf *why)
{
	char *key = key_of(name);
	const char *argv[] = { "SET", key, p, "NX" };
	size_t lens[] = { 3, strlen(key), n, 2 };
	int result = CJC_REMOTE_OK;
	redisReply *reply = command(b->c, only_if_absent ? 4 : 3, argv, lens, &result, why);
	free(key);
	api.free_reply(reply);
	return result; /* a nil reply: the value was there already */
}

static int redis_exists(struct cjc_remote_backend *b, const char *name, struct cjc_buf *why)
{
	char *key = key_of(name);
	const char *argv[] = { "EXISTS", key };
	int result = CJC_REMOTE_OK;
	redisReply *reply = command(b->c, 2, argv, NULL, &result, why);
	free(key);
	if (reply && reply->type != REDIS_REPLY_INTEGER)
		result = CJC_REMOTE_ERROR, cjc_buf_adds(why, "unexpected reply to EXISTS");
	else if (reply)
		result = reply->integer ? CJC_REMOTE_OK : CJC_REMOTE_ABSENT;
	api.free_reply(reply);
	return result;
}

static void redis_close(struct cjc_remote_backend *b)
{
	api.free_context(b->c);
	free(b);
}

const struct cjc_remote_ops cjc_remote_redis_ops = {
	redis_open, redis_get, redis_put, redis_exists, redis_close,
};
