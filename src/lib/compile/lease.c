#include "compile/lease.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/log.h"
#include "base/oom.h"
#include "base/util.h"
#include "keys/manifest.h"
#include "store/records.h"

#define LOCAL_PAUSE_MS 1
#define LOCAL_PAUSE_MAX_MS 50
#define REMOTE_PAUSE_MS 10
#define REMOTE_PAUSE_MAX_MS 250
/* How long a lease server that stalled is not waited on (lease.h). */
#define STALL_MEMO_MS (5 * 60 * 1000)

/* The key's byte in this user's lock file: its first 15 hex digits (60 bits). */
static off_t lock_offset(const char *direct_key)
{
	char digits[16];
	memcpy(digits, direct_key, 15);
	digits[15] = '\0';
	return (off_t)strtoull(digits, NULL, 16);
}

/* F_OFD_SETLK on the key's byte: 0 taken, -1 (EAGAIN) held by another. */
static int try_lock(int fd, const char *direct_key)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = lock_offset(direct_key), .l_len = 1 };
	int rc;
	while ((rc = fcntl(fd, F_OFD_SETLK, &fl)) && errno == EINTR)
		;
	if (rc && errno == EACCES)
		errno = EAGAIN;
	return rc;
}

/* Sleeps *pause ms (never past deadline), then doubles it up to max. */
static void pause_until(int64_t *pause, int64_t max, int64_t deadline)
{
	int64_t left = deadline - cjc_now_ms();
	int64_t ms = *pause < left ? *pause : left;
	if (ms > 0) {
		struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	*pause = *pause * 2 < max ? *pause * 2 : max;
}

static void note_wait(struct cjc_lease *l, int64_t start, bool timed_out)
{
	l->waited = true;
	l->waited_ms = cjc_now_ms() - start;
	l->timed_out = timed_out;
	if (timed_out)
		cjc_log("lease on %s: waited %lld ms, the bound, for another compile of it; compiling",
			l->direct_key, (long long)l->waited_ms);
}

static void release_on_unwind(void *l)
{
	cjc_lease_release(l);
}

/* A lease held is let go where the compile that holds it is abandoned
 * (base/oom.h): others wait on it. */
static void recorded(struct cjc_lease *l)
{
	cjc_oom_undo_pop(release_on_unwind, l);
	cjc_oom_undo_push(release_on_unwind, l);
}

/*
 * The local lease: 1 taken (l->fd), 0 not to be had (compile without it),
 * -1 with *served when the holder's entry was served, -2 when the bound
 * passed.
 */
static int local_lease(const struct cjc_lease_wait *w, struct cjc_lease *l, int64_t start,
		       int64_t deadline, int *served)
{
	char name[48];
	snprintf(name, sizeof name, "lease.%lu", (unsigned long)geteuid());
	if (!w->store)
		return 0;
	int fd = cjc_store_own_file(w->store, "stats", name);
	if (fd < 0) {
		l->error = errno;
		cjc_log("cannot take the lease on %s (stats/%s): %s; compiling without it",
			w->direct_key, name, cjc_untrusted_error(errno));
		return 0;
	}
	int64_t pause = LOCAL_PAUSE_MS;
	bool waited = false;
	while (try_lock(fd, w->direct_key)) {
		if (errno != EAGAIN || cjc_now_ms() >= deadline) {
			bool bound = errno == EAGAIN;
			if (!bound) {
				l->error = errno;
				cjc_log("cannot take the lease on %s: %s; compiling without it",
					w->direct_key, strerror(errno));
			}
			close(fd);
			if (bound)
				note_wait(l, start, true);
			return bound ? -2 : 0;
		}
		if (!waited)
			cjc_log("lease on %s is held by another compile here: waiting for its entry",
				w->direct_key);
		waited = true;
		pause_until(&pause, LOCAL_PAUSE_MAX_MS, deadline);
	}
	l->fd = fd;
	recorded(l);
	if (!waited)
		return 1;
	note_wait(l, start, false);
	/* the holder let go: it published (then serve that), or not (compile) */
	*served = w->look(w->ctx, false);
	return *served >= 0 ? -1 : 1;
}

/* The stall memo of the lease server (lease.h): stats/stalled.<uid>.<16
 * hex digits of the SHA-256 of its name as shown>. */
static void stall_memo_name(const struct cjc_lease_wait *w, char *name, size_t size)
{
	const char *shown = cjc_remote_lease_store(w->remotes);
	char hex[CJC_HEX_LEN + 1];
	cjc_hash_buf_hex(shown, strlen(shown), hex);
	snprintf(name, size, "stats/stalled.%lu.%.16s", (unsigned long)geteuid(), hex);
}

/* Whether this user's memo says the lease server stalled lately: a file of
 * ours alone (anyone else's, or a link, is not believed), holding the
 * wall-clock ms until which it is not waited on, at most STALL_MEMO_MS on. */
static bool stall_remembered(const struct cjc_lease_wait *w)
{
	char name[96], text[32];
	struct stat st;
	if (!w->store)
		return false;
	stall_memo_name(w, name, sizeof name);
	int fd = cjc_store_open_regular(w->store, name, O_RDONLY, 0);
	if (fd < 0)
		return false;
	ssize_t n = -1;
	if (!fstat(fd, &st) && st.st_uid == geteuid() && !(st.st_mode & 077) && st.st_nlink == 1)
		n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	int64_t until = strtoll(text, NULL, 10), now = cjc_wall_ns() / 1000000;
	return until > now && until - now <= STALL_MEMO_MS;
}

static void remember_stall(const struct cjc_lease_wait *w)
{
	char name[96], text[32];
	if (!w->store)
		return;
	stall_memo_name(w, name, sizeof name);
	int fd = cjc_store_own_file(w->store, "stats", strchr(name, '/') + 1);
	if (fd < 0)
		return; /* a memo: without it, the next compile waits again */
	int n = snprintf(text, sizeof text, "%lld\n", (long long)(cjc_wall_ns() / 1000000 + STALL_MEMO_MS));
	if (ftruncate(fd, 0) || pwrite(fd, text, (size_t)n, 0) != n)
		cjc_log("cannot write the lease server's stall memo %s: %s", name, strerror(errno));
	close(fd);
	cjc_log("lease server %s kept a lease held, or did not answer, for a whole bound: "
		"not waited on again for %d s", cjc_remote_lease_store(w->remotes), STALL_MEMO_MS / 1000);
}

/* The bound passed with no entry and no lease had: compile, remembering. */
static enum cjc_lease_result bound_passed(const struct cjc_lease_wait *w, struct cjc_lease *l,
					  int64_t start)
{
	note_wait(l, start, true);
	remember_stall(w);
	return CJC_LEASE_COMPILE;
}

/* Polls the remote lease until it is let go (0), the bound passes with it
 * held (1), or the store fails (-1); no request runs past deadline. */
static int poll_remote(const struct cjc_lease_wait *w, int64_t deadline)
{
	int64_t pause = REMOTE_PAUSE_MS;
	for (;;) {
		pause_until(&pause, REMOTE_PAUSE_MAX_MS, deadline);
		if (cjc_now_ms() >= deadline)
			return 1;
		int held = cjc_remote_lease_held(w->remotes, w->direct_key, deadline);
		if (held != 1)
			return held < 0 && cjc_now_ms() >= deadline ? 1 : held;
	}
}

/* The remote lease, once the local one is held (or none could be):
 * CJC_LEASE_COMPILE or CJC_LEASE_SERVED. */
static enum cjc_lease_result remote_lease(const struct cjc_lease_wait *w, struct cjc_lease *l,
					  int64_t start, int64_t deadline, int *served)
{
	enum cjc_remote_lease got = cjc_remote_lease_take(w->remotes, w->direct_key, (long)w->bound_ms,
							  deadline);
	if (got == CJC_REMOTE_LEASE_TAKEN)
		l->remotes = w->remotes, recorded(l);
	/* a server too slow to answer within the bound is a wait that ran to it */
	if (got == CJC_REMOTE_LEASE_NONE && cjc_now_ms() >= deadline)
		return bound_passed(w, l, start);
	if (got != CJC_REMOTE_LEASE_HELD)
		return CJC_LEASE_COMPILE;
	if (stall_remembered(w)) {
		l->skipped = true;
		cjc_log("lease on %s is held on %s, which stalled lately: not waiting for it; compiling",
			w->direct_key, cjc_remote_lease_store(w->remotes));
		return CJC_LEASE_COMPILE;
	}
	cjc_log("lease on %s is held by another machine: waiting for its entry", w->direct_key);
	int held = poll_remote(w, deadline);
	if (held == 1)
		return bound_passed(w, l, start);
	note_wait(l, start, false);
	if (held)
		return CJC_LEASE_COMPILE;
	*served = w->look(w->ctx, true);
	if (*served >= 0)
		return CJC_LEASE_SERVED;
	/* it let go without an entry: compile, holding the lease if it is free */
	if (cjc_remote_lease_take(w->remotes, w->direct_key, (long)w->bound_ms, deadline) ==
	    CJC_REMOTE_LEASE_TAKEN)
		l->remotes = w->remotes, recorded(l);
	return CJC_LEASE_COMPILE;
}

enum cjc_lease_result cjc_lease_acquire(const struct cjc_lease_wait *w, struct cjc_lease *l,
					int *served)
{
	memset(l, 0, sizeof *l);
	l->fd = -1;
	memcpy(l->direct_key, w->direct_key, CJC_HEX_LEN);
	if (w->bound_ms <= 0)
		return CJC_LEASE_COMPILE;
	int64_t start = cjc_now_ms();
	/* the local holder may itself wait on a remote lease, then compile */
	int64_t deadline = start + (w->remotes ? 2 : 1) * w->bound_ms;
	int local = local_lease(w, l, start, deadline, served);
	if (local == -1) {
		cjc_lease_release(l);
		return CJC_LEASE_SERVED;
	}
	if (local == -2 || !w->remotes)
		return CJC_LEASE_COMPILE;
	enum cjc_lease_result r = remote_lease(w, l, start, start + w->bound_ms, served);
	if (r == CJC_LEASE_SERVED)
		cjc_lease_release(l);
	return r;
}

enum cjc_lease_result cjc_lease_take(struct cjc_lease_wait *w, int64_t lease_wait_s,
				     struct cjc_lease *l, int *served)
{
	w->bound_ms = w->store && lease_wait_s > 0
		    ? cjc_lease_bound(cjc_lease_recorded_ms(w->store, w->direct_key), lease_wait_s) : 0;
	return cjc_lease_acquire(w, l, served);
}

void cjc_lease_release(struct cjc_lease *l)
{
	cjc_oom_undo_pop(release_on_unwind, l);
	if (l->remotes)
		cjc_remote_lease_end(l->remotes, l->direct_key);
	l->remotes = NULL;
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

int64_t cjc_lease_recorded_ms(const struct cjc_store *s, const char *direct_key)
{
	struct cjc_manifest m;
	char *name = cjc_store_manifest_name(direct_key);
	int found = !cjc_manifest_read(s, name, &m);
	free(name);
	if (!found)
		return -1;
	int64_t ms = -1;
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	/* records are newest first: the last compile of this source and command */
	if (m.n && cjc_store_open_entry(s, m.recs[0].entry_key, &e, &why) == CJC_ENTRY_FOUND) {
		ms = e.duration_ms;
		cjc_entry_release(&e);
	}
	cjc_buf_release(&why);
	cjc_manifest_release(&m);
	return ms;
}

int64_t cjc_lease_bound(int64_t recorded_ms, int64_t lease_wait_s)
{
	if (lease_wait_s <= 0)
		return 0;
	int64_t limit = lease_wait_s > INT64_MAX / 1000 ? INT64_MAX / 4 : lease_wait_s * 1000;
	if (recorded_ms < 0)
		return limit;
	/* an entry's duration is another writer's word: no more than the setting allows */
	int64_t ms = recorded_ms / 2 * 3 + 1000;
	return ms < limit ? ms : limit;
}
