#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/oom.h"

/* Reads to the end, or fails with EFBIG past max bytes. */
static int read_up_to(int fd, size_t max, struct cjc_buf *out)
{
	for (;;) {
		if (!out->data || out->cap - out->len < 2) /* room for a byte and the NUL */
			cjc_buf_grow(out, 65536);
		ssize_t n = read(fd, out->data + out->len, out->cap - out->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		out->len += (size_t)n;
		if (out->len > max) {
			errno = EFBIG;
			return -1;
		}
	}
	out->data[out->len] = '\0';
	return 0;
}

int cjc_read_fd(int fd, struct cjc_buf *out)
{
	return read_up_to(fd, SIZE_MAX, out);
}

int cjc_read_file(const char *path, struct cjc_buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = cjc_read_fd(fd, out);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int cjc_read_regular_fd(int fd, size_t max, struct cjc_buf *out)
{
	struct stat st;
	if (fstat(fd, &st))
		return -1;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		return -1;
	}
	if ((uint64_t)st.st_size > max) {
		errno = EFBIG;
		return -1;
	}
	cjc_buf_grow(out, (size_t)st.st_size + 1); /* one read, no copies as it grows */
	return read_up_to(fd, max, out); /* it may grow while we read */
}

int cjc_read_regular_and_close(int fd, size_t max, struct cjc_buf *out)
{
	if (fd < 0)
		return -1;
	int rc = cjc_read_regular_fd(fd, max, out);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

static int keep_regular_stat(int fd, struct stat *st)
{
	if (fd < 0 || (!fstat(fd, st) && S_ISREG(st->st_mode)))
		return fd;
	close(fd);
	errno = EINVAL;
	return -1;
}

int cjc_keep_regular(int fd)
{
	struct stat st;
	return keep_regular_stat(fd, &st);
}

int cjc_open_regular_stat(int dirfd, const char *path, int flags, struct stat *st)
{
	return keep_regular_stat(openat(dirfd, path, flags | O_NONBLOCK | O_CLOEXEC), st);
}

int cjc_open_regular(int dirfd, const char *path, int flags, mode_t mode)
{
	return cjc_keep_regular(openat(dirfd, path, flags | O_NONBLOCK | O_CLOEXEC, mode));
}

int cjc_read_bounded(int dirfd, const char *path, int flags, size_t max, struct cjc_buf *out)
{
	return cjc_read_regular_and_close(openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | flags),
					  max, out);
}

const char *cjc_stat_others_can_change(const struct stat *st)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return "owned by another user";
	if (S_ISLNK(st->st_mode) || (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)))
		return NULL; /* a link cannot be changed, only replaced; a sticky
				directory lets nobody else replace what we own */
	if (st->st_mode & S_IWOTH)
		return "writable by others";
	if (st->st_mode & S_IWGRP)
		return "writable by its group";
	return NULL;
}

bool cjc_stat_trusted(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_nlink == 1 &&
	       (st->st_uid == geteuid() || st->st_uid == 0) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

bool cjc_fd_trusted(int fd)
{
	struct stat st;
	return !fstat(fd, &st) && cjc_stat_trusted(&st);
}

int cjc_lock_bounded(int fd, int op)
{
	/* 50, 100, 200 ... microseconds: about seven tries, then give up. */
	for (long spent = 0, pause = 50;; spent += pause, pause *= 2) {
		if (!flock(fd, op | LOCK_NB))
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (spent >= CJC_LOCK_BUDGET_US) {
			errno = EWOULDBLOCK;
			return -1;
		}
		if (pause > CJC_LOCK_BUDGET_US - spent)
			pause = CJC_LOCK_BUDGET_US - spent;
		struct timespec ts = { 0, pause * 1000 };
		nanosleep(&ts, NULL);
	}
}

int cjc_write_all(int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int cjc_write_new_file_at(int dirfd, const char *name, const void *p, size_t n, mode_t mode,
			  bool writeback)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -1;
	int rc = cjc_write_all(fd, p, n);
	if (!rc && writeback)
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	int e = errno;
	if (close(fd) && !rc) {
		rc = -1;
		e = errno;
	}
	errno = e;
	return rc;
}

int cjc_write_new_file(const char *path, const void *p, size_t n, mode_t mode)
{
	return cjc_write_new_file_at(AT_FDCWD, path, p, n, mode, false);
}

int cjc_mkdirs(const char *path, mode_t mode)
{
	if (!mkdir(path, mode) || errno == EEXIST)
		return cjc_is_dir(path) ? 0 : (errno = ENOTDIR, -1);
	if (errno != ENOENT)
		return -1;
	char *parent = cjc_dirname(path);
	int rc = strcmp(parent, path) ? cjc_mkdirs(parent, mode) : -1;
	free(parent);
	if (rc)
		return -1;
	if (mkdir(path, mode) && errno != EEXIST)
		return -1;
	return cjc_is_dir(path) ? 0 : (errno = ENOTDIR, -1);
}

int cjc_fsync_at(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int cjc_remove_tree_at(int parent, const char *name)
{
	if (!unlinkat(parent, name, 0) || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (cjc_remove_tree_at(dirfd(d), de->d_name))
			rc = -1;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) && errno != ENOENT)
		rc = -1;
	return rc;
}

int cjc_remove_tree(const char *path)
{
	return cjc_remove_tree_at(AT_FDCWD, path);
}

int cjc_replace_file_at(int dirfd, const char *name, const void *p, size_t n, mode_t mode)
{
	char *tmp = cjc_unique_name(name);
	cjc_tempfile_add_at(dirfd, tmp);
	int rc = cjc_write_new_file_at(dirfd, tmp, p, n, mode, false);
	if (!rc)
		rc = renameat(dirfd, tmp, dirfd, name);
	int e = errno;
	if (rc)
		cjc_tempfile_remove_at(dirfd, tmp);
	else
		cjc_tempfile_forget_at(dirfd, tmp);
	free(tmp);
	errno = e;
	return rc;
}

int cjc_replace_file(const char *path, const void *p, size_t n)
{
	return cjc_replace_file_at(AT_FDCWD, path, p, n, 0666);
}

static char host[HOST_NAME_MAX + 32];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

/* The host name, and the PID namespace its pids are of: a container or an
 * `unshare -p` sharing this host's /tmp or store has pids of its own, and
 * one of its writers alive would look dead here (and ours there). */
static void find_hostname(void)
{
	struct stat st;
	if (gethostname(host, HOST_NAME_MAX) || !host[0])
		strcpy(host, "localhost");
	host[HOST_NAME_MAX] = '\0';
	for (char *s = host; *s; s++)
		if (*s == '/' || *s == '.')
			*s = '_';
	if (!stat("/proc/self/ns/pid", &st))
		snprintf(host + strlen(host), sizeof host - strlen(host), "_pidns%lu",
			 (unsigned long)st.st_ino);
}

const char *cjc_hostname(void)
{
	pthread_once(&host_once, find_hostname); /* eviction's threads name bins at once */
	return host;
}

char *cjc_unique_name(const char *prefix)
{
	uint32_t r = 0;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = (uint32_t)cjc_wall_ns() ^ (uint32_t)getpid() << 16;
	return cjc_xasprintf("%s.%s.%ld.%08x", prefix, cjc_hostname(), (long)getpid(), r);
}

bool cjc_name_orphaned(const char *name, time_t mtime, int64_t age)
{
	char *copy = cjc_xstrdup(name);
	char *rand_part = strrchr(copy, '.'), *pid_part = NULL, *host = NULL;
	bool gone = false;
	if (rand_part && strlen(rand_part + 1) == 8 && strspn(rand_part + 1, "0123456789abcdef") == 8) {
		*rand_part = '\0';
		pid_part = strrchr(copy, '.');
	}
	if (pid_part && pid_part[1] && strspn(pid_part + 1, "0123456789") == strlen(pid_part + 1)) {
		*pid_part++ = '\0';
		host = strrchr(copy, '.');
		host = host ? host + 1 : copy;
	}
	if (host && !strcmp(host, cjc_hostname())) {
		long pid = strtol(pid_part, NULL, 10);
		gone = pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH;
	} else if (host) {
		gone = time(NULL) - mtime >= age;
	}
	free(copy);
	return gone;
}

char *cjc_getpwd(char *buf, size_t size)
{
	const char *pwd = getenv("PWD");
	struct stat named, dot;
	if (pwd && pwd[0] == '/' && strlen(pwd) < size && !stat(pwd, &named) && !stat(".", &dot) &&
	    named.st_dev == dot.st_dev && named.st_ino == dot.st_ino)
		return memcpy(buf, pwd, strlen(pwd) + 1);
	return getcwd(buf, size);
}

char *cjc_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return cjc_xstrdup(".");
	while (slash > path && slash[-1] == '/')
		slash--;
	if (slash == path)
		return cjc_xstrdup("/");
	return cjc_xstrndup(path, (size_t)(slash - path));
}

char *cjc_path_join(const char *dir, const char *name)
{
	if (!dir[0] || !strcmp(dir, "."))
		return cjc_xstrdup(name);
	if (cjc_ends_with(dir, "/"))
		return cjc_xasprintf("%s%s", dir, name);
	return cjc_xasprintf("%s/%s", dir, name);
}

bool cjc_is_dir(const char *path)
{
	struct stat st;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

char *cjc_find_program(const char *name)
{
	return cjc_find_program_if(name, NULL);
}

char *cjc_find_program_if(const char *name, bool (*also)(const char *path))
{
	if (strchr(name, '/'))
		return cjc_xstrdup(name);
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		char *dir = n ? cjc_xstrndup(path, n) : cjc_xstrdup(".");
		char *full = cjc_path_join(dir, name);
		free(dir);
		struct stat st;
		if (!stat(full, &st) && S_ISREG(st.st_mode) && !access(full, X_OK) &&
		    (!also || also(full)))
			return full;
		free(full);
		path += n;
		if (*path == ':')
			path++;
	}
	return NULL;
}

/*
 * The temporary-file registry: a small array; signal-safe removal.  Each
 * entry is a name relative to a directory: AT_FDCWD for the path forms, or
 * the registry's own duplicate of the caller's directory fd (close-on-exec,
 * so no child inherits it), known again by its device and inode.
 */
struct tempfile {
	char *path;
	int dirfd;
	dev_t dev;
	ino_t ino;
	pid_t owner;
};
static struct tempfile *temps;
static size_t ntemps, captemps;
static bool handlers_installed, without_signals;
static pthread_mutex_t temps_lock = PTHREAD_MUTEX_INITIALIZER;

static void remove_registered(void)
{
	pid_t me = getpid();
	for (size_t i = 0; i < ntemps; i++)
		if (temps[i].path && temps[i].owner == me)
			cjc_remove_tree_at(temps[i].dirfd, temps[i].path);
}

static void on_signal(int sig)
{
	remove_registered();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_handlers(void)
{
	if (handlers_installed)
		return;
	handlers_installed = true;
	atexit(remove_registered);
	if (without_signals)
		return;
	int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT };
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigaction(sigs[i], &sa, NULL);
	}
}

/* Which directory dirfd is open on (AT_FDCWD: none, all zero). */
static void identify(int dirfd, dev_t *dev, ino_t *ino)
{
	struct stat st;
	*dev = 0;
	*ino = 0;
	if (dirfd != AT_FDCWD && !fstat(dirfd, &st)) {
		*dev = st.st_dev;
		*ino = st.st_ino;
	}
}

void cjc_tempfile_add_at(int dirfd, const char *path)
{
	/* A duplicate that could not be made (no fd left) is -1: then only the
	 * caller's own remove removes it, through the caller's fd. */
	int dup_fd = dirfd == AT_FDCWD ? AT_FDCWD : fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	dev_t dev;
	ino_t ino;
	identify(dirfd, &dev, &ino);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	/* with signals blocked and the lock held, nothing here may be abandoned
	 * (oom.h): a temporary that cannot be listed is removed by age, later */
	pthread_mutex_lock(&temps_lock);
	install_handlers();
	char *copy = strdup(path);
	if (copy && ntemps == captemps) {
		size_t cap = captemps ? captemps * 2 : 8;
		struct tempfile *t = calloc(cap, sizeof *t);
		if (t && ntemps)
			memcpy(t, temps, ntemps * sizeof *t);
		if (t) {
			free(temps);
			temps = t;
			captemps = cap;
		}
	}
	if (!copy || ntemps == captemps) {
		free(copy);
		if (dup_fd >= 0)
			close(dup_fd);
		pthread_mutex_unlock(&temps_lock);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return;
	}
	temps[ntemps].path = copy;
	temps[ntemps].dirfd = dup_fd;
	temps[ntemps].dev = dev;
	temps[ntemps].ino = ino;
	temps[ntemps].owner = getpid();
	ntemps++;
	pthread_mutex_unlock(&temps_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void cjc_tempfile_without_signals(void)
{
	pthread_mutex_lock(&temps_lock);
	without_signals = true;
	pthread_mutex_unlock(&temps_lock);
}

void cjc_tempfile_add(const char *path)
{
	cjc_tempfile_add_at(AT_FDCWD, path);
}

static void drop(int dirfd, const char *path, bool remove)
{
	dev_t dev;
	ino_t ino;
	identify(dirfd, &dev, &ino);
	struct tempfile gone = { .path = NULL };
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(&temps_lock); /* nothing under it allocates (oom.h) */
	for (size_t i = 0; i < ntemps; i++) {
		if (temps[i].path && !strcmp(temps[i].path, path) && temps[i].dev == dev &&
		    temps[i].ino == ino && (temps[i].dirfd == AT_FDCWD) == (dirfd == AT_FDCWD)) {
			gone = temps[i];
			temps[i] = temps[--ntemps];
			break;
		}
	}
	pthread_mutex_unlock(&temps_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (gone.path && remove) /* no longer listed: a signal now leaves it to age */
		cjc_remove_tree_at(dirfd, gone.path);
	if (gone.path && gone.dirfd >= 0)
		close(gone.dirfd);
	free(gone.path);
}

void cjc_tempfile_remove_at(int dirfd, const char *path)
{
	drop(dirfd, path, true);
}

void cjc_tempfile_forget_at(int dirfd, const char *path)
{
	drop(dirfd, path, false);
}

void cjc_tempfile_remove(const char *path)
{
	drop(AT_FDCWD, path, true);
}

void cjc_tempfile_forget(const char *path)
{
	drop(AT_FDCWD, path, false);
}

void cjc_read_memfd(int fd, struct cjc_buf *out)
{
	lseek(fd, 0, SEEK_SET);
	(void)cjc_read_fd(fd, out);
	close(fd);
}

/* The walk of cjc_open_dir_safe: the directory open (O_PATH) at fd, shown
 * as shown, and what is left of the path to walk. */
struct safe_walk {
	int fd;
	struct cjc_buf shown;
	char *rest;
	int links;
	bool make;
	mode_t last_mode;
	struct cjc_buf *why;
};

static bool yours_or_roots(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

/* Refuses with EPERM, saying why about the path walked so far. */
static int unsafe(struct safe_walk *w, const char *what)
{
	if (w->why)
		cjc_buf_addf(w->why, "%s %s", w->shown.len ? w->shown.data : "/", what);
	errno = EPERM;
	return -1;
}

/* Whether the caller is a member of group gid. */
static bool in_group(gid_t gid)
{
	gid_t groups[256];
	int n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return gid == getegid();
}

/* A directory on the way is yours or root's and nobody else can write it,
 * unless sticky.  The last (the store's own) may be a group store: the
 * group's to write, and then another member's (whoever made it for the
 * team) when you are in that group, since its owner can do nothing there
 * that the members cannot. */
static int check_dir(struct safe_walk *w, const struct stat *st, bool last)
{
	mode_t others = last ? S_IWOTH : S_IWGRP | S_IWOTH;
	bool group_store = last && (st->st_mode & S_IWGRP) && in_group(st->st_gid);
	if (!S_ISDIR(st->st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	if (!yours_or_roots(st->st_uid) && !group_store)
		return unsafe(w, "belongs to another user: use a directory of yours or root's");
	if ((st->st_mode & others) && !(st->st_mode & S_ISVTX))
		return unsafe(w, "can be written by others and is not sticky: chmod go-w it");
	return 0;
}

/* Moves to the name c (a directory, or a link followed when it is yours or
 * root's); 0, or -1 with errno. */
static int step(struct safe_walk *w, const char *c, bool last)
{
	int nfd = openat(w->fd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (nfd < 0 && errno == ENOENT && w->make) {
		if (mkdirat(w->fd, c, last ? w->last_mode : 0755) && errno != EEXIST)
			return -1;
		nfd = openat(w->fd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	if (nfd < 0)
		return -1;
	struct stat st;
	int rc = fstat(nfd, &st);
	if (strcmp(c, "..") == 0) {
		char *slash = strrchr(w->shown.data ? w->shown.data : "", '/');
		w->shown.len = slash ? (size_t)(slash - w->shown.data) : 0;
		if (w->shown.data)
			w->shown.data[w->shown.len] = '\0';
	} else {
		cjc_buf_addf(&w->shown, "/%s", c);
	}
	if (!rc && S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = -1;
		if (!yours_or_roots(st.st_uid))
			rc = unsafe(w, "is a link owned by another user: use a directory of yours or root's");
		else if (++w->links > 40 || (n = readlinkat(nfd, "", target, sizeof target - 1)) < 0)
			rc = (errno = n < 0 ? errno : ELOOP, -1);
		close(nfd);
		if (rc)
			return -1;
		target[n] = '\0';
		char *rest = cjc_xasprintf("%s/%s", target, w->rest);
		free(w->rest);
		w->rest = rest;
		char *slash = strrchr(w->shown.data, '/');
		w->shown.len = (size_t)(slash - w->shown.data);
		w->shown.data[w->shown.len] = '\0';
		if (target[0] == '/') {
			close(w->fd);
			w->shown.len = 0;
			w->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			return w->fd < 0 ? -1 : 0;
		}
		return 0;
	}
	if (rc || check_dir(w, &st, last)) {
		int e = errno;
		close(nfd);
		errno = e;
		return -1;
	}
	close(w->fd);
	w->fd = nfd;
	return 0;
}

/* The next name of the path left, cut from it (NULL at its end); *last when
 * no name follows. */
static char *next_name(struct safe_walk *w, bool *last)
{
	char *p = w->rest;
	while (*p == '/' || (p[0] == '.' && (p[1] == '/' || !p[1])))
		p++;
	if (!*p)
		return NULL;
	size_t n = strcspn(p, "/");
	char *name = cjc_xstrndup(p, n);
	char *q = p + n;
	while (*q == '/' || (q[0] == '.' && (q[1] == '/' || !q[1])))
		q++;
	*last = !*q;
	memmove(w->rest, p + n, strlen(p + n) + 1);
	return name;
}

int cjc_open_dir_safe(const char *path, bool make, mode_t last_mode, struct cjc_buf *why)
{
	char cwd[PATH_MAX];
	if (path[0] != '/' && !getcwd(cwd, sizeof cwd))
		return -1;
	struct safe_walk w = { .make = make, .last_mode = last_mode, .why = why };
	w.rest = path[0] == '/' ? cjc_xstrdup(path) : cjc_xasprintf("%s/%s", cwd, path);
	w.fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	int rc = w.fd < 0 || fstat(w.fd, &st) ? -1 : check_dir(&w, &st, false);
	bool last = false;
	for (char *c; !rc && (c = next_name(&w, &last)); free(c))
		rc = step(&w, c, last);
	int e = errno;
	free(w.rest);
	cjc_buf_release(&w.shown);
	if (rc && w.fd >= 0)
		close(w.fd);
	errno = e;
	return rc ? -1 : w.fd;
}

/* $XDG_RUNTIME_DIR/cudajitcache when XDG_RUNTIME_DIR is this user's; else NULL. */
static char *session_run_path(void)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	if (run && run[0] == '/' && !stat(run, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		return cjc_path_join(run, "cudajitcache");
	return NULL;
}

/* What the name at path is, when it is not a run-time directory of ours. */
static void say_not_private(const char *path, const struct stat *st, struct cjc_buf *why)
{
	const char *kind = S_ISDIR(st->st_mode) ? "a directory" : "a file";
	if (S_ISLNK(st->st_mode))
		kind = "a link";
	char buf[1024];
	struct passwd pw, *owner = NULL;
	if (st->st_uid == geteuid() && S_ISDIR(st->st_mode)) {
		cjc_buf_addf(why, "%s is open to others (mode %04o)", path,
			     (unsigned)(st->st_mode & 07777));
		return;
	}
	if (st->st_uid == geteuid()) {
		cjc_buf_addf(why, "%s is %s of yours, not a directory", path, kind);
		return;
	}
	(void)getpwuid_r(st->st_uid, &pw, buf, sizeof buf, &owner);
	cjc_buf_addf(why, "%s is %s of %s (uid %u), not yours", path, kind,
		     owner ? owner->pw_name : "another user", (unsigned)st->st_uid);
}

/* The directory at path (O_PATH) when it is this user's, not a link, and
 * closed to group and others; else -1, and why. */
static int open_private_dir(const char *path, struct cjc_buf *why)
{
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		cjc_buf_addf(why, "%s cannot be made: %s", path, strerror(errno));
	} else if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		say_not_private(path, &st, why);
	} else {
		return fd;
	}
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Whether path is a name record_new_run_dir makes (mkdtemp's). */
static bool made_run_dir_name(const char *path)
{
	char prefix[64];
	int n = snprintf(prefix, sizeof prefix, "/tmp/cudajitcache-%u-", (unsigned)geteuid());
	static const char mkdtemp_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "abcdefghijklmnopqrstuvwxyz0123456789";
	return !strncmp(path, prefix, (size_t)n) && strlen(path + n) == 6 &&
	       strspn(path + n, mkdtemp_chars) == 6;
}

/* The private directory the record names, or -1. */
static int recorded_run_dir(int records, const char *record)
{
	struct cjc_buf path = CJC_BUF_INIT, why = CJC_BUF_INIT;
	struct stat st;
	int fd = -1, rec = cjc_open_regular_stat(records, record, O_RDONLY | O_NOFOLLOW, &st);
	if (rec >= 0 && !cjc_stat_trusted(&st))
		close(rec), rec = -1;
	if (rec >= 0 && !cjc_read_regular_and_close(rec, 256, &path) && path.len &&
	    made_run_dir_name(path.data))
		fd = open_private_dir(path.data, &why);
	cjc_buf_release(&path);
	cjc_buf_release(&why);
	return fd;
}

/* A new private directory, recorded; or -1, and why. */
static int record_new_run_dir(int records, const char *record, struct cjc_buf *made,
			      struct cjc_buf *why)
{
	cjc_buf_addf(made, "/tmp/cudajitcache-%u-XXXXXX", (unsigned)geteuid());
	if (!mkdtemp(made->data)) {
		cjc_buf_addf(why, "cannot make %s: %s", made->data, strerror(errno));
		return -1;
	}
	int fd = open_private_dir(made->data, why);
	if (fd >= 0 && cjc_replace_file_at(records, record, made->data, made->len, 0600)) {
		cjc_buf_addf(why, "cannot record %s: %s", made->data, strerror(errno));
		close(fd);
		(void)rmdir(made->data);
		fd = -1;
	}
	return fd;
}

/* Where the records are: the cache directory of the passwd's home (not
 * $HOME: the helper has none, and `sudo -E` brings another user's), its
 * path in *cache; or -1, and why. */
static int open_run_records(char **cache, struct cjc_buf *why)
{
	char buf[4096];
	struct passwd pw, *me = NULL;
	(void)getpwuid_r(geteuid(), &pw, buf, sizeof buf, &me);
	*cache = NULL;
	if (!me || me->pw_dir[0] != '/' || !cjc_is_dir(me->pw_dir)) {
		cjc_buf_adds(why, "this user has no home directory to record one in");
		return -1;
	}
	*cache = cjc_path_join(me->pw_dir, ".cache");
	int fd = cjc_open_dir_safe(*cache, true, 0700, why);
	if (fd < 0 && !why->len)
		cjc_buf_addf(why, "cannot make %s: %s", *cache, strerror(errno));
	return fd;
}

/* The directory used instead of the usual one, which is not private (why
 * says how): the one recorded for this host, else a new one.  news says
 * when a new one is made, or none can be. */
static int private_run_dir(const char *why, struct cjc_buf *news)
{
	struct cjc_buf trouble = CJC_BUF_INIT, made = CJC_BUF_INIT;
	char *cache, *record = cjc_xasprintf("cudajitcache-run.%s", cjc_hostname());
	int fd = -1, records = open_run_records(&cache, &trouble);
	int lock = records < 0 ? -1 : openat(records, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock >= 0) {
		(void)cjc_lock_bounded(lock, LOCK_EX); /* two at once: a record lost, nothing worse */
		cjc_oom_fd_held(lock);
	}
	if (records >= 0 && (fd = recorded_run_dir(records, record)) < 0)
		fd = record_new_run_dir(records, record, &made, &trouble);
	if (fd >= 0 && made.len)
		cjc_buf_addf(news, "run-time directory %s: using %s instead (recorded in %s/%s)",
			     why, made.data, cache, record);
	else if (fd < 0)
		cjc_buf_addf(news, "run-time directory %s, and no private one is used instead: %s",
			     why, trouble.data);
	if (lock >= 0) {
		cjc_oom_fd_let_go(lock);
		close(lock);
	}
	if (records >= 0)
		close(records);
	free(cache);
	free(record);
	cjc_buf_release(&trouble);
	cjc_buf_release(&made);
	return fd;
}

int cjc_user_run_dir_told(struct cjc_buf *news)
{
	char *session = session_run_path();
	char *dir = session ? session : cjc_xasprintf("/tmp/cudajitcache-%u", (unsigned)geteuid());
	struct cjc_buf why = CJC_BUF_INIT, ignored = CJC_BUF_INIT;
	(void)mkdir(dir, 0700);
	int fd = open_private_dir(dir, &why);
	if (fd < 0 && session) /* not a name anyone else can take: as it is */
		cjc_buf_addf(news ? news : &ignored, "run-time directory %s; none is used", why.data);
	else if (fd < 0)
		fd = private_run_dir(why.data, news ? news : &ignored);
	free(dir);
	cjc_buf_release(&why);
	cjc_buf_release(&ignored);
	return fd;
}

int cjc_user_run_dir(void)
{
	return cjc_user_run_dir_told(NULL);
}
