/*
 * helper.c - the client side of the HTTP helper (helper.h): where helpers
 * live, what a store's helper is called, starting one, and the helped
 * backend.  The helper's own loop is src/tool/helper_cmd.c.
 */
#include "remote/helper.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/hash.h"
#include "base/helperproc.h"
#include "base/log.h"
#include "base/run.h"

extern char **environ;

static bool allowed;

void cjc_helper_allow(void)
{
	allowed = true;
}

/* --- where and what ---------------------------------------------------- */

/* What libcurl and the libraries it loads read from the environment: a
 * helper started with other values is another helper, and the helper's
 * environment holds these and no other (helper.h). */
static const char *const curl_environment[] = {
	"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "CURL_SSL_BACKEND", "SSLKEYLOGFILE",
	"OPENSSL_CONF", "OPENSSL_MODULES", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN",
	"LD_LIBRARY_PATH", "LD_PRELOAD",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
};
#define KEY_LEN CJC_HELPERPROC_KEY_LEN
#define NCURL_ENVIRONMENT (sizeof curl_environment / sizeof *curl_environment)

static void add_field(struct cjc_hash *h, const char *s)
{
	s = s ? s : "";
	cjc_hash_update(h, s, strlen(s) + 1);
}

/* A file's stamp (a CA bundle replaced makes another helper). */
static void add_stamp(struct cjc_hash *h, const char *path)
{
	struct stat st = { 0 };
	char line[96];
	if (path)
		(void)stat(path, &st);
	snprintf(line, sizeof line, "%llu %lld %lld", (unsigned long long)st.st_ino,
		 (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, (long long)st.st_size);
	add_field(h, line);
}

/* What a link names (a namespace of this process's). */
static void add_link(struct cjc_hash *h, const char *path)
{
	char target[128];
	ssize_t n = readlink(path, target, sizeof target - 1);
	target[n > 0 ? n : 0] = 0;
	add_field(h, target);
}

/* A bearer token's bytes (a rotated token makes another helper; the
 * same token rewritten does not). */
static void add_contents(struct cjc_hash *h, const char *path)
{
	struct cjc_buf text = CJC_BUF_INIT;
	int fd = path ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
	if (!cjc_read_regular_and_close(fd, 8192, &text))
		cjc_hash_update(h, text.data, text.len);
	add_field(h, text.len ? "" : "(none)");
	cjc_buf_release_secret(&text);
}

void cjc_helper_name(const struct cjc_remote_url *u, const unsigned char *key, char *name)
{
	struct cjc_hash h;
	char line[64];
	cjc_hash_init(&h);
	cjc_hash_update(&h, key, KEY_LEN); /* unguessable: the name shows in /proc/net/unix */
	add_field(&h, "cudajitcache helper " CJC_VERSION);
	snprintf(line, sizeof line, "%u %ld", CJC_HELPER_VERSION, u->connect_ms);
	add_field(&h, line);
	add_field(&h, u->url);
	add_field(&h, u->bearer_token_file);
	add_contents(&h, u->bearer_token_file);
	add_field(&h, u->credentials_file);
	add_contents(&h, u->credentials_file);
	add_field(&h, u->ca_file);
	const char *bundles[] = { u->ca_file, getenv("SSL_CERT_FILE"), getenv("CURL_CA_BUNDLE"),
				  getenv("SSL_CERT_DIR"), "/etc/ssl/certs/ca-certificates.crt",
				  "/etc/ssl/certs", "/etc/pki/tls/certs/ca-bundle.crt",
				  "/var/lib/ca-certificates/ca-bundle.pem" }; /* Debian, Fedora, SUSE */
	for (size_t i = 0; i < sizeof bundles / sizeof *bundles; i++)
		add_stamp(&h, bundles[i]);
	add_stamp(&h, "/proc/self/exe"); /* a cjc rebuilt or reinstalled: its own helper */
	add_link(&h, "/proc/self/ns/net"); /* another network: other servers */
	for (size_t i = 0; i < NCURL_ENVIRONMENT; i++) {
		add_field(&h, curl_environment[i]);
		add_field(&h, getenv(curl_environment[i]));
	}
	cjc_hash_final_hex(&h, name);
}

/* The settings' URL (credentials included) wiped in place: jansson frees
 * its strings without wiping them. */
static void wipe_url(json_t *doc)
{
	json_t *url = json_object_get(doc, "url");
	if (json_is_string(url))
		explicit_bzero((char *)json_string_value(url), json_string_length(url));
}

void cjc_helper_encode_settings(const struct cjc_remote_url *u, const char *name,
				struct cjc_buf *out)
{
	json_t *doc = json_pack("{s:s, s:s, s:s, s:s*, s:s*, s:s*, s:I, s:I}", "name", name, "url",
				u->url, "shown", u->shown, "bearer_token_file", u->bearer_token_file,
				"credentials_file", u->credentials_file, "ca_file", u->ca_file,
				"connect_ms", (json_int_t)u->connect_ms, "helper_idle_ms",
				(json_int_t)u->helper_idle_ms);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (text)
		cjc_buf_adds(out, text);
	cjc_free_secret(text);
	wipe_url(doc);
	json_decref(doc);
}

int cjc_helper_decode_settings(const char *text, size_t len, struct cjc_remote_url *u,
				char *name)
{
	json_t *doc = json_loadb(text, len, 0, NULL);
	const char *url = NULL, *shown = NULL, *token = NULL, *creds = NULL, *ca = NULL, *n = NULL;
	json_int_t connect_ms = 0, idle_ms = 0;
	int rc = !doc || json_unpack(doc, "{s:s, s:s, s:s, s?:s, s?:s, s?:s, s:I, s:I}", "name", &n,
				     "url", &url, "shown", &shown, "bearer_token_file", &token,
				     "credentials_file", &creds, "ca_file", &ca, "connect_ms",
				     &connect_ms, "helper_idle_ms", &idle_ms) ||
		 connect_ms <= 0 || idle_ms <= 0 || strlen(n) != CJC_HEX_LEN ||
		 strspn(n, "0123456789abcdef") != CJC_HEX_LEN ? -1 : 0;
	if (!rc) {
		memcpy(name, n, CJC_HEX_LEN + 1);
		memset(u, 0, sizeof *u);
		u->url = cjc_xstrdup(url);
		u->shown = cjc_xstrdup(shown);
		u->bearer_token_file = token ? cjc_xstrdup(token) : NULL;
		u->credentials_file = creds ? cjc_xstrdup(creds) : NULL;
		u->ca_file = ca ? cjc_xstrdup(ca) : NULL;
		u->connect_ms = (long)connect_ms;
		u->helper_idle_ms = (long)idle_ms;
		u->helper = true;
	}
	wipe_url(doc);
	json_decref(doc);
	return rc;
}

/* --- starting one ------------------------------------------------------- */

/* The helper's environment: what decides its requests (curl_environment,
 * part of its name) and where it lives, nothing else of the build's. */
static char **helper_environment(void)
{
	char **env = cjc_xcalloc(NCURL_ENVIRONMENT + 2, sizeof *env);
	size_t kept = 0;
	for (size_t n = 0; environ[n]; n++) {
		size_t len = strcspn(environ[n], "=");
		bool keep = len == strlen("XDG_RUNTIME_DIR") && !strncmp(environ[n], "XDG_RUNTIME_DIR", len);
		for (size_t i = 0; i < NCURL_ENVIRONMENT && !keep; i++)
			keep = len == strlen(curl_environment[i]) &&
			       !strncmp(environ[n], curl_environment[i], len);
		if (keep && kept < NCURL_ENVIRONMENT + 1)
			env[kept++] = environ[n];
	}
	return env;
}

/* `cjc remote helper`, in a session of its own, with nothing of this
 * process's open but the pipe it reads its settings from. */
static int spawn_helper(int settings_fd, pid_t *pid)
{
	char *argv[] = { "cjc", "remote", "helper", NULL };
	char **env = helper_environment();
	int rc = cjc_helperproc_spawn(argv, env, settings_fd, pid);
	free(env);
	return rc;
}

/* --- talking to one ------------------------------------------------------ */

/* The deadlines below are cjc_now_ms()'s. */
static int read_exact(int fd, void *p, size_t n, int64_t deadline_ms)
{
	int64_t left_ms = deadline_ms - cjc_now_ms();
	return cjc_helperproc_read(fd, p, n, cjc_helperproc_now_us() + left_ms * 1000);
}

static int send_all(int fd, const void *p, size_t n, int64_t deadline_ms)
{
	int64_t left_ms = deadline_ms - cjc_now_ms();
	return cjc_helperproc_send(fd, p, n, cjc_helperproc_now_us() + left_ms * 1000);
}

/* Starts the store's helper, once a process, when none holds its lock.
 * The settings go on a socket (MSG_NOSIGNAL: a helper that died at once
 * costs no SIGPIPE here). */
static void start_helper(const struct cjc_remote_url *u, int dir, const char *name)
{
	static bool started;
	struct cjc_buf settings = CJC_BUF_INIT;
	int p[2];
	cjc_helper_encode_settings(u, name, &settings);
	if (started || !settings.len || !cjc_helperproc_lock_free(dir, name) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p)) {
		cjc_buf_release_secret(&settings);
		return;
	}
	started = true;
	pid_t pid;
	int rc = spawn_helper(p[0], &pid);
	close(p[0]);
	if (!rc && send_all(p[1], settings.data, settings.len, cjc_now_ms() + 1000))
		rc = errno;
	close(p[1]);
	cjc_buf_release_secret(&settings);
	if (rc)
		cjc_log("cannot start the helper of %s: %s", u->shown, strerror(rc));
	else
		cjc_log("started the helper of %s (pid %d, %s.sock)", u->shown, (int)pid, name);
}

/* path made absolute (the helper runs in /), or NULL. */
static char *absolute(const char *path)
{
	char cwd[PATH_MAX];
	if (!path || path[0] == '/')
		return path ? cjc_xstrdup(path) : NULL;
	return getcwd(cwd, sizeof cwd) ? cjc_path_join(cwd, path) : cjc_xstrdup(path);
}

/* A connection to the helper named name in dir that greeted us, or -1
 * (one is started when none lives).  The socket does not block:
 * connecting to a helper whose queue is full (a stopped helper) fails at
 * once. */
static int greeted_by(const struct cjc_remote_url *u, int dir, const char *name)
{
	int fd = cjc_helperproc_connect(dir, name, SOCK_STREAM);
	bool up = fd >= 0, busy = !up && (errno == EAGAIN || errno == EPERM);
	char greeting[8];
	long left = cjc_remote_time_left(u), wait_ms = left < u->connect_ms ? left : u->connect_ms;
	uint32_t version = CJC_HELPER_VERSION;
	bool greeted = up && !read_exact(fd, greeting, sizeof greeting, cjc_now_ms() + wait_ms) &&
		       !memcmp(greeting, "CJCH", 4) && !memcmp(greeting + 4, &version, 4);
	if (!up && !busy)
		start_helper(u, dir, name);
	else if (!greeted)
		cjc_log("the helper of %s did not greet; asking the store itself", u->shown);
	if (!greeted && fd >= 0)
		close(fd), fd = -1;
	return fd;
}

/* A connection to the store's helper (greeted_by), or -1. */
static int reach_helper(const struct cjc_remote_url *given)
{
	struct cjc_buf news = CJC_BUF_INIT;
	int dir = cjc_user_run_dir_told(&news), fd = -1;
	unsigned char key[KEY_LEN];
	if (news.len)
		cjc_log("%s", news.data);
	cjc_buf_release(&news);
	if (dir < 0)
		return -1;
	if (!cjc_helperproc_key(dir, key)) {
		struct cjc_remote_url u = *given;
		char name[CJC_HEX_LEN + 1];
		u.bearer_token_file = absolute(given->bearer_token_file);
		u.credentials_file = absolute(given->credentials_file);
		u.ca_file = absolute(given->ca_file);
		cjc_helper_name(&u, key, name);
		fd = greeted_by(&u, dir, name);
		free(u.bearer_token_file);
		free(u.credentials_file);
		free(u.ca_file);
	}
	close(dir);
	return fd;
}

int cjc_helper_get(int fd, const struct cjc_remote_url *u, const char *name, size_t max,
		   struct cjc_buf *out, struct cjc_buf *why)
{
	long left = cjc_remote_time_left(u);
	size_t nlen = strlen(name);
	if (left <= 0 || nlen > CJC_HELPER_MAX_NAME)
		return CJC_HELPER_BROKEN;
	int64_t deadline = cjc_now_ms() + left;
	uint16_t n16 = (uint16_t)nlen;
	uint64_t max64 = max;
	uint32_t left32 = left > (long)UINT32_MAX ? UINT32_MAX : (uint32_t)left;
	struct cjc_buf req = CJC_BUF_INIT;
	cjc_buf_add(&req, "g", 1);
	cjc_buf_add(&req, &n16, sizeof n16);
	cjc_buf_add(&req, name, nlen);
	cjc_buf_add(&req, &max64, sizeof max64);
	cjc_buf_add(&req, &left32, sizeof left32);
	int rc = send_all(fd, req.data, req.len, deadline);
	cjc_buf_release(&req);
	unsigned char head[9];
	if (!rc)
		rc = read_exact(fd, head, sizeof head, deadline);
	if (rc) {
		if (errno != ETIMEDOUT)
			return CJC_HELPER_BROKEN;
		cjc_buf_adds(why, "timed out waiting for the store's helper");
		return CJC_REMOTE_TIMEOUT;
	}
	uint64_t len;
	memcpy(&len, head + 1, sizeof len);
	int result = head[0];
	bool message = result == CJC_REMOTE_ERROR || result == CJC_REMOTE_TIMEOUT;
	if (!(result == CJC_REMOTE_OK && len <= max) && !(result == CJC_REMOTE_ABSENT && !len) &&
	    !(message && len <= CJC_HELPER_MAX_MESSAGE))
		return CJC_HELPER_BROKEN;
	struct cjc_buf *into = message ? why : out;
	size_t at = into->len;
	cjc_buf_grow(into, (size_t)len);
	if (read_exact(fd, into->data + at, (size_t)len, deadline))
		return errno == ETIMEDOUT ? (cjc_buf_adds(why, "timed out waiting for the store's helper"),
					     CJC_REMOTE_TIMEOUT) : CJC_HELPER_BROKEN;
	into->len = at + (size_t)len;
	into->data[into->len] = 0;
	return result;
}

/* --- the helped backend ---------------------------------------------------- */

const struct cjc_remote_ops *cjc_helper_backend_ops(const char *url)
{
#ifdef CJC_HAVE_REDIS
	if (cjc_starts_with(url, "redis://") || cjc_starts_with(url, "redis+unix:"))
		return &cjc_remote_redis_ops;
#endif
	return cjc_starts_with(url, "oci://") || cjc_starts_with(url, "oci+http://")
		       ? &cjc_remote_oci_ops
		       : &cjc_remote_http_ops;
}

struct cjc_remote_backend {
	const struct cjc_remote_url *u;
	const struct cjc_remote_ops *ops; /* the store's backend (cjc_helper_backend_ops) */
	struct cjc_remote_backend *in; /* that backend in this process, once needed */
	int fd;                        /* to the helper, or -1 */
	bool tried;                    /* whether the helper was asked for */
};

static struct cjc_remote_backend *helped_open(const struct cjc_remote_url *u, struct cjc_buf *why)
{
	(void)why;
	struct cjc_remote_backend *b = cjc_xcalloc(1, sizeof *b);
	b->u = u;
	b->ops = cjc_helper_backend_ops(u->url);
	b->fd = -1;
	return b;
}

/* The http backend in this process: -1 (counted as the store's failure)
 * when it cannot be opened. */
static int inner(struct cjc_remote_backend *b, struct cjc_buf *why)
{
	if (!b->in && !(b->in = b->ops->open(b->u, why)))
		return errno == ETIMEDOUT ? CJC_REMOTE_TIMEOUT : CJC_REMOTE_ERROR;
	return 0;
}

/* Through the helper, unless this process has written to the store: its
 * own connection is open then, and its backend knows what it wrote (the
 * OCI store reads a direct-mode manifest to merge it, not for its entry). */
static int helped_get(struct cjc_remote_backend *b, const char *name, size_t max,
		      struct cjc_buf *out, struct cjc_buf *why)
{
	if (b->in)
		return b->ops->get(b->in, name, max, out, why);
	if (allowed && !b->tried) {
		b->tried = true;
		if ((b->fd = reach_helper(b->u)) >= 0)
			cjc_log("asking the helper of %s", b->u->shown);
	}
	if (b->fd >= 0) {
		int rc = cjc_helper_get(b->fd, b->u, name, max, out, why);
		if (rc != CJC_HELPER_BROKEN && rc != CJC_REMOTE_TIMEOUT)
			return rc;
		close(b->fd);
		b->fd = -1;
		if (rc == CJC_REMOTE_TIMEOUT)
			return rc;
		cjc_log("the helper of %s failed; asking the store itself", b->u->shown);
		cjc_buf_reset(out);
		cjc_buf_reset(why);
	}
	int rc = inner(b, why);
	return rc ? rc : b->ops->get(b->in, name, max, out, why);
}

static int helped_put(struct cjc_remote_backend *b, const char *name, const void *p, size_t n,
		      bool only_if_absent, struct cjc_buf *why)
{
	int rc = inner(b, why);
	return rc ? rc : b->ops->put(b->in, name, p, n, only_if_absent, why);
}

static int helped_exists(struct cjc_remote_backend *b, const char *name, struct cjc_buf *why)
{
	int rc = inner(b, why);
	return rc ? rc : b->ops->exists(b->in, name, why);
}

static int helped_lease(struct cjc_remote_backend *b, const char *name, const char *value,
			long ttl_ms, struct cjc_buf *why)
{
	int rc = inner(b, why);
	return rc ? rc : b->ops->lease(b->in, name, value, ttl_ms, why);
}

static int helped_unlease(struct cjc_remote_backend *b, const char *name, const char *value,
			  struct cjc_buf *why)
{
	int rc = inner(b, why);
	return rc ? rc : b->ops->unlease(b->in, name, value, why);
}

static void helped_close(struct cjc_remote_backend *b)
{
	if (b->fd >= 0)
		close(b->fd);
	if (b->in)
		b->ops->close(b->in);
	free(b);
}

const struct cjc_remote_ops cjc_remote_helped_ops = {
	helped_open, helped_get, helped_put, helped_exists, helped_close,
	NULL,        NULL,       false, /* combined values: as the store's own backend says
					   (remote.c) */
};

const struct cjc_remote_ops cjc_remote_helped_leasing_ops = {
	helped_open,  helped_get,   helped_put,     helped_exists,
	helped_close, helped_lease, helped_unlease, false, /* as above */
};
