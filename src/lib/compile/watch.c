/*
 * The files a compile looks at (watch.h): the recorder.  Each function
 * below is called where NVRTC called the C library's (through the shim's
 * audit module, or a slot cjc_watch_bind wrote); it does what the C
 * library does, and then records what NVRTC learnt about the file system
 * for the compile being watched on this thread.
 *
 * Sound by refusal: what cannot be keyed by content (a file written, a
 * directory listed or changed, a program run, a path relative to some
 * other directory's fd, an error other than "not there") makes the compile
 * unkeyable, and so does any lookup on a thread that is neither watched
 * nor ignored while a compile is being watched: it might be that compile's.
 */
#include "compile/watch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/oom.h"
#include "compile/got.h"

static __thread struct cjc_watch *current;
static __thread bool ignored;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cjc_watch *watched; /* under lock */
static atomic_int nwatched;

static void unkeyable(struct cjc_watch *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The recorder runs inside NVRTC's calls, which nothing may jump over
 * (base/oom.h): it allocates with the C library's calls, and a compile
 * whose reads it could not record is unkeyable for this reason. */
static char out_of_memory[] = "out of memory while recording what NVRTC read";

static void unkeyable(struct cjc_watch *w, const char *fmt, ...)
{
	if (w->unkeyable)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&w->unkeyable, fmt, ap) < 0)
		w->unkeyable = out_of_memory;
	va_end(ap);
}

/* A lookup by a thread nobody watches, while compiles are being watched:
 * it could be one of theirs. */
static void stray(const char *what, const char *path)
{
	if (ignored || !atomic_load(&nwatched))
		return;
	cjc_oom_lock(&lock);
	for (struct cjc_watch *w = watched; w; w = w->next)
		unkeyable(w, "NVRTC %s %s on another thread during the compile", what,
			  path ? path : "");
	cjc_oom_unlock(&lock);
}

static void found(struct cjc_watch *w, const char *path, const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		return; /* a directory's being there: what NVRTC then reads in it is recorded */
	if (!S_ISREG(st->st_mode)) {
		unkeyable(w, "NVRTC looked at %s, which is not a regular file", path);
		return;
	}
	struct cjc_stamp *stamps = realloc(w->stamps, (w->found.n + 1) * sizeof *w->stamps);
	if (stamps)
		w->stamps = stamps;
	if (!stamps || !cjc_strvec_try_push(&w->found, path)) {
		unkeyable(w, "%s", out_of_memory);
		return;
	}
	cjc_stamp_of(st, &w->stamps[w->found.n - 1]);
}

/* After a call that looked path up: rc, and errno e when it failed. */
static void looked_up(const char *what, const char *path, int rc, int e, const struct stat *st)
{
	struct cjc_watch *w = current;
	if (!w) {
		stray(what, path);
		return;
	}
	if (!path)
		return;
	if (!rc)
		found(w, path, st);
	else if (e == ENOENT || e == ENOTDIR) {
		if (!cjc_strvec_try_push(&w->absent, path))
			unkeyable(w, "%s", out_of_memory);
	} else
		unkeyable(w, "NVRTC %s %s: %s", what, path, strerror(e));
}

/* After an open of path: fd, and errno e when it failed. */
static void opened(const char *path, int flags, int fd, int e)
{
	struct cjc_watch *w = current;
	if (!w) {
		stray("opened", path);
		return;
	}
	struct stat st;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)))
		unkeyable(w, "NVRTC opened %s to write it", path);
	else if (fd < 0)
		looked_up("opened", path, -1, e, NULL);
	else if (fstat(fd, &st))
		unkeyable(w, "cannot tell what NVRTC opened as %s: %s", path, strerror(errno));
	else
		found(w, path, &st);
}

/* ---- watch.h's functions ---- */

/* The C library's stat of a given version: that of the kernel's own
 * struct stat on the architectures the binders know (audit.c, got.c). */
#if defined(__x86_64__)
#define STAT_VER 1
#else
#define STAT_VER 0
#endif

static int with_stat(const char *what, int ver, const char *path, struct stat *s, bool follow)
{
	if (ver != STAT_VER) {
		errno = EINVAL;
		return -1;
	}
	int rc = follow ? stat(path, s) : lstat(path, s), e = errno;
	looked_up(what, path, rc, e, s);
	errno = e;
	return rc;
}

static int w_xstat(int v, const char *p, struct stat *s)
{
	return with_stat("looked up", v, p, s, true);
}
static int w_xstat64(int v, const char *p, struct stat64 *s)
{
	return with_stat("looked up", v, p, (struct stat *)s, true);
}
static int w_lxstat(int v, const char *p, struct stat *s)
{
	return with_stat("looked up", v, p, s, false);
}
static int w_lxstat64(int v, const char *p, struct stat64 *s)
{
	return with_stat("looked up", v, p, (struct stat *)s, false);
}
static int w_stat(const char *p, struct stat *s)
{
	return with_stat("looked up", STAT_VER, p, s, true);
}
static int w_stat64(const char *p, struct stat64 *s)
{
	return with_stat("looked up", STAT_VER, p, (struct stat *)s, true);
}
static int w_lstat(const char *p, struct stat *s)
{
	return with_stat("looked up", STAT_VER, p, s, false);
}
static int w_lstat64(const char *p, struct stat64 *s)
{
	return with_stat("looked up", STAT_VER, p, (struct stat *)s, false);
}

static int w_access(const char *path, int mode)
{
	int rc = access(path, mode), e = errno;
	struct stat st;
	if (!rc && !stat(path, &st))
		looked_up("looked up", path, 0, 0, &st);
	else
		looked_up("looked up", path, -1, rc ? e : errno, NULL);
	errno = e;
	return rc;
}

static int open_as(int dir, const char *path, int flags, mode_t mode)
{
	int fd = openat(dir, path, flags, mode), e = errno;
	if (dir != AT_FDCWD && path && path[0] != '/') {
		if (current)
			unkeyable(current, "NVRTC opened %s in a directory it holds open", path);
		else
			stray("opened", path);
	} else {
		opened(path, flags, fd, e);
	}
	errno = e;
	return fd;
}

static int w_open(const char *p, int f, mode_t m)
{
	return open_as(AT_FDCWD, p, f, m);
}
static int w_open64(const char *p, int f, mode_t m)
{
	return open_as(AT_FDCWD, p, f, m);
}
static int w_open_2(const char *p, int f)
{
	return open_as(AT_FDCWD, p, f, 0);
}
static int w_open64_2(const char *p, int f)
{
	return open_as(AT_FDCWD, p, f, 0);
}
static int w_openat(int d, const char *p, int f, mode_t m)
{
	return open_as(d, p, f, m);
}
static int w_openat64(int d, const char *p, int f, mode_t m)
{
	return open_as(d, p, f, m);
}

static FILE *fopen_as(const char *path, const char *mode)
{
	FILE *f = fopen(path, mode);
	int e = errno;
	bool read_only = mode && mode[0] == 'r' && !strchr(mode, '+');
	opened(path, read_only ? O_RDONLY : O_WRONLY, f ? fileno(f) : -1, e);
	errno = e;
	return f;
}

static FILE *w_fopen(const char *p, const char *m)
{
	return fopen_as(p, m);
}
static FILE *w_fopen64(const char *p, const char *m)
{
	return fopen_as(p, m);
}

static DIR *w_opendir(const char *path)
{
	DIR *d = opendir(path);
	int e = errno;
	if (current)
		unkeyable(current, "NVRTC listed the directory %s", path);
	else
		stray("listed", path);
	errno = e;
	return d;
}

static ssize_t w_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlink(path, buf, size);
	int e = errno;
	struct stat st;
	if (n >= 0 || e == EINVAL) /* a link, or something that is not one: what NVRTC opens next is
				      recorded */
		looked_up("looked up", path, lstat(path, &st) ? -1 : 0, errno, &st);
	else
		looked_up("looked up", path, -1, e, NULL);
	errno = e;
	return n;
}

static char *w_realpath(const char *path, char *resolved)
{
	char *r = realpath(path, resolved);
	int e = errno;
	if (!r)
		looked_up("resolved", path, -1, e, NULL);
	else if (!current)
		stray("resolved", path);
	errno = e;
	return r;
}

/* The forbidden ones: each makes the compile unkeyable, then does its work. */
static void forbidden(const char *name)
{
	if (current)
		unkeyable(current, "NVRTC called %s()", name);
	else
		stray(name, NULL);
}

static int w_chdir(const char *p)
{
	forbidden("chdir");
	return chdir(p);
}
static int w_mkdir(const char *p, mode_t m)
{
	forbidden("mkdir");
	return mkdir(p, m);
}
static int w_remove(const char *p)
{
	forbidden("remove");
	return remove(p);
}
static int w_rmdir(const char *p)
{
	forbidden("rmdir");
	return rmdir(p);
}
static int w_unlink(const char *p)
{
	forbidden("unlink");
	return unlink(p);
}
static int w_rename(const char *a, const char *b)
{
	forbidden("rename");
	return rename(a, b);
}
static int w_creat(const char *p, mode_t m)
{
	forbidden("creat");
	return creat(p, m);
}
static FILE *w_freopen(const char *p, const char *m, FILE *f)
{
	forbidden("freopen");
	return freopen(p, m, f);
}
static int w_scandir(const char *p, struct dirent ***l, int (*s)(const struct dirent *),
		     int (*c)(const struct dirent **, const struct dirent **))
{
	forbidden("scandir");
	return scandir(p, l, s, c);
}
static int w_execv(const char *p, char *const *a)
{
	forbidden("execv");
	return execv(p, a);
}
static int w_execve(const char *p, char *const *a, char *const *e)
{
	forbidden("execve");
	return execve(p, a, e);
}
static int w_execvp(const char *p, char *const *a)
{
	forbidden("execvp");
	return execvp(p, a);
}
static int w_system(const char *c)
{
	forbidden("system");
	return system(c);
}
static pid_t w_fork(void)
{
	forbidden("fork");
	return fork();
}

static const struct cjc_watch_table table = {
	.version = CJC_WATCH_VERSION,
	.__xstat = w_xstat,
	.__xstat64 = w_xstat64,
	.__lxstat = w_lxstat,
	.__lxstat64 = w_lxstat64,
	.stat = w_stat,
	.stat64 = w_stat64,
	.lstat = w_lstat,
	.lstat64 = w_lstat64,
	.access = w_access,
	.open = w_open,
	.open64 = w_open64,
	.__open_2 = w_open_2,
	.__open64_2 = w_open64_2,
	.openat = w_openat,
	.openat64 = w_openat64,
	.fopen = w_fopen,
	.fopen64 = w_fopen64,
	.opendir = w_opendir,
	.readlink = w_readlink,
	.realpath = w_realpath,
	.chdir = w_chdir,
	.mkdir = w_mkdir,
	.remove = w_remove,
	.rmdir = w_rmdir,
	.unlink = w_unlink,
	.rename = w_rename,
	.creat = w_creat,
	.freopen = w_freopen,
	.scandir = w_scandir,
	.execv = w_execv,
	.execve = w_execve,
	.execvp = w_execvp,
	.system = w_system,
	.fork = w_fork,
};

const struct cjc_watch_table *cjc_watch_functions(void)
{
	return &table;
}

static void end_on_unwind(void *w)
{
	cjc_watch_end(w);
}

/* A watch ends, and ignoring stops, where the work that began it is
 * abandoned (base/oom.h): nothing is left pointing into its frame. */
void cjc_watch_begin(struct cjc_watch *w)
{
	memset(w, 0, sizeof *w);
	cjc_oom_lock(&lock);
	w->next = watched;
	watched = w;
	cjc_oom_unlock(&lock);
	atomic_fetch_add(&nwatched, 1);
	current = w;
	cjc_oom_undo_push(end_on_unwind, w);
}

void cjc_watch_end(struct cjc_watch *w)
{
	cjc_oom_undo_pop(end_on_unwind, w);
	current = NULL;
	cjc_oom_lock(&lock);
	for (struct cjc_watch **p = &watched; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	cjc_oom_unlock(&lock);
	atomic_fetch_sub(&nwatched, 1);
}

static void stop_ignoring(void *unused)
{
	(void)unused;
	ignored = false;
}

void cjc_watch_ignore(bool on)
{
	ignored = on;
	if (on)
		cjc_oom_undo_push(stop_ignoring, NULL);
	else
		cjc_oom_undo_pop(stop_ignoring, NULL);
}

void cjc_watch_settle(struct cjc_watch *w)
{
	for (size_t i = 0; i < w->found.n && !w->unkeyable; i++) {
		struct stat st;
		struct cjc_stamp now;
		if (stat(w->found.v[i], &st)) {
			unkeyable(w, "%s changed during the compile", w->found.v[i]);
			break;
		}
		cjc_stamp_of(&st, &now);
		if (memcmp(&now, &w->stamps[i], sizeof now))
			unkeyable(w, "%s changed during the compile", w->found.v[i]);
	}
	free(w->stamps);
	w->stamps = NULL;
	cjc_strvec_sort_unique(&w->found);
	cjc_strvec_sort_unique(&w->absent);
	/* a name both absent and found: created during the compile */
	for (size_t i = 0, k = 0; i < w->found.n && k < w->absent.n;) {
		int c = strcmp(w->found.v[i], w->absent.v[k]);
		if (!c) {
			unkeyable(w, "%s appeared during the compile", w->found.v[i]);
			break;
		}
		c < 0 ? i++ : k++;
	}
}

void cjc_watch_release(struct cjc_watch *w)
{
	cjc_strvec_clear(&w->found);
	cjc_strvec_clear(&w->absent);
	free(w->stamps);
	if (w->unkeyable != out_of_memory)
		free(w->unkeyable);
	memset(w, 0, sizeof *w);
}

/* ---- binding NVRTC's imports to the recorder (the JIT library's way) ---- */

#define WATCH_NAME(name, ret, params, args) #name,
static const char *const names[] = { CJC_WATCHED(WATCH_NAME) CJC_FORBIDDEN(WATCH_NAME) };
#undef WATCH_NAME

/* Whether an import is bound into the shim's audit module (src/shim/audit.c):
 * the shim watches that NVRTC itself. */
static bool bound_by_audit(void *value)
{
	Dl_info info;
	if (!dladdr(value, &info) || !info.dli_fname)
		return false;
	const char *base = strrchr(info.dli_fname, '/');
	return cjc_starts_with(base ? base + 1 : info.dli_fname, "libcudajitcache-audit");
}

static int bind_object(void *lib, struct cjc_buf *why)
{
#define WATCH_TARGET(name, ret, params, args) (void *)table.name,
	void *const targets[] = { CJC_WATCHED(WATCH_TARGET) CJC_FORBIDDEN(WATCH_TARGET) };
#undef WATCH_TARGET
	struct cjc_got_slot *slots;
	size_t n;
	if (cjc_got_find(lib, names, sizeof names / sizeof *names, &slots, &n, why))
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		if (bound_by_audit(*slots[i].at))
			rc = -1,
			cjc_buf_addf(why, "NVRTC's %s is bound by the NVRTC shim's audit module",
				     names[slots[i].name]);
	for (size_t i = 0; i < n && !rc; i++)
		rc = cjc_got_write(&slots[i], targets[slots[i].name], why);
	free(slots);
	return rc;
}

int cjc_watch_bind(void *lib, const char *also, struct cjc_buf *why)
{
	static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
	cjc_oom_lock(&bind_lock);
	int rc = bind_object(lib, why);
	if (!rc && also && !access(also, F_OK)) {
		void *more = dlopen(also, RTLD_NOW | RTLD_LOCAL); /* stays loaded: NVRTC's own */
		if (!more)
			rc = -1, cjc_buf_addf(why, "cannot load %s: %s", also, dlerror());
		else
			rc = bind_object(more, why);
	}
	cjc_oom_unlock(&bind_lock);
	return rc;
}
