/*
 * watch.c - the change signal (watch.h): inotify along paths and links,
 * stamps where a file system's changes may come from elsewhere.
 */
#include "base/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/stamp.h"
#include "base/util.h"

#define WATCHED_BUCKETS 256
#define MAX_WATCHED CJC_WATCH_MAX_WATCHED
#define MAX_STAMPED CJC_WATCH_MAX_STAMPED /* past this, cjc_watch_paths cannot vouch */
#define DIR_EVENTS                                                                                 \
	(IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_DELETE_SELF |         \
	 IN_MOVE_SELF | IN_MOVED_FROM | IN_MOVED_TO)
#define FILE_EVENTS (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

/* A path handled: watched by inotify, or, on a file system whose changes
 * may come from elsewhere, stamped and stat'ed at each ask. */
struct watched {
	struct watched *next;
	char *path;
	int wd; /* its inotify watch; -1 when stamped */
	bool stamped;
	struct cjc_stamp st;
	int64_t taken_ns;
};

struct cjc_watch {
	int fd;     /* inotify; -1 until the first watch */
	int mounts; /* /proc/self/mountinfo, polled */
	int ready;  /* epoll over both: one system call tells whether either has news */
	bool off;   /* given up: every check stats */
	uint64_t generation;
	struct watched *buckets[WATCHED_BUCKETS];
	size_t nwatched;
	struct watched *stamped[MAX_STAMPED]; /* those of buckets that are stamped */
	size_t nstamped;
	/* by watch descriptor: the names in that directory that paths go
	 * through or end in; an event about any other child is no news */
	struct cjc_strvec *names;
	size_t nnames;
};

/* File systems whose every change is made by this kernel through them,
 * which inotify then reports; statfs(2)'s f_type.  Not overlayfs: a change
 * made in a lower directory directly shows through the overlay with no
 * event on it (seen: a wrong hit, by a hostile review).  Not zfs: a
 * rollback or a receive changes files with no event. */
static const long local_kinds[] = {
	0xEF53,     /* ext2/3/4 */
	0x58465342, /* xfs */
	0x9123683E, /* btrfs */
	0x01021994, /* tmpfs */
	0x858458F6, /* ramfs */
	0xF2F52010, /* f2fs */
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

static void forget_watched(struct cjc_watch *c)
{
	for (size_t b = 0; b < WATCHED_BUCKETS; b++)
		while (c->buckets[b]) {
			struct watched *w = c->buckets[b];
			c->buckets[b] = w->next;
			free(w->path);
			free(w);
		}
	c->nwatched = c->nstamped = 0;
	for (size_t i = 0; i < c->nnames; i++)
		cjc_strvec_clear(&c->names[i]);
	free(c->names);
	c->names = NULL;
	c->nnames = 0;
}

/* Notes that name, in the directory watched as wd, is on a watched path. */
static void add_name(struct cjc_watch *c, int wd, const char *name, size_t len)
{
	if (wd < 0)
		return;
	if ((size_t)wd >= c->nnames) {
		size_t n = (size_t)wd + 16;
		c->names = cjc_xrealloc(c->names, n * sizeof *c->names);
		for (size_t i = c->nnames; i < n; i++)
			c->names[i] = (struct cjc_strvec)CJC_STRVEC_INIT;
		c->nnames = n;
	}
	struct cjc_strvec *v = &c->names[wd];
	for (size_t i = 0; i < v->n; i++)
		if (strlen(v->v[i]) == len && !memcmp(v->v[i], name, len))
			return;
	char *copy = cjc_xstrndup(name, len);
	cjc_strvec_push(v, copy);
	free(copy);
}

/* Whether an event is news: about a watched object itself, or about a
 * child whose name a watched path goes through or ends in. */
static bool relevant(const struct cjc_watch *c, const struct inotify_event *e)
{
	if (!e->len || e->wd < 0 || (size_t)e->wd >= c->nnames)
		return true;
	const struct cjc_strvec *v = &c->names[e->wd];
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], e->name))
			return true;
	return false;
}

/* No watches, a new generation. */
static void start_afresh(struct cjc_watch *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	forget_watched(c);
	c->generation++;
}

static void give_up(struct cjc_watch *c)
{
	start_afresh(c);
	c->off = true;
}

/* The inotify and mount-table descriptors, and the epoll over them; false
 * where they cannot be had (the signal is then off). */
static bool open_signal(struct cjc_watch *c)
{
	c->fd = -1;
	c->mounts = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	c->ready = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e = { .events = EPOLLPRI, .data.fd = c->mounts };
	return c->mounts >= 0 && c->ready >= 0 &&
	       !epoll_ctl(c->ready, EPOLL_CTL_ADD, c->mounts, &e);
}

static void close_signal(struct cjc_watch *c)
{
	int *fds[] = { &c->fd, &c->mounts, &c->ready };
	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	c->fd = c->mounts = c->ready = -1;
}

/* Reads every event queued; whether there was any. */
static bool drain(struct cjc_watch *c)
{
	bool any = false, afresh = false;
	char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	while (c->fd >= 0 && (n = read(c->fd, events, sizeof events)) > 0) {
		for (char *p = events; p < events + n;) {
			const struct inotify_event *e = (const void *)p;
			afresh = afresh || (e->mask & (IN_Q_OVERFLOW | IN_IGNORED));
			any = any || relevant(c, e);
			p += sizeof *e + e->len;
		}
	}
	if (afresh)
		start_afresh(c);
	return any;
}

/* Whether there is news: one epoll_wait, where nothing changed. */
static bool news(struct cjc_watch *c)
{
	struct epoll_event e[2];
	int n = epoll_wait(c->ready, e, 2, 0);
	if (n == 0)
		return false;
	bool mounts = n < 0; /* cannot tell: as if changed */
	for (int i = 0; i < n; i++)
		mounts = mounts || e[i].data.fd == c->mounts; /* its poll reports a change once */
	bool queued = drain(c);
	return mounts || queued;
}

/* Whether a stamped path changed (its stamp is then taken again). */
static bool stamps_moved(struct cjc_watch *c)
{
	bool moved = false;
	for (size_t i = 0; i < c->nstamped; i++) {
		struct watched *w = c->stamped[i];
		struct cjc_stamp now;
		cjc_stamp_path(w->path, &now);
		if (cjc_stamp_holds(&w->st, &now, w->taken_ns))
			continue;
		moved = true;
		w->taken_ns = cjc_wall_ns();
		cjc_stamp_path(w->path, &w->st);
	}
	return moved;
}

uint64_t cjc_watch_generation(struct cjc_watch *c)
{
	if (!c->off) {
		bool queued = news(c), moved = stamps_moved(c);
		if (queued || moved)
			start_afresh(c); /* a path may lead elsewhere now: all watched again */
	}
	return c->off ? 0 : c->generation;
}

static bool open_inotify(struct cjc_watch *c)
{
	c->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	struct epoll_event e = { .events = EPOLLIN, .data.fd = c->fd };
	if (c->fd >= 0 && !epoll_ctl(c->ready, EPOLL_CTL_ADD, c->fd, &e))
		return true;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	return false;
}

static struct watched *watched(const struct cjc_watch *c, const char *path)
{
	for (struct watched *w = c->buckets[bucket_of(path)]; w; w = w->next)
		if (!strcmp(w->path, path))
			return w;
	return NULL;
}

static struct watched *add_watched(struct cjc_watch *c, const char *path, int wd)
{
	struct watched *w = cjc_xcalloc(1, sizeof *w);
	w->wd = wd;
	unsigned b = bucket_of(path);
	w->path = cjc_xstrdup(path);
	w->next = c->buckets[b];
	c->buckets[b] = w;
	c->nwatched++;
	return w;
}

/* Stamps path (stat'ed at each ask from now); false past MAX_STAMPED. */
static bool stamp(struct cjc_watch *c, const char *path)
{
	if (c->nstamped >= MAX_STAMPED)
		return false;
	struct watched *w = add_watched(c, path, -1);
	w->stamped = true;
	w->taken_ns = cjc_wall_ns();
	cjc_stamp_path(path, &w->st);
	c->stamped[c->nstamped++] = w;
	return true;
}

/* Watches dir (where it leads, when a link), or stamps it on a file system
 * inotify cannot vouch for; NULL to give up. */
static struct watched *watch_dir(struct cjc_watch *c, const char *dir)
{
	struct statfs fs;
	if (c->nwatched >= MAX_WATCHED || statfs(dir, &fs))
		return NULL;
	if (!local_kind((long)fs.f_type))
		return stamp(c, dir) ? watched(c, dir) : NULL;
	if (c->fd < 0 && !open_inotify(c))
		return NULL;
	int wd = inotify_add_watch(c->fd, dir, DIR_EVENTS);
	return wd < 0 ? NULL : add_watched(c, dir, wd);
}

/* A file itself, once: watched (a write through another of its names, a
 * hard link elsewhere, reaches no directory's watch) where its directory
 * is, else stamped (its writes change no directory's stamp either). */
static bool watch_file(struct cjc_watch *c, const char *file)
{
	const char *slash = strrchr(file, '/');
	char dir[PATH_MAX];
	size_t n = slash == file ? 1 : (size_t)(slash - file);
	if (!slash || n >= sizeof dir)
		return false;
	memcpy(dir, file, n);
	dir[n] = '\0';
	struct watched *parent = watched(c, dir);
	if (!parent || watched(c, file))
		return parent != NULL;
	if (parent->stamped)
		return stamp(c, file);
	int wd = c->nwatched < MAX_WATCHED ? inotify_add_watch(c->fd, file, FILE_EVENTS) : -1;
	return wd >= 0 && add_watched(c, file, wd);
}

static bool watch_path(struct cjc_watch *c, const char *path, int depth);

/* Where the link at path leads, one step (a link in a chain of links is
 * watched itself, not only where the chain ends); false when it cannot be
 * read or the result does not fit. */
static bool link_target(const char *path, char out[PATH_MAX])
{
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof target - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	size_t dir = (size_t)(strrchr(path, '/') - path); /* path is absolute */
	int w = target[0] == '/' ? snprintf(out, PATH_MAX, "%s", target)
				 : snprintf(out, PATH_MAX, "%.*s/%s", (int)dir, path, target);
	return w > 0 && w < PATH_MAX;
}

/* One step down a path: prefix, a directory on it or the file it ends in.
 * 1: watched (and where it leads, when a link), go on, *dir set; 0:
 * nothing to watch past it (a file, or nothing there: its parent's watch
 * sees one come); -1: give up. */
static int watch_step(struct cjc_watch *c, const char *prefix, int depth, struct watched **dir)
{
	if ((*dir = watched(c, prefix)))
		return 1;
	struct stat l, s;
	if (lstat(prefix, &l))
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (S_ISLNK(l.st_mode)) {
		char real[PATH_MAX];
		if (!link_target(prefix, real) || !watch_path(c, real, depth + 1))
			return -1;
	}
	if (stat(prefix, &s))
		return 0;
	if (!S_ISDIR(s.st_mode))
		return watch_file(c, prefix) ? 0 : -1;
	return (*dir = watch_dir(c, prefix)) ? 1 : -1;
}

/* Watches each directory path is reached through, from / down, and where
 * its links lead; false to give up. */
static bool watch_path(struct cjc_watch *c, const char *path, int depth)
{
	char prefix[PATH_MAX];
	size_t len = strlen(path);
	struct watched *parent;
	if (path[0] != '/' || depth > 8 || len >= sizeof prefix ||
	    watch_step(c, "/", depth, &parent) < 0)
		return false;
	for (size_t k = 1, name = 1; k <= len; k++) {
		if (path[k] != '/' && path[k] != '\0')
			continue;
		if (path[k - 1] != '/') { /* the component path[name..k) */
			add_name(c, parent->wd, path + name, k - name);
			memcpy(prefix, path, k);
			prefix[k] = '\0';
			int r = watch_step(c, prefix, depth, &parent);
			if (r <= 0)
				return r == 0;
		}
		name = k + 1;
	}
	return true;
}

/* The generation before and after the watches must be one: news between
 * them started afresh, and the watches just made are gone with it. */
uint64_t cjc_watch_paths(struct cjc_watch *c, const char *const *paths, size_t n)
{
	uint64_t before = cjc_watch_generation(c);
	bool ok = before != 0;
	errno = 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = watch_path(c, paths[i], 0);
	if (!ok && errno == ENOSPC)
		give_up(c); /* the watch limit: every later watch would fail too */
	return ok && cjc_watch_generation(c) == before ? before : 0;
}

size_t cjc_watch_count(const struct cjc_watch *c)
{
	return c->nwatched;
}

struct cjc_watch *cjc_watch_open(uint64_t first)
{
	struct cjc_watch *c = cjc_xcalloc(1, sizeof *c);
	c->generation = first ? first : 1;
	c->off = !open_signal(c);
	return c;
}

void cjc_watch_close(struct cjc_watch *c)
{
	if (!c)
		return;
	close_signal(c);
	forget_watched(c);
	free(c);
}
