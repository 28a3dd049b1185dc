/*
 * changes.c - a handle's change signal: whether anything a remembered
 * request read from disk may have changed since its files were last
 * checked, without a stat per file.
 *
 * The kernel tells (inotify(7)): every directory a checked record's files
 * and candidates are reached through is watched, from / down, along the
 * path as written and along where its links lead, for a name that appears,
 * goes or moves and for a child that is written or whose attributes
 * change.  Each event, and each change to the process's mount table (a
 * poll of /proc/self/mountinfo), starts a new generation.  A memory item
 * (memory.c) checked by stat in generation G, with its directories watched
 * before the check began, is unchanged while the generation is G: a change
 * after the watch is an event, and the check after it saw any change
 * before.
 *
 * The signal is given up for good (every check stats, as before) where it
 * cannot be trusted: no inotify, no /proc, a directory on a file system
 * whose changes may come from another machine (only the local kinds below
 * are watched), the watch limit reached, or a relative path.  A queue
 * overflow, a watch the kernel dropped (its directory gone) or a fork
 * (the child shares the parent's queue) starts afresh: a new generation
 * and no watches.  Where nothing changed, asking costs one system call
 * (epoll_wait over the queue and the mount table).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "jit_internal.h"

#define WATCHED_BUCKETS 256
#define MAX_WATCHED 8192
#define DIR_EVENTS                                                                        \
	(IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_DELETE_SELF |    \
	 IN_MOVE_SELF | IN_MOVED_FROM | IN_MOVED_TO)

struct watched {
	struct watched *next;
	char *path;
};

struct jit_changes {
	int fd;          /* inotify; -1 until the first watch */
	int mounts;      /* /proc/self/mountinfo, polled */
	int ready;       /* epoll over both: one system call tells whether either has news */
	bool off;        /* given up: every check stats */
	unsigned forks;  /* the fork generation fd was made in */
	uint64_t generation;
	struct watched *buckets[WATCHED_BUCKETS];
	size_t nwatched;
};

/* File systems whose every change is made by this kernel, which inotify
 * then reports; statfs(2)'s f_type. */
static const long local_kinds[] = {
	0xEF53,     /* ext2/3/4 */
	0x58465342, /* xfs */
	0x9123683E, /* btrfs */
	0x01021994, /* tmpfs */
	0x858458F6, /* ramfs */
	0x794C7630, /* overlayfs */
	0xF2F52010, /* f2fs */
	0x2FC12FC1, /* zfs */
};

static bool local_kind(long kind)
{
	for (size_t i = 0; i < sizeof local_kinds / sizeof *local_kinds; i++)
		if (kind == local_kinds[i])
			return true;
	return false;
}

static unsigned bucket_of(const char *path)
{
	return cjc_table_hash(path, strlen(path)) % WATCHED_BUCKETS;
}

static void forget_watched(struct jit_changes *c)
{
	for (size_t b = 0; b < WATCHED_BUCKETS; b++)
		while (c->buckets[b]) {
			struct watched *w = c->buckets[b];
			c->buckets[b] = w->next;
			free(w->path);
			free(w);
		}
	c->nwatched = 0;
}

/* No watches, a new generation. */
static void start_afresh(struct jit_changes *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	forget_watched(c);
	c->generation++;
}

static void give_up(struct jit_changes *c)
{
	start_afresh(c);
	c->off = true;
}

/* The inotify and mount-table descriptors, and the epoll over them; false
 * where they cannot be had (the signal is then off). */
static bool open_signal(struct jit_changes *c)
{
	c->fd = -1;
	c->mounts = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	c->ready = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e = { .events = EPOLLPRI };
	return c->mounts >= 0 && c->ready >= 0 &&
	       !epoll_ctl(c->ready, EPOLL_CTL_ADD, c->mounts, &e);
}

static void close_signal(struct jit_changes *c)
{
	int *fds[] = { &c->fd, &c->mounts, &c->ready };
	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	c->fd = c->mounts = c->ready = -1;
}

static struct jit_changes *changes_of(struct cjc_jit *h)
{
	struct jit_changes *c = h->changes;
	if (c && c->forks != jit_fork_generation()) {
		/* a child shares its parent's descriptors: their events, and the
		 * mount table's read position, are the parent's */
		close_signal(c);
		forget_watched(c);
		c->off = !open_signal(c);
		c->generation++;
		c->forks = jit_fork_generation();
	}
	if (!c) {
		c = h->changes = cjc_xcalloc(1, sizeof *c);
		c->generation = 1;
		c->forks = jit_fork_generation();
		c->off = !open_signal(c);
	}
	return c;
}

/* Whether the mount table changed since last asked (and reads it, so the
 * next poll asks afresh). */
static bool mounts_changed(struct jit_changes *c)
{
	struct pollfd p = { .fd = c->mounts, .events = POLLPRI };
	if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLPRI | POLLERR)))
		return false;
	char chunk[4096];
	if (lseek(c->mounts, 0, SEEK_SET) == 0)
		while (read(c->mounts, chunk, sizeof chunk) > 0)
			;
	return true;
}

/* Reads every event queued; whether there was any. */
static bool drain(struct jit_changes *c)
{
	bool any = false, afresh = false;
	char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	while (c->fd >= 0 && (n = read(c->fd, events, sizeof events)) > 0) {
		any = true;
		for (char *p = events; p < events + n;) {
			const struct inotify_event *e = (const void *)p;
			afresh = afresh || (e->mask & (IN_Q_OVERFLOW | IN_IGNORED));
			p += sizeof *e + e->len;
		}
	}
	if (afresh)
		start_afresh(c);
	return any;
}

/* Whether there is news: one epoll_wait, where nothing changed. */
static bool news(struct jit_changes *c)
{
	struct epoll_event e[2];
	return epoll_wait(c->ready, e, 2, 0) != 0 && (mounts_changed(c) | drain(c));
}

uint64_t jit_changes_generation(struct cjc_jit *h)
{
	jit_lock(h);
	struct jit_changes *c = changes_of(h);
	if (!c->off && news(c))
		c->generation++;
	uint64_t g = c->off ? 0 : c->generation;
	jit_unlock(h);
	return g;
}

static bool open_inotify(struct jit_changes *c)
{
	struct epoll_event e = { .events = EPOLLIN };
	c->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (c->fd >= 0 && !epoll_ctl(c->ready, EPOLL_CTL_ADD, c->fd, &e))
		return true;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	return false;
}

static bool watched(const struct jit_changes *c, const char *dir)
{
	for (struct watched *w = c->buckets[bucket_of(dir)]; w; w = w->next)
		if (!strcmp(w->path, dir))
			return true;
	return false;
}

/* Watches dir (where it leads, when a link); false to give up. */
static bool watch_dir(struct jit_changes *c, const char *dir)
{
	struct statfs fs;
	if (c->nwatched >= MAX_WATCHED || statfs(dir, &fs) || !local_kind((long)fs.f_type))
		return false;
	if (c->fd < 0 && !open_inotify(c))
		return false;
	if (inotify_add_watch(c->fd, dir, DIR_EVENTS) < 0)
		return false;
	struct watched *w = cjc_xcalloc(1, sizeof *w);
	unsigned b = bucket_of(dir);
	w->path = cjc_xstrdup(dir);
	w->next = c->buckets[b];
	c->buckets[b] = w;
	c->nwatched++;
	return true;
}

static bool watch_path(struct jit_changes *c, const char *path, int depth);

/* One step down a path: prefix, a directory on it or the file it ends in.
 * 1: watched (and where it leads, when a link), go on; 0: nothing to watch
 * past it (a file, or nothing there: its parent's watch sees one come);
 * -1: give up. */
static int watch_step(struct jit_changes *c, const char *prefix, int depth)
{
	if (watched(c, prefix))
		return 1;
	struct stat l, s;
	if (lstat(prefix, &l))
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (S_ISLNK(l.st_mode)) {
		char real[PATH_MAX];
		if (!realpath(prefix, real) || !watch_path(c, real, depth + 1))
			return -1; /* a dangling link too: where it leads is not watched */
	}
	if (stat(prefix, &s) || !S_ISDIR(s.st_mode))
		return 0;
	return watch_dir(c, prefix) ? 1 : -1;
}

/* Watches each directory path is reached through, from / down, and where
 * its links lead; false to give up. */
static bool watch_path(struct jit_changes *c, const char *path, int depth)
{
	char prefix[PATH_MAX];
	size_t len = strlen(path);
	if (path[0] != '/' || depth > 8 || len >= sizeof prefix)
		return false;
	if (watch_step(c, "/", depth) < 0)
		return false;
	for (size_t k = 1; k <= len; k++) {
		if ((path[k] != '/' && path[k] != '\0') || path[k - 1] == '/')
			continue;
		memcpy(prefix, path, k);
		prefix[k] = '\0';
		int r = watch_step(c, prefix, depth);
		if (r <= 0)
			return r == 0;
	}
	return true;
}

bool jit_changes_watch(struct cjc_jit *h, const struct cjc_manifest_record *r, const char *source,
		       const char *named)
{
	jit_lock(h);
	struct jit_changes *c = changes_of(h);
	bool ok = !c->off;
	for (size_t i = 0; ok && i < r->ndeps; i++) {
		const char *p = r->deps[i].path;
		bool keyed_by_content = (source && !strcmp(p, source)) || (named && !strcmp(p, named));
		ok = keyed_by_content || watch_path(c, p, 0);
	}
	for (size_t i = 0; ok && i < r->absent.n; i++)
		ok = watch_path(c, r->absent.v[i], 0);
	if (!ok && errno == ENOSPC)
		give_up(c); /* the watch limit: every later check would fail too */
	jit_unlock(h);
	return ok;
}

bool jit_changes_watch_paths(struct cjc_jit *h, const struct cjc_strvec *paths)
{
	jit_lock(h);
	struct jit_changes *c = changes_of(h);
	bool ok = !c->off;
	for (size_t i = 0; ok && i < paths->n; i++)
		ok = watch_path(c, paths->v[i], 0);
	if (!ok && errno == ENOSPC)
		give_up(c);
	jit_unlock(h);
	return ok;
}

void jit_changes_release(struct cjc_jit *h)
{
	struct jit_changes *c = h->changes;
	if (!c)
		return;
	close_signal(c);
	forget_watched(c);
	free(c);
	h->changes = NULL;
}
