/*
 * log.h - the cache's log: why something was a miss, uncacheable or an
 * error.  Lines go to the file named by the `log` setting (CJC_LOG), each
 * prefixed with the time and pid, appended with O_APPEND in one write so that
 * concurrent builds interleave whole lines; with `debug` (CJC_DEBUG) they go
 * to stderr too.  Each message is escaped with cjc_buf_add_printable (util.h):
 * what a store or a server wrote reaches neither raw.  Logging never fails a
 * caller: write errors are ignored.
 */
#ifndef CJC_LOG_H
#define CJC_LOG_H

#include <stdbool.h>

void cjc_log_setup(const char *path, bool debug);
void cjc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
