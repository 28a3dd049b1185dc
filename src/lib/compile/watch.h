/*
 * watch.h - the files one NVRTC compile reads, observed: the C library's
 * calls through which NVRTC reads the file system, in one table, and a
 * recorder with a function of the same name and type for each, which does
 * what the C library does and records what NVRTC learnt for the compile
 * being watched on this thread.
 *
 * Two ways bind NVRTC's own calls of these functions (and of nothing else)
 * to the recorder's (cjc_watch_functions):
 *
 *   the NVRTC shim's audit module (src/shim/audit.c, LD_AUDIT), whose
 *   trampolines call the table the shim hands it (src/shim/hello.c);
 *
 *   cjc_watch_bind(), for the JIT library, which loads NVRTC itself: it
 *   writes NVRTC's import slots (compile/got.h) after dlopen.
 *
 * Calling sequence: cjc_watch_begin(&w) on the compiling thread, the
 * compile, cjc_watch_end(&w), cjc_watch_settle(&w), then w.found (regular
 * files, with their stamps when NVRTC saw them), w.absent (ENOENT,
 * ENOTDIR) or w.unkeyable (anything else: a write, a directory listed or
 * changed, a path relative to another directory's fd, a program run, a
 * lookup on a thread neither watched nor ignored while compiles are
 * watched: it could be theirs); cjc_watch_release(&w).  Paths are kept as
 * NVRTC gave them, relative ones too.  A thread whose compile is not
 * watched says so with cjc_watch_ignore(true) around it: its lookups are
 * its own.  The recorder is the process's: every binder shares it.
 */
#ifndef CJC_COMPILE_WATCH_H
#define CJC_COMPILE_WATCH_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/stamp.h"
#include "base/util.h"

#define CJC_WATCH_VERSION 1

/* Called by NVRTC with a path that names something it may read:
 * X(name, return type, parameters, arguments). */
#define CJC_WATCHED(X)                                                                             \
	X(__xstat, int, (int v, const char *p, struct stat *s), (v, p, s))                         \
	X(__xstat64, int, (int v, const char *p, struct stat64 *s), (v, p, s))                     \
	X(__lxstat, int, (int v, const char *p, struct stat *s), (v, p, s))                        \
	X(__lxstat64, int, (int v, const char *p, struct stat64 *s), (v, p, s))                    \
	X(stat, int, (const char *p, struct stat *s), (p, s))                                      \
	X(stat64, int, (const char *p, struct stat64 *s), (p, s))                                  \
	X(lstat, int, (const char *p, struct stat *s), (p, s))                                     \
	X(lstat64, int, (const char *p, struct stat64 *s), (p, s))                                 \
	X(access, int, (const char *p, int m), (p, m))                                             \
	X(open, int, (const char *p, int f, mode_t m), (p, f, m))                                  \
	X(open64, int, (const char *p, int f, mode_t m), (p, f, m))                                \
	X(__open_2, int, (const char *p, int f), (p, f))                                           \
	X(__open64_2, int, (const char *p, int f), (p, f))                                         \
	X(openat, int, (int d, const char *p, int f, mode_t m), (d, p, f, m))                      \
	X(openat64, int, (int d, const char *p, int f, mode_t m), (d, p, f, m))                    \
	X(fopen, FILE *, (const char *p, const char *m), (p, m))                                   \
	X(fopen64, FILE *, (const char *p, const char *m), (p, m))                                 \
	X(opendir, DIR *, (const char *p), (p))                                                    \
	X(readlink, ssize_t, (const char *p, char *b, size_t n), (p, b, n))                        \
	X(realpath, char *, (const char *p, char *r), (p, r))

/* Called by NVRTC to change what is on disk, where it is, or to run a
 * program: a compile that calls one is not cached. */
#define CJC_FORBIDDEN(X)                                                                           \
	X(chdir, int, (const char *p), (p))                                                        \
	X(mkdir, int, (const char *p, mode_t m), (p, m))                                           \
	X(remove, int, (const char *p), (p))                                                       \
	X(rmdir, int, (const char *p), (p))                                                        \
	X(unlink, int, (const char *p), (p))                                                       \
	X(rename, int, (const char *a, const char *b), (a, b))                                     \
	X(creat, int, (const char *p, mode_t m), (p, m))                                           \
	X(freopen, FILE *, (const char *p, const char *m, FILE *f), (p, m, f))                     \
	X(scandir, int,                                                                            \
	  (const char *p, struct dirent ***l, int (*s)(const struct dirent *),                     \
	   int (*c)(const struct dirent **, const struct dirent **)),                              \
	  (p, l, s, c))                                                                            \
	X(execv, int, (const char *p, char *const *a), (p, a))                                     \
	X(execve, int, (const char *p, char *const *a, char *const *e), (p, a, e))                 \
	X(execvp, int, (const char *p, char *const *a), (p, a))                                    \
	X(system, int, (const char *c), (c))                                                       \
	X(fork, pid_t, (void), ())

/* The recorder's functions, one per name above, each with that name's type. */
struct cjc_watch_table {
	int version;
#define CJC_WATCH_FIELD(name, ret, params, args) ret(*name) params;
	CJC_WATCHED(CJC_WATCH_FIELD)
	CJC_FORBIDDEN(CJC_WATCH_FIELD)
#undef CJC_WATCH_FIELD
};

const struct cjc_watch_table *cjc_watch_functions(void);

/* What one compile read (above). */
struct cjc_watch {
	struct cjc_strvec found, absent;
	struct cjc_stamp *stamps; /* one per found, in order */
	char *unkeyable;          /* the first reason, or NULL */
	struct cjc_watch *next;   /* the compiles being watched (watch.c) */
};
void cjc_watch_begin(struct cjc_watch *w);
void cjc_watch_end(struct cjc_watch *w);
void cjc_watch_ignore(bool on);
/* Sorted, each path once; found paths whose stamp changed since NVRTC saw
 * them make the compile unkeyable ("changed during the compile"), and so
 * does a path both absent and found. */
void cjc_watch_settle(struct cjc_watch *w);
void cjc_watch_release(struct cjc_watch *w);

/* Binds the imports of the table's functions by the object dlopen gave as
 * lib (NVRTC), and by the file at also when it is not NULL (loaded here
 * first: NVRTC's builtins, which it loads itself later), to the
 * recorder's: 0, or -1 with the reason in why, when anything is not as
 * expected (compile/got.h); the binding may then be partial, and the
 * caller must not key what NVRTC reads.  An import already bound by the
 * shim's audit module is left to it: -1.  Thread-safe; NVRTC's calls
 * outside a watched compile go on to the C library.  The recorder must
 * then never be unloaded (the JIT library is linked -z nodelete). */
int cjc_watch_bind(void *lib, const char *also, struct cjc_buf *why);

#endif
