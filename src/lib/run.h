/*
 * run.h - running a subprocess: an argv vector (never a shell string), with
 * its stdout and stderr sent to given descriptors (or inherited), waited for.
 *
 * cjc_run() returns the child's exit code, 128+signal if a signal ended it,
 * or -1 with errno set if it could not be started.  cjc_run_capture() runs a
 * short query (such as `nvcc --version`) and returns its stdout in a buffer.
 * cjc_exec() replaces this process (it returns only on failure, with errno).
 */
#ifndef CJC_RUN_H
#define CJC_RUN_H

#include "util.h"

/* out_fd / err_fd: -1 to inherit. */
int cjc_run(char *const *argv, int out_fd, int err_fd);
int cjc_run_capture(char *const *argv, struct cjc_buf *out);
void cjc_exec(char *const *argv);

#endif
