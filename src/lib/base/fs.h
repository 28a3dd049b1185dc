/*
 * fs.h - file-system helpers: whole-file reads, full writes, directory
 * creation and removal, atomic replacement, unique temporary names, and the
 * registry of temporary files removed at exit and on fatal signals.
 *
 * Every function returns 0 on success or -1 with errno set, except where a
 * comment says otherwise.  Nothing here prints.
 *
 * Temporary files: cjc_tempfile_add() registers a path (file or directory)
 * that belongs to this process; cjc_tempfile_remove() removes and forgets it,
 * cjc_tempfile_forget() forgets it once it was renamed into place.  At exit,
 * and on SIGINT, SIGTERM, SIGHUP and SIGPIPE, what is still registered is
 * removed — only by the process that registered it, never by a forked child.
 * The registry may be used from several threads.  A temporary inside a store
 * is registered by name in a directory instead (cjc_tempfile_add_at: the
 * registry keeps its own duplicate of the directory's fd), and removed
 * relative to that fd: a directory someone else renames, or a link planted
 * in its place, cannot send the removal anywhere else (docs/trust.md).  The
 * path forms are for files outside any store (the tool's own outputs).
 *
 * Locks: nothing waits on anyone else (docs/store.md, trust).  A store file
 * that another user can open, another user can also flock(2), forever; so
 * cjc_lock_bounded() never blocks: it tries at once, then again for at most
 * a few milliseconds in all, and then gives up.  The caller skips what the
 * lock guarded (a counter may be lost; a compile is not).  No other lock
 * call on a store file is made anywhere in src/.
 */
#ifndef CJC_FS_H
#define CJC_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/util.h"

int cjc_read_fd(int fd, struct cjc_buf *out);
/* Reads a memfd (or any file) from its start into out, and closes it. */
void cjc_read_memfd(int fd, struct cjc_buf *out);
int cjc_read_file(const char *path, struct cjc_buf *out);
/*
 * For files anyone else may have written (docs/store.md, trust): reads a regular file of
 * at most max bytes, never blocking on a FIFO.  errno EINVAL: not a regular
 * file (EISDIR: a directory); EFBIG: larger than max; ELOOP: a symbolic link
 * under O_NOFOLLOW.
 * flags are added to the open (O_NOFOLLOW, say); dirfd as for openat().
 */
int cjc_read_bounded(int dirfd, const char *path, int flags, size_t max, struct cjc_buf *out);
int cjc_read_regular_fd(int fd, size_t max, struct cjc_buf *out);
/* The same on an fd it closes (-1 passes its errno through). */
int cjc_read_regular_and_close(int fd, size_t max, struct cjc_buf *out);
/* openat() that never blocks on a FIFO and returns only a regular file
 * (else -1, errno EINVAL); for files of the store that are written in place. */
int cjc_open_regular(int dirfd, const char *path, int flags, mode_t mode);
/* fd when it is open on a regular file; else closes it: -1, errno EINVAL. */
int cjc_keep_regular(int fd);
/* cjc_open_regular() of an existing file, its fstat(2) in *st (one call,
 * not two). */
int cjc_open_regular_stat(int dirfd, const char *path, int flags, struct stat *st);
/* Whether the file fd is open on is a regular file owned by you or root,
 * writable by no one else, with one name: what another user of a shared
 * store cannot have written, nor hard-linked to a file of root's (settings
 * files, journals, memos; docs/trust.md).  False when fstat fails. */
bool cjc_fd_trusted(int fd);
/* The same for what fstat said. */
struct stat;
bool cjc_stat_trusted(const struct stat *st);
/* Why someone other than root or you could change (or, for a directory,
 * rename or replace something in) what lstat said: "owned by another
 * user", "writable by others", "writable by its group"; NULL when nobody
 * can (a link cannot be changed, only replaced; a sticky directory lets
 * nobody else replace what you own).  For paths that decide what runs or
 * where private work goes (audit_trust.h, the JIT library's directory). */
const char *cjc_stat_others_can_change(const struct stat *st);
int cjc_write_all(int fd, const void *p, size_t n);
/* flock(fd, op) (LOCK_SH or LOCK_EX) without waiting on anyone: retried with
 * growing pauses for at most CJC_LOCK_BUDGET_US in all; then -1 with
 * EWOULDBLOCK.  Other failures: -1 with flock's errno. */
#define CJC_LOCK_BUDGET_US 4000
int cjc_lock_bounded(int fd, int op);
/* Creates a new file name in dirfd (O_EXCL, O_NOFOLLOW) with the bytes;
 * with writeback, its write-back to disk is started without waiting
 * (sync_file_range), so that several files reach the disk together when the
 * caller fsyncs them after (cjc_fsync_at).  The path form is
 * openat(AT_FDCWD, ...), without write-back. */
int cjc_write_new_file_at(int dirfd, const char *name, const void *p, size_t n, mode_t mode,
			  bool writeback);
int cjc_write_new_file(const char *path, const void *p, size_t n, mode_t mode);
int cjc_mkdirs(const char *path, mode_t mode);
/* Opens the directory path (O_PATH) as a store's own, one name at a time
 * from "/" without trusting anyone else on the way (docs/trust.md): every
 * directory is yours or root's and writable by no one else unless sticky
 * (the last, the store's own, may be its group's), and a symbolic link is
 * followed only when it is yours or root's (40 at most).  With make, what
 * is missing is made: 0755 on the way, last_mode last, less the umask.
 * -1 with errno: EPERM for such a directory or link, with why (may be NULL)
 * naming it and what to do. */
int cjc_open_dir_safe(const char *path, bool make, mode_t last_mode, struct cjc_buf *why);
/* fsyncs the file name in dirfd (not followed when a link). */
int cjc_fsync_at(int dirfd, const char *name);
int cjc_remove_tree(const char *path);
/* The same for name in the directory open at parent (never following a link). */
int cjc_remove_tree_at(int parent, const char *name);
/* Writes the bytes to a temporary file beside name in dirfd (registered as
 * a temporary; created with mode, less the umask), then renames it over
 * name, both relative to dirfd. */
int cjc_replace_file_at(int dirfd, const char *name, const void *p, size_t n, mode_t mode);
/* The same by path (AT_FDCWD), for files outside any store. */
int cjc_replace_file(const char *path, const void *p, size_t n);

/* "<prefix>.<host>.<pid>.<random>" in a new allocation: unique across hosts. */
char *cjc_unique_name(const char *prefix);
/* Whether a name cjc_unique_name made ("<prefix>.<host>.<pid>.<random>")
 * belongs to a writer that is gone: a dead pid on this host, or another
 * host's, modified (mtime) at least age seconds ago.  Other names: false. */
bool cjc_name_orphaned(const char *name, time_t mtime, int64_t age);
/* This host's name ('/' and '.' made '_') and its PID namespace's
 * ("_pidns<inode>"), where /proc says: whose pids a name's are. */
const char *cjc_hostname(void);
/* Parent directory of path in a new allocation ("." for a bare name). */
char *cjc_dirname(const char *path);
/* The working directory as the compilers record it (gcc's getpwd(), which
 * nvcc's -G and gcc's -g write into their outputs): $PWD when it is absolute
 * and names the same directory as ".", else getcwd(); NULL (errno) when
 * neither fits in size bytes. */
char *cjc_getpwd(char *buf, size_t size);
char *cjc_path_join(const char *dir, const char *name);
bool cjc_is_dir(const char *path);
/* Searches PATH for an executable name (or returns a copy if it has a '/'). */
char *cjc_find_program(const char *name);
/* The same, skipping each file that also(path) refuses (cjc's own). */
char *cjc_find_program_if(const char *name, bool (*also)(const char *path));
/* The user's own run-time directory, checked and open (O_PATH), or -1:
 * $XDG_RUNTIME_DIR/cudajitcache when XDG_RUNTIME_DIR is a directory of this
 * user's (not one a `sudo -E` or `su` brought from another user), else
 * /tmp/cudajitcache-<uid>; made 0700, and believed only when it is this
 * user's, not a link, and closed to group and others.  The HTTP helpers'
 * sockets (remote/helper.h) and the tool's once-per-build memos live there.
 * Where /tmp/cudajitcache-<uid> is not such a directory (another user
 * made it first, or a link), a private one is used instead: /tmp/cudajitcache-<uid>-XXXXXX
 * (mkdtemp's, so nobody can make it first), its name recorded for this
 * host (cjc_hostname()) in the home's cache directory, the passwd's home
 * (not $HOME: the helper has none), as ~/.cache/cudajitcache-run.<host>,
 * so that every later call of this user, the helper's too, finds the
 * same; a record names only such a directory, and it too must be private.
 * (A $XDG_RUNTIME_DIR/cudajitcache that is not private is not used, and
 * nothing instead: nobody else can make a name in a directory of yours
 * unless you let them.) */
int cjc_user_run_dir(void);
/* The same; news (may be NULL) gets a line when the usual directory is not
 * private and this call made another instead (so it is said once: later
 * calls find it and say nothing), or none is used (said by every call),
 * naming the path, its owner and what is used instead. */
int cjc_user_run_dir_told(struct cjc_buf *news);

void cjc_tempfile_add(const char *path);
void cjc_tempfile_remove(const char *path);
void cjc_tempfile_forget(const char *path);
/* name in the directory open at dirfd (AT_FDCWD: the path forms above). */
void cjc_tempfile_add_at(int dirfd, const char *name);
void cjc_tempfile_remove_at(int dirfd, const char *name);
void cjc_tempfile_forget_at(int dirfd, const char *name);
/* For a library inside another's process: the registry removes at exit
 * only, its signal handlers never installed (the program keeps its own). */
void cjc_tempfile_without_signals(void);

#endif
