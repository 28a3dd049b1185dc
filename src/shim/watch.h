/*
 * watch.h - what the NVRTC shim's audit module (audit.c) and the shim
 * (watch.c) agree on: the C library's calls through which NVRTC reads the
 * file system, in one table, and the handshake that joins the two.
 *
 * The audit module binds NVRTC's own calls of these functions (and of
 * nothing else) to its trampolines (rtld-audit(7), la_symbind64); each
 * trampoline calls the shim's function of the same name and type in the
 * table the shim registered, or, before the shim has registered, the C
 * library's.  The shim registers by calling cjc_nvrtc_audit_hello(): its
 * own definition answers 0 (no audit module: nothing is watched), and the
 * audit module binds the shim's call to its own, which keeps the table and
 * answers CJC_WATCH_VERSION.
 *
 * CJC_WATCHED lists each function as X(name, return type, parameters,
 * arguments).  Those of CJC_FORBIDDEN change the file system, the working
 * directory or run a program: a compile that calls one is not cached.
 */
#ifndef CJC_SHIM_WATCH_H
#define CJC_SHIM_WATCH_H

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define CJC_WATCH_VERSION 1

/* Called by NVRTC with a path that names something it may read. */
#define CJC_WATCHED(X)                                                                       \
	X(__xstat, int, (int v, const char *p, struct stat *s), (v, p, s))                    \
	X(__xstat64, int, (int v, const char *p, struct stat64 *s), (v, p, s))                \
	X(__lxstat, int, (int v, const char *p, struct stat *s), (v, p, s))                   \
	X(__lxstat64, int, (int v, const char *p, struct stat64 *s), (v, p, s))               \
	X(stat, int, (const char *p, struct stat *s), (p, s))                                 \
	X(stat64, int, (const char *p, struct stat64 *s), (p, s))                             \
	X(lstat, int, (const char *p, struct stat *s), (p, s))                                \
	X(lstat64, int, (const char *p, struct stat64 *s), (p, s))                            \
	X(access, int, (const char *p, int m), (p, m))                                        \
	X(open, int, (const char *p, int f, mode_t m), (p, f, m))                             \
	X(open64, int, (const char *p, int f, mode_t m), (p, f, m))                           \
	X(__open_2, int, (const char *p, int f), (p, f))                                      \
	X(__open64_2, int, (const char *p, int f), (p, f))                                    \
	X(openat, int, (int d, const char *p, int f, mode_t m), (d, p, f, m))                 \
	X(openat64, int, (int d, const char *p, int f, mode_t m), (d, p, f, m))               \
	X(fopen, FILE *, (const char *p, const char *m), (p, m))                              \
	X(fopen64, FILE *, (const char *p, const char *m), (p, m))                            \
	X(opendir, DIR *, (const char *p), (p))                                               \
	X(readlink, ssize_t, (const char *p, char *b, size_t n), (p, b, n))                   \
	X(realpath, char *, (const char *p, char *r), (p, r))

/* Called by NVRTC to change what is on disk, where it is, or to run a program. */
#define CJC_FORBIDDEN(X)                                                                     \
	X(chdir, int, (const char *p), (p))                                                   \
	X(mkdir, int, (const char *p, mode_t m), (p, m))                                      \
	X(remove, int, (const char *p), (p))                                                  \
	X(rmdir, int, (const char *p), (p))                                                   \
	X(unlink, int, (const char *p), (p))                                                  \
	X(rename, int, (const char *a, const char *b), (a, b))                                \
	X(creat, int, (const char *p, mode_t m), (p, m))                                      \
	X(freopen, FILE *, (const char *p, const char *m, FILE *f), (p, m, f))                \
	X(scandir, int, (const char *p, struct dirent ***l, int (*s)(const struct dirent *),    \
			 int (*c)(const struct dirent **, const struct dirent **)), (p, l, s, c)) \
	X(execv, int, (const char *p, char *const *a), (p, a))                                \
	X(execve, int, (const char *p, char *const *a, char *const *e), (p, a, e))            \
	X(execvp, int, (const char *p, char *const *a), (p, a))                               \
	X(system, int, (const char *c), (c))                                                  \
	X(fork, pid_t, (void), ())

/* The shim's functions, one per name above, each with that name's type. */
struct cjc_watch_table {
	int version;
#define CJC_WATCH_FIELD(name, ret, params, args) ret(*name) params;
	CJC_WATCHED(CJC_WATCH_FIELD)
	CJC_FORBIDDEN(CJC_WATCH_FIELD)
#undef CJC_WATCH_FIELD
};

/* The handshake (above); the shim's own definition answers 0. */
int cjc_nvrtc_audit_hello(const struct cjc_watch_table *table);

/* The name NVRTC's shim needs, which the audit module binds to the NVRTC
 * library the program asked for (audit.c). */
#define CJC_REAL_NVRTC "libcudajitcache-real-nvrtc.so"

#endif
