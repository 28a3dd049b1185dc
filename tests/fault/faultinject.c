/*
 * faultinject.c - an LD_PRELOAD library that makes file-system calls of cjc
 * fail, or stop, for the fault suite.  Nothing else is affected: it acts only
 * in a process named "cjc" (not in nvcc or the host compiler it runs) and
 * only on paths under $CJC_FAULT_DIR (the store).
 *
 *   CJC_FAULT=OP:ERR[:N]   OP: fsync, rename (rename and renameat), write
 *                          (write and pwrite), mkdir (mkdir and mkdirat),
 *                          read (of an entry's output.* only), or exit
 *                          (with STOP only: as the process exits, once
 *                          its own exit handlers have run, so that a test
 *                          can read what its memory keeps); ERR: EIO,
 *                          ENOSPC, EOF (read returns 0, as from a file cut
 *                          short), or STOP (below); N: only the Nth matching
 *                          call (default: every one)
 *   CJC_FAULT_DIR          the directory whose files fail
 *   CJC_FAULT_PATH         only paths that match this fnmatch(3) pattern,
 *                          taken relative to CJC_FAULT_DIR; a `*` matches
 *                          within one name (FNM_PATHNAME), as in
 *                          v1/linux-x86_64/staging/s.*; a rename matches by
 *                          either of its names
 *   CJC_FAULT_FIRED        a file to which "OP N" is appended when it fails
 *   CJC_FAULT_STOPPED      with STOP: the number of a descriptor open on a
 *                          pipe that the test reads
 *
 * STOP puts a writer at a known step of its work, for a test to kill it
 * there: the matching call is not made (a write writes only the first half
 * of its bytes, so the file is left half written), "OP N PATH\n" is written
 * to CJC_FAULT_STOPPED, and the process waits in pause() until it is killed.
 * The descriptor is closed on exec, so that nvcc does not hold the pipe open:
 * a test that reads end-of-file knows that cjc exited without stopping.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STOP (-1) /* err: stop instead of failing */

static char op[16];
static int err;
static long nth;
static long calls;
static const char *dir;
static const char *pattern;
static int stopped_fd = -1;

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

__attribute__((constructor)) static void setup(void)
{
	const char *spec = getenv("CJC_FAULT");
	dir = getenv("CJC_FAULT_DIR");
	if (!spec || !dir || strcmp(program_invocation_short_name, "cjc"))
		return;
	char e[16] = "";
	if (sscanf(spec, "%15[^:]:%15[^:]:%ld", op, e, &nth) < 2)
		op[0] = '\0';
	err = !strcmp(e, "EIO") ? EIO : !strcmp(e, "ENOSPC") ? ENOSPC : !strcmp(e, "STOP") ? STOP : 0;
	pattern = getenv("CJC_FAULT_PATH");
	const char *fd = getenv("CJC_FAULT_STOPPED");
	if (err == STOP && fd) {
		stopped_fd = atoi(fd);
		fcntl(stopped_fd, F_SETFD, FD_CLOEXEC);
	}
}

/* The part of path below the directory ("" for the directory itself), in
 * abs; NULL when the path is not under it. */
static const char *in_dir(const char *path, char *abs, size_t size)
{
	if (!path)
		return NULL;
	if (path[0] == '/')
		snprintf(abs, size, "%s", path);
	else if (getcwd(abs, size))
		snprintf(abs + strlen(abs), size - strlen(abs), "/%s", path);
	else
		return NULL;
	size_t n = strlen(dir);
	if (strncmp(abs, dir, n) || (abs[n] != '/' && abs[n] != '\0'))
		return NULL;
	return abs[n] ? abs + n + 1 : abs + n;
}

/* The path below the directory that the call is about, when the fault is
 * for it: under the directory, and matching CJC_FAULT_PATH if that is set. */
static const char *target(const char *path, char *abs, size_t size)
{
	const char *rel = in_dir(path, abs, size);
	if (rel && pattern && fnmatch(pattern, rel, FNM_PATHNAME))
		return NULL;
	return rel;
}

/* target() of the file that fd is open on; with base, only one named base*. */
static const char *fd_target(int fd, const char *base, char *abs, size_t size)
{
	char link[64], path[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n < 0)
		return NULL;
	path[n] = '\0';
	const char *slash = strrchr(path, '/');
	if (base && (!slash || strncmp(slash + 1, base, strlen(base))))
		return NULL;
	return target(path, abs, size);
}

/* Tells the test where this process stopped, and waits to be killed. */
static void stop(const char *name, const char *rel)
{
	char line[4200];
	int n = snprintf(line, sizeof line, "%s %ld %s\n", name, calls, rel);
	if (stopped_fd >= 0)
		(void)!REAL(write)(stopped_fd, line, (size_t)n);
	for (;;)
		pause();
}

/* exit:STOP: run when the process exits, after cjc's own atexit handlers
 * (the loader's destructors run last). */
__attribute__((destructor)) static void stop_at_exit(void)
{
	if (op[0] && !strcmp(op, "exit") && err == STOP)
		stop("exit", "");
}

/* Whether the fault is for calls of `name` (then the wrappers find the path). */
static int armed(const char *name)
{
	return op[0] && !strcmp(op, name);
}

/*
 * Whether this call, armed, on rel (NULL: a path the fault is not for)
 * fails.  With STOP it does not return, and half, when given, makes the
 * first half of the call first.
 */
static int fails(const char *name, const char *rel, void (*half)(void))
{
	if (!rel)
		return 0;
	calls++;
	if (nth && calls != nth)
		return 0;
	if (err == STOP) {
		if (half)
			half();
		stop(name, rel);
	}
	const char *fired = getenv("CJC_FAULT_FIRED");
	FILE *f = fired ? fopen(fired, "a") : NULL;
	if (f) {
		fprintf(f, "%s %ld\n", name, calls);
		fclose(f);
	}
	return 1;
}

int fsync(int fd)
{
	char abs[4096];
	if (armed("fsync") && fails("fsync", fd_target(fd, NULL, abs, sizeof abs), NULL))
		return errno = err, -1;
	return REAL(fsync)(fd);
}

int rename(const char *from, const char *to)
{
	char abs_from[4096], abs_to[4096];
	if (armed("rename")) {
		const char *rel = target(to, abs_to, sizeof abs_to);
		if (fails("rename", rel ? rel : target(from, abs_from, sizeof abs_from), NULL))
			return errno = err, -1;
	}
	return REAL(rename)(from, to);
}

/* name relative to the directory open at dirfd, as a path in buf (the
 * store's writes go through directory fds); NULL when it cannot be told. */
static const char *at_path(int dirfd, const char *name, char *buf, size_t size)
{
	if (!name || name[0] == '/' || dirfd == AT_FDCWD)
		return name;
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(link, buf, size - 1);
	if (n < 0)
		return NULL;
	snprintf(buf + n, size - (size_t)n, "/%s", name);
	return buf;
}

int renameat(int from_dir, const char *from, int to_dir, const char *to)
{
	char path_from[4096], path_to[4096], abs_from[4096], abs_to[4096];
	if (armed("rename")) {
		const char *rel = target(at_path(to_dir, to, path_to, sizeof path_to), abs_to, sizeof abs_to);
		if (!rel)
			rel = target(at_path(from_dir, from, path_from, sizeof path_from), abs_from,
				     sizeof abs_from);
		if (fails("rename", rel, NULL))
			return errno = err, -1;
	}
	return REAL(renameat)(from_dir, from, to_dir, to);
}

int mkdirat(int dirfd, const char *path, mode_t mode)
{
	char at[4096], abs[4096];
	if (armed("mkdir") && fails("mkdir", target(at_path(dirfd, path, at, sizeof at), abs, sizeof abs), NULL))
		return errno = err, -1;
	return REAL(mkdirat)(dirfd, path, mode);
}

/* The write under way, for its first half before a STOP. */
static struct {
	int fd;
	const void *p;
	size_t n;
	off_t off; /* -1: write(), not pwrite() */
} pending;

static void write_half(void)
{
	if (pending.off < 0)
		(void)!REAL(write)(pending.fd, pending.p, pending.n / 2);
	else
		(void)!REAL(pwrite)(pending.fd, pending.p, pending.n / 2, pending.off);
}

ssize_t write(int fd, const void *p, size_t n)
{
	char abs[4096];
	pending.fd = fd, pending.p = p, pending.n = n, pending.off = -1;
	if (armed("write") && fails("write", fd_target(fd, NULL, abs, sizeof abs), write_half))
		return errno = err, -1;
	return REAL(write)(fd, p, n);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
	char abs[4096];
	pending.fd = fd, pending.p = p, pending.n = n, pending.off = off;
	if (armed("write") && fails("write", fd_target(fd, NULL, abs, sizeof abs), write_half))
		return errno = err, -1;
	return REAL(pwrite)(fd, p, n, off);
}

int mkdir(const char *path, mode_t mode)
{
	char abs[4096];
	if (armed("mkdir") && fails("mkdir", target(path, abs, sizeof abs), NULL))
		return errno = err, -1;
	return REAL(mkdir)(path, mode);
}

ssize_t read(int fd, void *p, size_t n)
{
	/* Artifacts only: an entry's output cut short. */
	char abs[4096];
	if (armed("read") && fails("read", fd_target(fd, "output.", abs, sizeof abs), NULL)) {
		if (!err)
			return 0;
		return errno = err, -1;
	}
	return REAL(read)(fd, p, n);
}
