/*
 * remote_redis.c - the Redis backend (remote.h), through hiredis.
 *
 *     redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
 *     redis+unix:/PATH   redis+unix://[[USER]:PASSWORD@]/PATH[?db=N]
 *
 * Names are keys prefixed "cjc/".  get is GETRANGE up to the bound, so the
 * server never sends more than we asked for (an absent key and an empty
 * value both read as absent; no valid value is empty); put-if-absent is
 * SET NX, exists is EXISTS; a lease is SET NX PX (remote.h).  The
 * connection waits at most connect_ms, and each request ends at the
 * deadline remote.c set (the store's
 * operation-timeout, shared by all requests of a compile): we read the
 * reply ourselves, waiting with poll() until the deadline, and hand hiredis
 * only what we read, so a server that drips cannot hold us past it.  A
 * reply is bounded before hiredis keeps any of it: its first byte must be
 * one of the types we expect (no arrays), a bulk's length prefix must be
 * within the bound, and so must all it sends.  GETRANGE's value, once its
 * length line has come whole in the first read, is read straight into the
 * caller's buffer, sized once, and must end in "\r\n" (a large value is
 * then copied once, not through hiredis's buffer and reply).  AUTH and
 * SELECT are not round trips of their own: they are queued at open and
 * go out in one write with the first request (a remote hit is then the
 * connection and one round trip per GETRANGE).  A context that failed or
 * timed out is not used again.
 *
 * hiredis is loaded with dlopen when a store first needs it (as libcurl in
 * remote_http.c), so a cjc process that uses no Redis store never loads it.
 */
#include "remote/remote_backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/dl.h"

/* What a reply other than GETRANGE's may hold (an integer, OK, an error). */
#define SHORT_REPLY 4096
/* A bulk reply's framing around its bound: "$<digits>\r\n" and "\r\n". */
#define FRAMING 32

struct cjc_remote_backend {
	redisContext *c;
	const struct cjc_remote_url *u; /* its deadline, read at each request */
	int owed; /* replies to AUTH and SELECT, queued at open, sent with the first request */
};

/* The hiredis functions used, from the library loaded at run time. */
struct redis_api {
	redisContext *(*connect)(const char *ip, int port, const struct timeval tv);
	redisContext *(*connect_unix)(const char *path, const struct timeval tv);
	int (*set_timeout)(redisContext *c, const struct timeval tv);
	int (*append_argv)(redisContext *c, int argc, const char **argv, const size_t *lens);
	int (*buffer_write)(redisContext *c, int *done);
	int (*reader_feed)(redisReader *r, const char *buf, size_t len);
	int (*reader_get)(redisReader *r, void **reply);
	void (*free_reply)(void *reply);
	void (*free_context)(redisContext *c);
};
static struct redis_api api;
static const char *load_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define FN(field, name) CJC_DL_SYMBOL(struct redis_api, field, name)
static const struct cjc_dl_symbol redis_symbols[] = {
	FN(connect, "redisConnectWithTimeout"), FN(connect_unix, "redisConnectUnixWithTimeout"),
	FN(set_timeout, "redisSetTimeout"), FN(append_argv, "redisAppendCommandArgv"),
	FN(buffer_write, "redisBufferWrite"), FN(reader_feed, "redisReaderFeed"),
	FN(reader_get, "redisReaderGetReply"), FN(free_reply, "freeReplyObject"),
	FN(free_context, "redisFree"),
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
	cjc_free_secret(u->password);
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

static int timed_out(struct cjc_buf *why)
{
	cjc_buf_adds(why, "timed out");
	errno = ETIMEDOUT;
	return CJC_REMOTE_TIMEOUT;
}

static int bad_reply(struct cjc_buf *why, const char *text)
{
	cjc_buf_adds(why, text);
	errno = EBADMSG;
	return CJC_REMOTE_ERROR;
}

/* Sends what is queued on c, each write waiting until the deadline. */
static int send_all(redisContext *c, int64_t deadline, struct cjc_buf *why)
{
	int done = 0;
	while (!done) {
		int64_t left = deadline - cjc_now_ms();
		if (left <= 0)
			return timed_out(why);
		errno = 0;
		if (api.set_timeout(c, timeval_ms((long)left)) != REDIS_OK ||
		    api.buffer_write(c, &done) != REDIS_OK)
			return io_failure(c, errno, why);
	}
	return CJC_REMOTE_OK;
}

/* A reply's first bytes (head, n of them): 0 while it may still be within
 * max, -1 when it cannot be. */
static int check_head(const char *head, size_t n, size_t max)
{
	if (!n)
		return 0;
	if (!strchr("$:+-", head[0]))
		return -1; /* an array, or not a reply: nothing we asked for */
	const char *eol = memchr(head, '\r', n);
	if (head[0] != '$' || !eol)
		return head[0] == '$' && n >= FRAMING ? -1 : 0;
	char *end;
	long long len = strtoll(head + 1, &end, 10);
	return end != eol || len < -1 || (unsigned long long)(len < 0 ? 0 : len) > max ? -1 : 0;
}

/* Waits until the deadline for bytes from c and reads up to cap of them
 * into dst (recv's flags: MSG_PEEK leaves them there): CJC_REMOTE_OK with
 * *n > 0, or a result with why. */
static int recv_some(redisContext *c, int64_t deadline, char *dst, size_t cap, int flags, size_t *n,
		     struct cjc_buf *why)
{
	for (;;) {
		int64_t left = deadline - cjc_now_ms();
		if (left <= 0)
			return timed_out(why);
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int ready = poll(&p, 1, (int)left);
		ssize_t got = ready > 0 ? recv(c->fd, dst, cap, flags) : 0;
		if (!ready || ((ready < 0 || got < 0) && errno == EINTR))
			continue;
		if (ready < 0 || got <= 0) {
			cjc_buf_adds(why, got < 0 || ready < 0 ? strerror(errno) : "connection lost");
			errno = EIO;
			return CJC_REMOTE_ERROR;
		}
		*n = (size_t)got;
		return CJC_REMOTE_OK;
	}
}

static int read_some(redisContext *c, int64_t deadline, char *dst, size_t cap, size_t *n,
		     struct cjc_buf *why)
{
	return recv_some(c, deadline, dst, cap, 0, n, why);
}

/* One line from c, up to its "\r\n" and not a byte further (the next
 * reply stays on the socket for receive), within cap bytes: its length
 * without the "\r\n" in *len. */
static int read_line(redisContext *c, int64_t deadline, char *line, size_t cap, size_t *len,
		     struct cjc_buf *why)
{
	size_t have = 0;
	for (char *nl = NULL; !nl;) {
		size_t n;
		if (have == cap)
			return bad_reply(why, "a reply larger than asked for, or of another kind");
		int rc = recv_some(c, deadline, line + have, cap - have, MSG_PEEK, &n, why);
		if (rc)
			return rc;
		nl = memchr(line + have, '\n', n);
		size_t take = nl ? (size_t)(nl - (line + have)) + 1 : n;
		if (recv(c->fd, line + have, take, 0) != (ssize_t)take)
			return bad_reply(why, "connection lost");
		have += take;
	}
	if (have < 2 || line[have - 2] != '\r')
		return bad_reply(why, "a malformed reply");
	*len = have - 2;
	return CJC_REMOTE_OK;
}

/* The length of the bulk reply whose first n bytes are at p, when its
 * length line ends within them (*line: that line's size); else -1. */
static long long bulk_length(const char *p, size_t n, size_t *line)
{
	const char *eol = n && p[0] == '$' ? memchr(p, '\r', n) : NULL;
	if (!eol || (size_t)(eol - p) + 2 > n || eol[1] != '\n')
		return -1;
	*line = (size_t)(eol - p) + 2;
	return strtoll(p + 1, NULL, 10); /* its digits were checked (check_head) */
}

/* A bulk reply's value (len bytes, within the bound), whose length line and
 * first bytes came in buf (n bytes, the line's size line): the rest is read
 * straight into out, up to the "\r\n" that ends it, so a large value is
 * copied once, not three times (hiredis's buffer, its reply, ours). */
static int receive_value(redisContext *c, const char *buf, size_t n, size_t line, size_t len,
			 int64_t deadline, struct cjc_buf *out, struct cjc_buf *why)
{
	size_t want = len + 2, got = n - line;
	if (got > want)
		return bad_reply(why, "a reply larger than asked for, or of another kind");
	cjc_buf_grow(out, want);
	char *dst = out->data + out->len;
	memcpy(dst, buf + line, got);
	int rc = CJC_REMOTE_OK;
	while (!rc && got < want) {
		size_t more;
		rc = read_some(c, deadline, dst + got, want - got, &more, why);
		got += rc ? 0 : more;
	}
	if (!rc && memcmp(dst + len, "\r\n", 2))
		rc = bad_reply(why, "a malformed reply");
	if (!rc)
		out->len += len;
	out->data[out->len] = '\0'; /* what was there before, on a failure */
	return rc;
}

/* Reads one reply, up to the deadline and max bytes (the head comment):
 * CJC_REMOTE_OK with *reply, or a result with why.  With value, a bulk
 * reply whose length line comes whole in the first read is read into value
 * instead (receive_value), and *reply is NULL. */
static int receive(redisContext *c, size_t max, int64_t deadline, struct cjc_buf *value,
		   redisReply **reply, struct cjc_buf *why)
{
	char buf[16384], head[FRAMING];
	size_t seen = 0, nhead = 0, line;
	void *got = NULL;
	*reply = NULL;
	while (!got) {
		size_t n;
		int rc = read_some(c, deadline, buf, sizeof buf, &n, why);
		if (rc)
			return rc;
		size_t take = n < FRAMING - nhead ? n : FRAMING - nhead;
		memcpy(head + nhead, buf, take);
		nhead += take;
		seen += n;
		if (check_head(head, nhead, max) || seen > max + FRAMING)
			return bad_reply(why, "a reply larger than asked for, or of another kind");
		long long len = value && seen == n ? bulk_length(buf, n, &line) : -1;
		if (len > 0)
			return receive_value(c, buf, n, line, (size_t)len, deadline, value, why);
		if (api.reader_feed(c->reader, buf, n) != REDIS_OK ||
		    api.reader_get(c->reader, &got) != REDIS_OK)
			return bad_reply(why, "a malformed reply");
	}
	*reply = got;
	return CJC_REMOTE_OK;
}

/* An error reply's text (str, NUL-terminated): CJC_REMOTE_ERROR with the
 * server's words in why. */
static int refused(const char *str, struct cjc_buf *why)
{
	bool auth = !strncmp(str, "NOAUTH", 6) || !strncmp(str, "WRONGPASS", 9) ||
		    strstr(str, "invalid password") || strstr(str, "invalid username");
	size_t n = strnlen(str, 200);
	while (n && (str[n - 1] == '.' || str[n - 1] == ' '))
		n--;
	/* the server's words: escaped here, whoever prints them (SPEC 9) */
	cjc_buf_adds(why, auth ? "setting: authentication refused: " : "");
	cjc_buf_add_printable(why, str, n);
	return CJC_REMOTE_ERROR;
}

/* The replies owed to the commands queued at open (AUTH, SELECT), which
 * went out with this request's: each one line, "+..." (an error, "-...",
 * fails the request).  Read line by line, never past it, so that the
 * request's own reply is left whole for receive. */
static int settle_owed(struct cjc_remote_backend *b, int64_t deadline, struct cjc_buf *why)
{
	int rc = CJC_REMOTE_OK;
	while (!rc && b->owed) {
		char line[SHORT_REPLY + 1];
		size_t len = 0;
		b->owed--;
		rc = read_line(b->c, deadline, line, SHORT_REPLY, &len, why);
		line[rc ? 0 : len] = '\0';
		if (!rc && line[0] == '-')
			rc = refused(line + 1, why);
		else if (!rc && line[0] != '+')
			rc = bad_reply(why, "a reply of another kind than asked for");
	}
	return rc;
}

/* Runs a command (argv form) whose reply may hold max bytes; the reply, or
 * NULL with why and errno set, or NULL with *result CJC_REMOTE_OK when a
 * bulk reply went into value (receive). */
static redisReply *command(struct cjc_remote_backend *b, int argc, const char **argv,
			   const size_t *lens, size_t max, struct cjc_buf *value, int *result,
			   struct cjc_buf *why)
{
	int64_t deadline = cjc_now_ms() + cjc_remote_time_left(b->u);
	redisReply *reply = NULL;
	errno = 0;
	if (api.append_argv(b->c, argc, argv, lens) != REDIS_OK)
		*result = io_failure(b->c, errno, why);
	else if (!(*result = send_all(b->c, deadline, why)) &&
		 !(*result = settle_owed(b, deadline, why)))
		*result = receive(b->c, max, deadline, value, &reply, why);
	if (*result || !reply)
		return NULL;
	if (reply->type == REDIS_REPLY_ERROR) {
		*result = refused(reply->str, why);
		api.free_reply(reply);
		return NULL;
	}
	return reply;
}

/* Queues a command whose reply is read after the next request is sent. */
static int queue(struct cjc_remote_backend *b, int argc, const char **argv, struct cjc_buf *why)
{
	errno = 0;
	if (api.append_argv(b->c, argc, argv, NULL) != REDIS_OK)
		return io_failure(b->c, errno, why);
	b->owed++;
	return CJC_REMOTE_OK;
}

/* AUTH and SELECT, queued: they go out with the first request, in the
 * same write, so a connection costs no round trip of its own for them;
 * their replies are read before that request's (settle_owed), and a
 * refusal fails that request as it would have failed the connection. */
static int authenticate(struct cjc_remote_backend *b, const struct redis_url *u, struct cjc_buf *why)
{
	char db[16];
	snprintf(db, sizeof db, "%d", u->db);
	if (u->password) {
		const char *auth[] = { "AUTH", u->user ? u->user : u->password, u->password };
		if (queue(b, u->user ? 3 : 2, auth, why))
			return -1;
	}
	const char *select[] = { "SELECT", db };
	return u->db && queue(b, 2, select, why) ? -1 : 0;
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
	long left = cjc_remote_time_left(url);
	struct timeval connect = timeval_ms(left < url->connect_ms ? left : url->connect_ms);
	struct cjc_remote_backend *b = cjc_xcalloc(1, sizeof *b);
	b->u = url;
	errno = 0;
	if (left > 0)
		b->c = u.socket ? api.connect_unix(u.socket, connect) : api.connect(u.host, u.port, connect);
	int rc = left <= 0 ? (timed_out(why), -1)
	       : !b->c	   ? -1
	       : b->c->err ? (io_failure(b->c, errno, why), -1)
			   : authenticate(b, &u, why);
	url_release(&u);
	if (rc) {
		int e = errno == ETIMEDOUT ? ETIMEDOUT : EIO;
		if (b->c)
			api.free_context(b->c);
		free(b);
		errno = e;
		return NULL;
	}
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
	size_t had = out->len;
	/* 0..max: max + 1 bytes */
	redisReply *reply = command(b, 4, argv, NULL, max + 1, out, &result, why);
	free(key);
	if (!reply && !result && out->len - had > max) {
		out->len = had;
		out->data[had] = '\0';
		result = CJC_REMOTE_ERROR, cjc_buf_addf(why, "value %s is larger than %zu bytes", name, max);
	}
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
	redisReply *reply = command(b, only_if_absent ? 4 : 3, argv, lens, SHORT_REPLY, NULL, &result, why);
	free(key);
	api.free_reply(reply);
	return result; /* a nil reply: the value was there already */
}

static int redis_exists(struct cjc_remote_backend *b, const char *name, struct cjc_buf *why)
{
	char *key = key_of(name);
	const char *argv[] = { "EXISTS", key };
	int result = CJC_REMOTE_OK;
	redisReply *reply = command(b, 2, argv, NULL, SHORT_REPLY, NULL, &result, why);
	free(key);
	if (reply && reply->type != REDIS_REPLY_INTEGER)
		result = CJC_REMOTE_ERROR, cjc_buf_adds(why, "unexpected reply to EXISTS");
	else if (reply)
		result = reply->integer ? CJC_REMOTE_OK : CJC_REMOTE_ABSENT;
	api.free_reply(reply);
	return result;
}

/* SET NX PX: "+OK" when taken, nil when the key is there. */
static int redis_lease(struct cjc_remote_backend *b, const char *name, const char *value, long ttl_ms,
		       struct cjc_buf *why)
{
	char *key = key_of(name), px[24];
	snprintf(px, sizeof px, "%ld", ttl_ms);
	const char *argv[] = { "SET", key, value, "NX", "PX", px };
	int result = CJC_REMOTE_OK;
	redisReply *reply = command(b, 6, argv, NULL, SHORT_REPLY, NULL, &result, why);
	free(key);
	if (reply && reply->type == REDIS_REPLY_NIL)
		result = CJC_REMOTE_ABSENT;
	else if (reply && reply->type != REDIS_REPLY_STATUS)
		result = CJC_REMOTE_ERROR, cjc_buf_adds(why, "unexpected reply to SET NX PX");
	api.free_reply(reply);
	return result;
}

/* Only GETRANGE and SET (a writer's ACL: docs/fleet.md): the lease is cut
 * to a millisecond when it still holds value.  Between the two, it may
 * have expired and been taken by another: then that one's is cut short,
 * and at worst a key is compiled twice. */
static int redis_unlease(struct cjc_remote_backend *b, const char *name, const char *value,
			 struct cjc_buf *why)
{
	struct cjc_buf held = CJC_BUF_INIT;
	int result = redis_get(b, name, 255, &held, why);
	if (result == CJC_REMOTE_OK && held.len == strlen(value) && !memcmp(held.data, value, held.len)) {
		char *key = key_of(name);
		const char *argv[] = { "SET", key, value, "XX", "PX", "1" };
		redisReply *reply = command(b, 6, argv, NULL, SHORT_REPLY, NULL, &result, why);
		free(key);
		api.free_reply(reply);
	}
	cjc_buf_release(&held);
	return result == CJC_REMOTE_ABSENT ? CJC_REMOTE_OK : result;
}

static void redis_close(struct cjc_remote_backend *b)
{
	api.free_context(b->c);
	free(b);
}

const struct cjc_remote_ops cjc_remote_redis_ops = {
	redis_open,  redis_get,   redis_put,     redis_exists,
	redis_close, redis_lease, redis_unlease, true, /* combined values */
};
