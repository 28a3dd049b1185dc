/*
 * watch_cmd.c - `cjc __watch`: the watching helper's own loop
 * (src/lib/compile/watcher.h says what it is for and why its answers
 * hold).
 *
 * Started by a compile, it takes its name's lock or exits (another
 * serves it), listens on <name>.sock and serves its own user's clients
 * one message at a time, on one thread: an ask is answered from the
 * marks, a record taken is watched, then checked, then marked.  The marks
 * are a table by digest, a record's mark replacing whatever shared its
 * slot (a lost mark costs a check by stat).  Where the watches reach their
 * limit, or the signal gave up, it starts afresh (no watches, a new
 * generation: every mark stale).  It exits after CJC_WATCHER_IDLE_S with
 * no message, or once its socket is no longer at its name.
 */
#include "watch_cmd.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/helperproc.h"
#include "base/watch.h"
#include "compile/watcher.h"
#include "keys/filehash.h"

#define MAX_CLIENTS 64
#define MARKS 4096
#define MESSAGE_US (1000 * 1000) /* a message begun is read within this */

struct mark {
	unsigned char digest[CJC_DIGEST_LEN];
	uint64_t generation;
};

static struct mark marks[MARKS];
static struct cjc_watch *watch;
static uint64_t last_generation;

static struct mark *slot_of(const unsigned char *digest)
{
	uint32_t i;
	memcpy(&i, digest, sizeof i);
	return &marks[i % MARKS];
}

static uint64_t generation(void)
{
	uint64_t g = cjc_watch_generation(watch);
	if (g > last_generation)
		last_generation = g;
	return g;
}

static bool unchanged(const unsigned char *digest)
{
	uint64_t g = generation();
	const struct mark *m = slot_of(digest);
	return g && m->generation == g && !memcmp(m->digest, digest, CJC_DIGEST_LEN);
}

/* The generation rec's paths are watched in, starting afresh once where
 * the watches are many or the signal gave up; 0 when they cannot be. */
static uint64_t watch_record(const char *const *paths, size_t n)
{
	uint64_t g = cjc_watch_paths(watch, paths, n);
	if (!g && (cjc_watch_count(watch) > CJC_WATCH_MAX_WATCHED / 2 || !generation())) {
		cjc_watch_close(watch);
		watch = cjc_watch_open(last_generation + 1);
		g = cjc_watch_paths(watch, paths, n);
	}
	if (g > last_generation)
		last_generation = g;
	return g;
}

/* rec with its relative paths made absolute from cwd (the check and the
 * watches then see what the compile saw); false when one is relative and
 * cwd is not absolute. */
static bool from(const char *cwd, struct cjc_manifest_record *rec)
{
	for (size_t i = 0; i < rec->ndeps + rec->absent.n; i++) {
		char **p = i < rec->ndeps ? &rec->deps[i].path : &rec->absent.v[i - rec->ndeps];
		if ((*p)[0] == '/')
			continue;
		if (cwd[0] != '/')
			return false;
		char *whole = cjc_path_join(cwd, *p);
		free(*p);
		*p = whole;
	}
	return true;
}

/* Watches rec's paths, then checks its files: marked unchanged in the
 * generation the watches were in place in, when they hold. */
static void take(const char *cwd, struct cjc_manifest_record *rec)
{
	unsigned char digest[CJC_DIGEST_LEN];
	cjc_watcher_digest(rec, cwd, digest);
	if (unchanged(digest) || !from(cwd, rec))
		return;
	const char **paths = cjc_xcalloc(rec->ndeps + rec->absent.n + 1, sizeof *paths);
	size_t n = 0;
	for (size_t i = 0; i < rec->ndeps; i++)
		paths[n++] = rec->deps[i].path;
	for (size_t i = 0; i < rec->absent.n; i++)
		paths[n++] = rec->absent.v[i];
	uint64_t g = watch_record(paths, n);
	free(paths);
	if (!g)
		return;
	cjc_filehash_recheck(); /* what was remembered may have changed */
	bool holds = cjc_manifest_record_holds(rec);
	cjc_filehash_forget(); /* its directories closed: no mount is held busy */
	if (!holds)
		return;
	struct mark *m = slot_of(digest);
	memcpy(m->digest, digest, CJC_DIGEST_LEN);
	m->generation = g;
}

/* The working directory (u32 length, bytes), then the record. */
static int take_message(int fd, uint32_t len, int64_t deadline)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	struct cjc_manifest m;
	uint32_t cwd_len = 0;
	cjc_buf_grow(&payload, len);
	int rc = cjc_helperproc_read(fd, payload.data, len, deadline);
	if (!rc && len >= sizeof cwd_len)
		memcpy(&cwd_len, payload.data, sizeof cwd_len);
	size_t at = sizeof cwd_len + (size_t)cwd_len;
	if (rc || len < at || cwd_len >= PATH_MAX || memchr(payload.data + 4, 0, cwd_len)) {
		cjc_buf_release(&payload);
		return rc;
	}
	char *cwd = cjc_xstrndup(payload.data + 4, cwd_len);
	if (!cjc_manifest_decode(payload.data + at, len - at, &m)) {
		if (m.n == 1)
			take(cwd, &m.recs[0]);
		cjc_manifest_release(&m);
	}
	free(cwd);
	cjc_buf_release(&payload);
	return 0;
}

/* One message of a client: 0, or -1 when it is gone or malformed. */
static int serve_message(int fd)
{
	int64_t deadline = cjc_helperproc_now_us() + MESSAGE_US;
	unsigned char head[5];
	uint32_t len;
	if (cjc_helperproc_read(fd, head, sizeof head, deadline))
		return -1;
	memcpy(&len, head + 1, sizeof len);
	if (head[0] == 'c' && len <= CJC_WATCHER_MAX_RECORD)
		return take_message(fd, len, deadline);
	unsigned char digest[CJC_DIGEST_LEN];
	if (head[0] != 'a' || len != CJC_DIGEST_LEN ||
	    cjc_helperproc_read(fd, digest, sizeof digest, deadline))
		return -1;
	char answer = unchanged(digest) ? '1' : '0';
	return cjc_helperproc_send(fd, &answer, 1, deadline);
}

static void accept_client(int listener, struct pollfd *p, nfds_t *n)
{
	int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (!cjc_helperproc_peer_is_us(fd) || *n >= MAX_CLIENTS + 1) {
		close(fd);
		return;
	}
	p[*n] = (struct pollfd){ fd, POLLIN, 0 };
	(*n)++;
}

/* Serves until idle, or until its socket is gone from its name. */
static void serve(int listener, int dir, const char *name, const struct stat *sock_st)
{
	struct pollfd p[MAX_CLIENTS + 1] = { { listener, POLLIN, 0 } };
	nfds_t n = 1;
	int64_t last_seen = cjc_helperproc_now_us();
	for (;;) {
		int ready = poll(p, n, 1000);
		for (nfds_t i = 1; ready > 0 && i < n; i++) { /* clients first: in the order sent */
			if (!p[i].revents)
				continue;
			last_seen = cjc_helperproc_now_us();
			if ((p[i].revents & POLLIN) && !serve_message(p[i].fd))
				continue;
			close(p[i].fd);
			p[i--] = p[--n];
		}
		if (ready > 0 && (p[0].revents & POLLIN))
			accept_client(listener, p, &n);
		int64_t idle_us = cjc_helperproc_now_us() - last_seen;
		if (n == 1 && (idle_us >= CJC_WATCHER_IDLE_S * 1000000LL ||
			       !cjc_helperproc_socket_is_ours(dir, name, sock_st)))
			return;
	}
}

int cjc_watch_serve(void)
{
	if (isatty(0)) {
		fputs("cjc __watch: the watching helper, started by a compile (docs/store.md)\n",
		      stderr);
		return 2;
	}
	umask(077);
	(void)prctl(PR_SET_DUMPABLE, 0); /* the user's key is in its memory */
	signal(SIGPIPE, SIG_IGN);
	unsigned char key[CJC_HELPERPROC_KEY_LEN];
	char name[CJC_HEX_LEN + 1];
	int dir = chdir("/") ? -1 : cjc_user_run_dir(), lock = -1;
	if (dir < 0 || cjc_helperproc_key(dir, key))
		return 1;
	cjc_watcher_name(key, name);
	struct stat sock_st;
	int listener = cjc_helperproc_listen(dir, name, SOCK_STREAM, &lock, &sock_st);
	if (listener < 0)
		return 1;
	watch = cjc_watch_open(1);
	serve(listener, dir, name, &sock_st);
	cjc_helperproc_remove_socket(dir, name, &sock_st);
	cjc_watch_close(watch);
	return 0; /* the lock goes with the process */
}
