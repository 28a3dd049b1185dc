/*
 * helperproc.c - the pieces of a per-user helper process (helperproc.h).
 */
#include "base/helperproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"

/* --- the key ------------------------------------------------------------ */

/* The user's secret in the helpers' directory (KEY_FILE, 0600, made once,
 * by a link so that a reader never sees it half written): 0, or -1. */
#define KEY_FILE "key"
#define KEY_LEN CJC_HELPERPROC_KEY_LEN
static int read_key(int dir, unsigned char key[KEY_LEN])
{
	/* O_NONBLOCK: a FIFO at the name is refused, never waited on */
	int fd = openat(dir, KEY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	bool ok = fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
		  !(st.st_mode & 077) && st.st_size == KEY_LEN && read(fd, key, KEY_LEN) == KEY_LEN;
	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* The key, made when missing; one that is there but damaged (a chmod, a
 * write a power cut tore) is replaced, and said.  -1: no helper this
 * time (no randomness yet at boot, a directory at the key's name). */
int cjc_helperproc_key(int dir, unsigned char key[KEY_LEN])
{
	if (!read_key(dir, key))
		return 0;
	char temp[64];
	snprintf(temp, sizeof temp, KEY_FILE ".%d.%llx", (int)getpid(),
		 (unsigned long long)cjc_wall_ns()); /* pids repeat across containers */
	int fd = openat(dir, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool written = fd >= 0 && getrandom(key, KEY_LEN, GRND_NONBLOCK) == KEY_LEN &&
		       write(fd, key, KEY_LEN) == KEY_LEN && !fsync(fd);
	if (fd >= 0)
		close(fd);
	/* the first one made stays; one that is there and still no key (not
	 * another caller's, just linked) is damaged, and replaced */
	bool damaged = written && linkat(dir, temp, dir, KEY_FILE, 0) && errno == EEXIST &&
		       read_key(dir, key);
	if (damaged)
		(void)renameat(dir, temp, dir, KEY_FILE);
	if (fd >= 0)
		(void)unlinkat(dir, temp, 0);
	int rc = read_key(dir, key);
	if (damaged)
		cjc_log("the helpers' key was damaged: %s", rc ? "no helper is used" : "replaced");
	return rc;
}

/* --- starting one ------------------------------------------------------- */

bool cjc_helperproc_lock_free(int dir, const char *name)
{
	char *lock = cjc_xasprintf("%s.lock", name);
	int fd = openat(dir, lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	free(lock);
	bool is_free = fd >= 0 && !flock(fd, LOCK_EX | LOCK_NB);
	if (fd >= 0)
		close(fd);
	return is_free;
}

int cjc_helperproc_spawn(char *const argv[], char *const env[], int in_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	int rc = posix_spawn(pid, "/proc/self/exe", &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return rc;
}

bool cjc_helperproc_peer_is_us(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;
	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) && cred.uid == geteuid();
}

/* --- talking to one ------------------------------------------------------ */

int64_t cjc_helperproc_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int cjc_helperproc_wait(int fd, short events, int64_t deadline_us)
{
	for (;;) {
		int64_t left = deadline_us - cjc_helperproc_now_us();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (left > 60000000)
			left = 60000000;
		struct pollfd p = { fd, events, 0 };
		struct timespec ts = { left / 1000000, (left % 1000000) * 1000 };
		int n = ppoll(&p, 1, &ts, NULL);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

int cjc_helperproc_read(int fd, void *p, size_t n, int64_t deadline_us)
{
	char *at = p;
	while (n) {
		ssize_t got = recv(fd, at, n, MSG_DONTWAIT);
		if (got == 0)
			errno = EPIPE;
		if (got <= 0 && (got == 0 || (errno != EINTR && errno != EAGAIN)))
			return -1;
		if (got > 0)
			at += got, n -= (size_t)got;
		else if (cjc_helperproc_wait(fd, POLLIN, deadline_us))
			return -1;
	}
	return 0;
}

int cjc_helperproc_send(int fd, const void *p, size_t n, int64_t deadline_us)
{
	const char *at = p;
	while (n) {
		ssize_t sent = send(fd, at, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (sent < 0 && errno != EINTR && errno != EAGAIN)
			return -1;
		if (sent > 0)
			at += sent, n -= (size_t)sent;
		else if (cjc_helperproc_wait(fd, POLLOUT, deadline_us))
			return -1;
	}
	return 0;
}

int cjc_helperproc_connect(int dir, const char *name, int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s.sock", dir, name);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (!cjc_helperproc_peer_is_us(fd)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* --- being one ----------------------------------------------------------- */

int cjc_helperproc_listen(int dir, const char *name, int type, int *lock, struct stat *sock_st)
{
	char *lock_name = cjc_xasprintf("%s.lock", name);
	*lock = openat(dir, lock_name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	free(lock_name);
	if (*lock < 0 || flock(*lock, LOCK_EX | LOCK_NB))
		return -1; /* another helper serves this name */
	char *sock = cjc_xasprintf("%s.sock", name);
	char *fresh = cjc_xasprintf("%s.sock.%d", name, (int)getpid());
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", dir, fresh);
	(void)unlinkat(dir, fresh, 0);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 64) ||
			fstatat(dir, fresh, sock_st, AT_SYMLINK_NOFOLLOW) ||
			renameat(dir, fresh, dir, sock))) /* over a dead helper's */
		close(fd), fd = -1, (void)unlinkat(dir, fresh, 0);
	free(sock);
	free(fresh);
	return fd;
}

bool cjc_helperproc_socket_is_ours(int dir, const char *name, const struct stat *ours)
{
	char *sock = cjc_xasprintf("%s.sock", name);
	struct stat now;
	bool same = !fstatat(dir, sock, &now, AT_SYMLINK_NOFOLLOW) && now.st_dev == ours->st_dev &&
		    now.st_ino == ours->st_ino;
	free(sock);
	return same;
}

void cjc_helperproc_remove_socket(int dir, const char *name, const struct stat *ours)
{
	char *sock = cjc_xasprintf("%s.sock", name);
	if (cjc_helperproc_socket_is_ours(dir, name, ours))
		(void)unlinkat(dir, sock, 0);
	free(sock);
}
