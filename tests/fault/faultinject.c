/*
 * faultinject.c - an LD_PRELOAD library that makes file-system calls of cjc
 * fail, for the fault suite.  Nothing else is affected: it acts only in a
 * process named "cjc" (not in nvcc or the host compiler it runs) and only on
 * paths under $CJC_FAULT_DIR (the store).
 *
 *   CJC_FAULT=slow:-      every call below on the store sleeps 20 ms (to
 *                          widen the window for the crash tests)
 *   CJC_FAULT=OP:ERR[:N]   OP: fsync, rename, write (write and pwrite), mkdir,
 *                          or read (of an entry's output.* only); ERR: EIO,
 *                          ENOSPC, or EOF (read returns 0, as from a file
 *                          cut short); N: fail only the Nth
 *                          matching call (default: every one)
 *   CJC_FAULT_DIR          the directory whose files fail
 *   CJC_FAULT_FIRED        a file to which "OP N" is appended when it fails
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char op[16];
static int err;
static long nth;
static long calls;
static const char *dir;

__attribute__((constructor)) static void setup(void)
{
	const char *spec = getenv("CJC_FAULT");
	dir = getenv("CJC_FAULT_DIR");
	if (!spec || !dir || strcmp(program_invocation_short_name, "cjc"))
		return;
	char e[16] = "";
	if (sscanf(spec, "%15[^:]:%15[^:]:%ld", op, e, &nth) < 2)
		op[0] = '\0';
	err = !strcmp(e, "EIO") ? EIO : !strcmp(e, "ENOSPC") ? ENOSPC : 0;
}

static int under_dir(const char *path)
{
	char abs[4096];
	if (!path)
		return 0;
	if (path[0] != '/' && getcwd(abs, sizeof abs)) {
		size_t n = strlen(abs);
		snprintf(abs + n, sizeof abs - n, "/%s", path);
		path = abs;
	}
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* Whether fd is a file under the directory (and, with base, named base*). */
static int fd_under_dir_named(int fd, const char *base)
{
	char link[64], target[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof target - 1);
	if (n < 0)
		return 0;
	target[n] = '\0';
	const char *slash = strrchr(target, '/');
	if (base && (!slash || strncmp(slash + 1, base, strlen(base))))
		return 0;
	return under_dir(target);
}

static int fd_under_dir(int fd)
{
	return fd_under_dir_named(fd, NULL);
}

/* Whether this call of `name` fails ("slow" fails none but delays each). */
static int fails(const char *name, int matches)
{
	if (!strcmp(op, "slow") && matches)
		usleep(20000);
	if (!op[0] || strcmp(op, name) || !matches)
		return 0;
	calls++;
	if (nth && calls != nth)
		return 0;
	const char *fired = getenv("CJC_FAULT_FIRED");
	FILE *f = fired ? fopen(fired, "a") : NULL;
	if (f) {
		fprintf(f, "%s %ld\n", name, calls);
		fclose(f);
	}
	return 1;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int fsync(int fd)
{
	if (fails("fsync", fd_under_dir(fd)))
		return errno = err, -1;
	return REAL(fsync)(fd);
}

int rename(const char *from, const char *to)
{
	if (fails("rename", under_dir(from) || under_dir(to)))
		return errno = err, -1;
	return REAL(rename)(from, to);
}

ssize_t write(int fd, const void *p, size_t n)
{
	if (fails("write", fd_under_dir(fd)))
		return errno = err, -1;
	return REAL(write)(fd, p, n);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
	if (fails("write", fd_under_dir(fd)))
		return errno = err, -1;
	return REAL(pwrite)(fd, p, n, off);
}

int mkdir(const char *path, mode_t mode)
{
	if (fails("mkdir", under_dir(path)))
		return errno = err, -1;
	return REAL(mkdir)(path, mode);
}

ssize_t read(int fd, void *p, size_t n)
{
	/* Artifacts only: an entry's output cut short. */
	if (op[0] == 'r' && fails("read", fd_under_dir_named(fd, "output."))) {
		if (!err)
			return 0;
		return errno = err, -1;
	}
	return REAL(read)(fd, p, n);
}
