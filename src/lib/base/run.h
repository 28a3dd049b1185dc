/*
 * run.h - running a subprocess: an argv vector (never a shell string), with
 * its stdout and stderr sent to given descriptors (or inherited), waited for.
 *
 * cjc_run() returns the child's exit code, 128+signal if a signal ended it,
 * or -1 with errno set if it could not be started.  cjc_run_capture() runs a
 * short query (such as `nvcc --version`) and returns its stdout in a buffer.
 * cjc_exec() replaces this process (it returns only on failure, with errno).
 *
 * cjc_run_child() is the general form (git's struct child_process): a
 * working directory, changes to the environment, and each standard
 * descriptor inherited, given, or /dev/null — all set up in the child, so
 * the caller's own directory and environment never change.
 *
 * No child gets a variable that may hold a secret (cjc_secret_variable:
 * CJC_REMOTE, whose URLs may carry passwords): every function here leaves it
 * out of the child's environment, so neither nvcc, nor what nvcc runs, nor
 * a --wrap launcher can read it.
 */
#ifndef CJC_RUN_H
#define CJC_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

/* Whether the environment variable NAME (its first len bytes) may hold a
 * secret: no child gets it, and `cjc config` and messages show its value
 * redacted (compile/config.h). */
bool cjc_secret_variable(const char *name, size_t len);

#define CJC_RUN_NULL (-2) /* a descriptor that is /dev/null */

struct cjc_child {
	char *const *argv;
	const char *dir;           /* run there; NULL: here */
	char *const *env;          /* NULL-terminated changes: "NAME=value" sets, "NAME" unsets */
	int in_fd, out_fd, err_fd; /* -1: inherit; CJC_RUN_NULL: /dev/null; else this one */
};
#define CJC_CHILD_INIT(args) { .argv = (args), .in_fd = -1, .out_fd = -1, .err_fd = -1 }

int cjc_run_child(const struct cjc_child *c);
/* out_fd / err_fd: -1 to inherit. */
int cjc_run(char *const *argv, int out_fd, int err_fd);
int cjc_run_capture(char *const *argv, struct cjc_buf *out);
void cjc_exec(char *const *argv);

#endif
