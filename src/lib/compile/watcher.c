/*
 * watcher.c - a compile's side of the watching helper (watcher.h), and
 * what both sides compute alike: a record's digest, the helper's name.
 */
#include "compile/watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/helperproc.h"
#include "base/log.h"

static void add_bytes(struct cjc_hash *h, const void *p, size_t n)
{
	uint64_t len = n;
	cjc_hash_update(h, &len, sizeof len);
	cjc_hash_update(h, p, n);
}

void cjc_watcher_digest(const struct cjc_manifest_record *rec, const char *cwd,
			unsigned char out[CJC_DIGEST_LEN])
{
	struct cjc_hash h;
	cjc_hash_init(&h);
	add_bytes(&h, cwd, strlen(cwd));
	add_bytes(&h, rec->entry_key, strlen(rec->entry_key));
	add_bytes(&h, &rec->ndeps, sizeof rec->ndeps);
	for (size_t i = 0; i < rec->ndeps; i++) {
		add_bytes(&h, rec->deps[i].path, strlen(rec->deps[i].path));
		cjc_hash_update(&h, &rec->deps[i].size, sizeof rec->deps[i].size);
		cjc_hash_update(&h, rec->deps[i].sha, CJC_DIGEST_LEN);
	}
	add_bytes(&h, &rec->absent.n, sizeof rec->absent.n);
	for (size_t i = 0; i < rec->absent.n; i++)
		add_bytes(&h, rec->absent.v[i], strlen(rec->absent.v[i]));
	cjc_hash_final(&h, out);
}

/* What a helper's view of a path rests on: which file system objects
 * path is (a cjc rebuilt, another root directory), and the mount
 * namespace. */
static void add_view(struct cjc_hash *h, const char *path)
{
	struct stat st = { 0 };
	(void)stat(path, &st);
	uint64_t id[3] = { st.st_dev, st.st_ino,
			   (uint64_t)st.st_mtim.tv_sec * 1000000000u +
				   (uint64_t)st.st_mtim.tv_nsec };
	cjc_hash_update(h, id, sizeof id);
}

void cjc_watcher_name(const unsigned char *key, char name[CJC_HEX_LEN + 1])
{
	struct cjc_hash h;
	char ns[128];
	ssize_t n = readlink("/proc/self/ns/mnt", ns, sizeof ns - 1);
	ns[n > 0 ? n : 0] = 0;
	uint32_t version = CJC_WATCHER_VERSION;
	cjc_hash_init(&h);
	cjc_hash_update(&h, key, CJC_HELPERPROC_KEY_LEN); /* the name shows in /proc/net/unix */
	add_bytes(&h, "cudajitcache watcher " CJC_VERSION,
		  strlen("cudajitcache watcher " CJC_VERSION));
	cjc_hash_update(&h, &version, sizeof version);
	add_bytes(&h, ns, strlen(ns));
	add_view(&h, "/");
	add_view(&h, "/proc/self/exe");
	cjc_hash_final_hex(&h, name);
}

/* `cjc __watch`, when no helper holds the name's lock; its environment
 * only where it lives (the run-time directory). */
static void start(int dir, const char *name)
{
	if (!cjc_helperproc_lock_free(dir, name))
		return;
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	const char *run = getenv("XDG_RUNTIME_DIR");
	char *xdg = run ? cjc_xasprintf("XDG_RUNTIME_DIR=%s", run) : NULL;
	char *argv[] = { "cjc", "__watch", NULL }, *env[] = { xdg, NULL };
	pid_t pid;
	int rc = null < 0 ? errno : cjc_helperproc_spawn(argv, env, null, &pid);
	if (null >= 0)
		close(null);
	free(xdg);
	if (rc)
		cjc_log("cannot start the watcher: %s", strerror(rc));
	else
		cjc_log("started the watcher (pid %d, %s.sock)", (int)pid, name);
}

/* A connection to this user's helper, or -1 (one is started when none
 * lives; the user is told of a socket that is another's). */
static int reach(struct cjc_watcher *w)
{
	int dir = cjc_user_run_dir_told(&w->news), fd = -1;
	unsigned char key[CJC_HELPERPROC_KEY_LEN];
	char name[CJC_HEX_LEN + 1];
	if (dir < 0 || cjc_helperproc_key(dir, key)) {
		if (dir >= 0)
			close(dir);
		return -1;
	}
	cjc_watcher_name(key, name);
	fd = cjc_helperproc_connect(dir, name, SOCK_STREAM);
	if (fd < 0 && errno == EPERM)
		cjc_buf_addf(&w->news,
			     "the watching helper's socket %s.sock in the run-time "
			     "directory is another user's: not used (remove it)",
			     name);
	else if (fd < 0 && (errno == ENOENT || errno == ECONNREFUSED))
		start(dir, name);
	close(dir);
	return fd;
}

static int send_message(int fd, char op, const void *p, size_t n, int64_t deadline)
{
	unsigned char head[5];
	uint32_t len = (uint32_t)n;
	head[0] = (unsigned char)op;
	memcpy(head + 1, &len, sizeof len);
	return cjc_helperproc_send(fd, head, sizeof head, deadline) ||
	       cjc_helperproc_send(fd, p, n, deadline);
}

static void drop(struct cjc_watcher *w, const char *why)
{
	cjc_log("the watcher %s; checking files by stat", why);
	close(w->fd);
	w->fd = -1;
}

bool cjc_watcher_unchanged(struct cjc_watcher *w, const char *cwd,
			   const struct cjc_manifest_record *rec)
{
	if (!w->tried) {
		w->tried = true;
		w->fd = reach(w);
	}
	w->vouched = false;
	if (w->fd < 0)
		return false;
	cjc_watcher_digest(rec, cwd, w->digest);
	int64_t deadline = cjc_helperproc_now_us() + CJC_WATCHER_WAIT_US;
	char answer = 0;
	if (send_message(w->fd, 'a', w->digest, CJC_DIGEST_LEN, deadline) ||
	    cjc_helperproc_read(w->fd, &answer, 1, deadline) || (answer != '0' && answer != '1')) {
		drop(w, errno == ETIMEDOUT ? "did not answer in time" : "failed");
		return false;
	}
	w->vouched = answer == '1';
	cjc_log("the watcher %s the record", w->vouched ? "vouched for" : "cannot vouch for");
	return w->vouched;
}

void cjc_watcher_checked(struct cjc_watcher *w, const char *cwd,
			 const struct cjc_manifest_record *rec)
{
	unsigned char digest[CJC_DIGEST_LEN];
	if (w->fd < 0)
		return;
	cjc_watcher_digest(rec, cwd, digest);
	if (w->vouched && !memcmp(digest, w->digest, CJC_DIGEST_LEN))
		return;
	struct cjc_manifest one = { (struct cjc_manifest_record *)rec, 1 };
	struct cjc_buf payload = CJC_BUF_INIT;
	uint32_t cwd_len = (uint32_t)strlen(cwd);
	cjc_buf_add(&payload, &cwd_len, sizeof cwd_len);
	cjc_buf_add(&payload, cwd, cwd_len);
	cjc_manifest_encode(&one, &payload);
	int64_t deadline = cjc_helperproc_now_us() + 20 * 1000; /* it reads as it is sent */
	if (payload.len <= CJC_WATCHER_MAX_RECORD &&
	    send_message(w->fd, 'c', payload.data, payload.len, deadline))
		drop(w, "did not take the record");
	cjc_buf_release(&payload);
}

const char *cjc_watcher_news(const struct cjc_watcher *w)
{
	return w->news.len ? w->news.data : NULL;
}

void cjc_watcher_close(struct cjc_watcher *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	cjc_buf_release(&w->news);
}
