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
 * The registry may be used from several threads.
 */
#ifndef CJC_FS_H
#define CJC_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

int cjc_read_fd(int fd, struct cjc_buf *out);
int cjc_read_file(const char *path, struct cjc_buf *out);
int cjc_write_all(int fd, const void *p, size_t n);
/* Creates a new file (O_EXCL) with the bytes, fsynced when asked. */
int cjc_write_new_file(const char *path, const void *p, size_t n, mode_t mode, bool sync);
int cjc_mkdirs(const char *path, mode_t mode);
int cjc_fsync_path(const char *path);
int cjc_remove_tree(const char *path);
/* Writes the bytes to a temporary file beside path, then renames it over path. */
int cjc_replace_file(const char *path, const void *p, size_t n, bool sync);

/* "<prefix>.<host>.<pid>.<random>" in a new allocation: unique across hosts. */
char *cjc_unique_name(const char *prefix);
const char *cjc_hostname(void);
/* Parent directory of path in a new allocation ("." for a bare name). */
char *cjc_dirname(const char *path);
char *cjc_path_join(const char *dir, const char *name);
bool cjc_is_dir(const char *path);
/* Searches PATH for an executable name (or returns a copy if it has a '/'). */
char *cjc_find_program(const char *name);

void cjc_tempfile_add(const char *path);
void cjc_tempfile_remove(const char *path);
void cjc_tempfile_forget(const char *path);

#endif
