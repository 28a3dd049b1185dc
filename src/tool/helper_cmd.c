/*
 * helper_cmd.c - `cjc remote helper`: the HTTP helper's own loop
 * (src/lib/remote/helper.h says what it is for and how it is bounded).
 *
 * Started by a compile (helper.c), with its store's settings on stdin.  It
 * takes the store's lock or exits (another serves it), binds <name>.sock in
 * the helpers' directory, and serves each client of its own user on a
 * thread of its own, with libcurl handles (a Redis store's: hiredis
 * contexts) kept between clients (their connections stay open; one that
 * fails is asked again once on a new one).  After the store's helper-idle time with no
 * client it removes its socket and exits; so it does, with no client,
 * once that socket is no longer at its name (its directory removed).
 */
#include "helper_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/helperproc.h"
#include "remote/helper.h"

#ifdef CJC_HAVE_CURL /* else no store can have a helper */

#define SETTINGS_MAX (64 * 1024)
#define CLIENT_IDLE_S 60 /* a client that neither asks nor reads this long is dropped */
#define TRIM_AFTER_MS 2000 /* idle this long, the heap is given back */

static struct cjc_remote_url settings;
static char name[CJC_HEX_LEN + 1]; /* the store's, as the compile that started it named it */
static atomic_int clients;
static _Atomic int64_t last_seen_ms;

/* libcurl handles between clients, each with its own deadline. */
struct handle {
	struct cjc_remote_url u;
	struct cjc_remote_backend *b;
};
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct handle *pool[CJC_HELPER_MAX_CLIENTS];
static size_t npool;

/* A kept handle (*kept), unless fresh or there is none; else a new one,
 * opened by deadline (Redis's connection is made at open). */
static struct handle *take_handle(bool fresh, bool *kept, int64_t deadline, struct cjc_buf *why)
{
	struct handle *h = NULL;
	pthread_mutex_lock(&pool_lock);
	if (npool && !fresh)
		h = pool[--npool];
	pthread_mutex_unlock(&pool_lock);
	*kept = h != NULL;
	if (h)
		return h;
	h = cjc_xcalloc(1, sizeof *h);
	h->u = settings; /* the strings stay settings' */
	h->u.deadline_ms = deadline;
	if (!(h->b = cjc_helper_backend_ops(settings.url)->open(&h->u, why))) {
		free(h);
		return NULL;
	}
	return h;
}

/* A handle whose request failed is closed: its connection's state is unknown. */
static void give_back(struct handle *h, bool keep)
{
	pthread_mutex_lock(&pool_lock);
	if (keep && npool < CJC_HELPER_MAX_CLIENTS)
		pool[npool++] = h, h = NULL;
	pthread_mutex_unlock(&pool_lock);
	if (h) {
		cjc_helper_backend_ops(settings.url)->close(h->b);
		free(h);
	}
}

static int read_full(int fd, void *p, size_t n)
{
	char *at = p;
	while (n) {
		ssize_t got = recv(fd, at, n, 0);
		if (got <= 0 && !(got < 0 && errno == EINTR))
			return -1;
		if (got > 0)
			at += got, n -= (size_t)got;
	}
	return 0;
}

static int send_full(int fd, const void *p, size_t n)
{
	for (size_t at = 0; at < n;) {
		ssize_t sent = send(fd, (const char *)p + at, n - at, MSG_NOSIGNAL);
		if (sent < 0 && errno != EINTR)
			return -1;
		if (sent > 0)
			at += (size_t)sent;
	}
	return 0;
}

static int answer(int fd, int result, const char *p, size_t n)
{
	unsigned char head[9];
	uint64_t len = n;
	head[0] = (unsigned char)result;
	memcpy(head + 1, &len, sizeof len);
	return send_full(fd, head, sizeof head) || send_full(fd, p, n) ? -1 : 0;
}

/* One get through a handle (fresh: a new one), by the client's deadline. */
static int ask(bool fresh, bool *kept, const char *name, size_t max, int64_t deadline,
	       struct cjc_buf *out, struct cjc_buf *why)
{
	struct handle *h = take_handle(fresh, kept, deadline, why);
	if (!h)
		return CJC_REMOTE_ERROR;
	h->u.deadline_ms = deadline;
	int rc = cjc_helper_backend_ops(settings.url)->get(h->b, name, max, out, why);
	give_back(h, rc == CJC_REMOTE_OK || rc == CJC_REMOTE_ABSENT);
	return rc;
}

/* One get: 0 when answered, -1 when the client is gone or malformed.  A
 * kept connection that fails is tried once more on a new one, within the
 * same deadline: a server's idle timeout closes kept connections (Redis's
 * `timeout`), and that is no failure of the store. */
static int serve_get(int fd)
{
	uint16_t nlen;
	uint64_t max;
	uint32_t left_ms;
	char name[CJC_HELPER_MAX_NAME + 1];
	if (read_full(fd, &nlen, sizeof nlen) || !nlen || nlen > CJC_HELPER_MAX_NAME ||
	    read_full(fd, name, nlen) || read_full(fd, &max, sizeof max) ||
	    read_full(fd, &left_ms, sizeof left_ms) || max > CJC_REMOTE_MAX_ARTIFACT + 65536)
		return -1;
	name[nlen] = 0;
	struct cjc_buf out = CJC_BUF_INIT, why = CJC_BUF_INIT;
	int64_t deadline = cjc_now_ms() + left_ms;
	bool kept;
	int rc = ask(false, &kept, name, (size_t)max, deadline, &out, &why);
	/* a kept handle's connection may have been closed while it was kept */
	if (rc == CJC_REMOTE_ERROR && kept) {
		cjc_buf_reset(&out);
		cjc_buf_reset(&why);
		rc = ask(true, &kept, name, (size_t)max, deadline, &out, &why);
	}
	size_t mlen = why.len < CJC_HELPER_MAX_MESSAGE ? why.len : CJC_HELPER_MAX_MESSAGE;
	int sent = rc == CJC_REMOTE_OK ? answer(fd, rc, out.data, out.len)
		   : rc == CJC_REMOTE_ABSENT ? answer(fd, rc, NULL, 0)
					     : answer(fd, rc, why.data ? why.data : "", mlen);
	cjc_buf_release(&out);
	cjc_buf_release(&why);
	return sent;
}

static void *serve_client(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct timeval tv = { CLIENT_IDLE_S, 0 };
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	char greeting[8] = "CJCH";
	uint32_t version = CJC_HELPER_VERSION;
	memcpy(greeting + 4, &version, sizeof version);
	unsigned char op;
	if (send(fd, greeting, sizeof greeting, MSG_NOSIGNAL) == sizeof greeting)
		while (!read_full(fd, &op, 1) && op == 'g' && !serve_get(fd))
			;
	close(fd);
	atomic_store(&last_seen_ms, cjc_now_ms());
	atomic_fetch_sub(&clients, 1);
	return NULL;
}

/* The heap given back, once since the last client (*trimmed_ms: when it
 * last was).  cjc's heap is not trimmed by itself (main.c); not after each
 * client either, whose successor would fault every page of its values in
 * again (twice the helper's CPU time on a heavy OCI hit), but once the
 * compiles have paused. */
static void trim_once(int64_t *trimmed_ms)
{
	if (*trimmed_ms >= atomic_load(&last_seen_ms))
		return;
	malloc_trim(0);
	*trimmed_ms = cjc_now_ms();
}

/* -1 when the helper cannot go on accepting (out of descriptors or
 * memory: the connection would stay queued, and poll would spin). */
static int accept_client(int listener)
{
	int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return errno == EINTR || errno == EAGAIN || errno == ECONNABORTED ? 0 : -1;
	atomic_store(&last_seen_ms, cjc_now_ms());
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (!cjc_helperproc_peer_is_us(fd) || atomic_load(&clients) >= CJC_HELPER_MAX_CLIENTS) {
		close(fd);
	} else {
		atomic_fetch_add(&clients, 1);
		if (pthread_create(&t, &at, serve_client, (void *)(intptr_t)fd)) {
			atomic_fetch_sub(&clients, 1);
			close(fd);
		}
	}
	pthread_attr_destroy(&at);
	return 0;
}

/* The settings from stdin, which is then /dev/null. */
static int read_settings(void)
{
	struct cjc_buf text = CJC_BUF_INIT;
	int rc = cjc_read_fd(0, &text) || text.len > SETTINGS_MAX ? -1 : 0; /* the parent's pipe */
	if (!rc)
		rc = cjc_helper_decode_settings(text.data, text.len, &settings, name);
	cjc_buf_release_secret(&text); /* the store's URL, its password with it */
	int null = open("/dev/null", O_RDONLY);
	if (null >= 0 && null != 0)
		dup2(null, 0), close(null);
	return rc;
}

int cjc_helper_serve(void)
{
	if (isatty(0)) {
		fputs("cjc remote helper: started by a compile for a store with the helper "
		      "attribute (docs/remote.md), with its settings on stdin\n", stderr);
		return 2;
	}
	umask(077);
	(void)prctl(PR_SET_DUMPABLE, 0); /* its environment and memory: the store's secrets */
	if (read_settings() || chdir("/"))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	int dir = cjc_user_run_dir(), lock = -1;
	struct stat sock_st;
	int listener = dir < 0 ? -1
			       : cjc_helperproc_listen(dir, name, SOCK_STREAM, &lock, &sock_st);
	if (listener < 0)
		return 1;
	atomic_store(&last_seen_ms, cjc_now_ms());
	int64_t trimmed_ms = 0;
	for (;;) {
		struct pollfd p = { listener, POLLIN, 0 };
		if (poll(&p, 1, 1000) > 0 && accept_client(listener))
			break;
		if (atomic_load(&clients))
			continue;
		int64_t idle_ms = cjc_now_ms() - atomic_load(&last_seen_ms);
		if (idle_ms >= TRIM_AFTER_MS)
			trim_once(&trimmed_ms);
		if (idle_ms >= settings.helper_idle_ms ||
		    !cjc_helperproc_socket_is_ours(dir, name, &sock_st))
			break; /* idle, or nobody can reach it any more */
	}
	cjc_helperproc_remove_socket(dir, name, &sock_st);
	return 0; /* the lock goes with the process */
}
#else
int cjc_helper_serve(void)
{
	return 2;
}
#endif
