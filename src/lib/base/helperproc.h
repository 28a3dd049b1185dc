/*
 * helperproc.h - what a per-user helper process of cjc's is made of, for
 * each kind of helper: the HTTP helper (remote/helper.h) and the watching
 * helper (compile/watcher.h).
 *
 * Where: the user's run-time directory (cjc_user_run_dir(), fs.h), only
 * this user's to enter; reached through its fd, never by name again.  In
 * it the user's secret, `key` (CJC_HELPERPROC_KEY_LEN random bytes, 0600),
 * which keys the helpers' names (a socket's name shows in /proc/net/unix),
 * and per helper <name>.sock and <name>.lock.  Who: a helper takes peers
 * of its own user only (cjc_helperproc_peer_is_us), and a client talks
 * only to a helper of its own user.  A helper holds its lock (flock) while
 * it lives, so two never serve one name; a client starts one only while
 * the lock is free (cjc_helperproc_lock_free), in a session of its own
 * with nothing of the client's open but the descriptor it is given.
 * Bounded: every read and write of a client has a deadline.
 *
 * Functions return 0 or -1 with errno, or say what they answer; nothing
 * here prints but cjc_log.
 */
#ifndef CJC_HELPERPROC_H
#define CJC_HELPERPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define CJC_HELPERPROC_KEY_LEN 32

/* The user's secret in the helpers' directory dir, made when missing (a
 * damaged one is replaced, and logged): 0, or -1 (no helper this time). */
int cjc_helperproc_key(int dir, unsigned char key[CJC_HELPERPROC_KEY_LEN]);
/* Whether no helper holds name's lock in dir (none lives, none starts). */
bool cjc_helperproc_lock_free(int dir, const char *name);
/* Starts /proc/self/exe with argv and env in a session of its own, its
 * stdin in_fd, stdout and stderr /dev/null, nothing else open: 0, or an
 * errno value. */
int cjc_helperproc_spawn(char *const argv[], char *const env[], int in_fd, pid_t *pid);
/* Whether the peer of a unix socket is a process of this user's. */
bool cjc_helperproc_peer_is_us(int fd);

/* A monotonic clock, in microseconds, for the deadlines below. */
int64_t cjc_helperproc_now_us(void);
/* Waits for events on fd until deadline: 0, or -1 (ETIMEDOUT). */
int cjc_helperproc_wait(int fd, short events, int64_t deadline_us);
/* Reads exactly n bytes by deadline: 0, or -1 (ETIMEDOUT, or EPIPE at the end). */
int cjc_helperproc_read(int fd, void *p, size_t n, int64_t deadline_us);
/* Sends all n bytes by deadline (no SIGPIPE): 0, or -1. */
int cjc_helperproc_send(int fd, const void *p, size_t n, int64_t deadline_us);
/* A connection to dir's <name>.sock of the given type, not blocking (a
 * helper whose queue is full fails at once), its peer checked to be this
 * user's: the fd, or -1 with errno (ENOENT, ECONNREFUSED: none lives;
 * EPERM: another user's). */
int cjc_helperproc_connect(int dir, const char *name, int type);

/* For the helper: takes name's lock (*lock) and listens on a socket of the
 * given type that appears at <name>.sock (by rename, over a dead helper's)
 * only once it listens: the listener, or -1 (another helper holds the
 * lock).  *sock_st: that socket's, so only it is removed at the end. */
int cjc_helperproc_listen(int dir, const char *name, int type, int *lock, struct stat *sock_st);
/* Whether the socket at <name>.sock is still the one listened on (not
 * removed, with its directory say, or replaced). */
bool cjc_helperproc_socket_is_ours(int dir, const char *name, const struct stat *ours);
/* Removes <name>.sock when it is still the one listened on. */
void cjc_helperproc_remove_socket(int dir, const char *name, const struct stat *ours);

#endif
