#include "base/log.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/util.h"

static char *log_path;
static bool log_debug;
static mode_t log_mode = 0666;

void cjc_log_setup(const char *path, bool debug)
{
	cjc_replace_string(&log_path, path && *path ? path : NULL);
	log_debug = debug;
	/* the log is the user's file: the umask now, not the store's later */
	mode_t mask = umask(0);
	umask(mask);
	log_mode = 0666 & ~mask;
}

void cjc_log(const char *fmt, ...)
{
	if (!log_path && !log_debug)
		return;
	struct cjc_buf line = CJC_BUF_INIT;
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	cjc_buf_addf(&line, "%s [%ld] ", stamp, (long)getpid());
	va_list ap;
	va_start(ap, fmt);
	char *msg;
	int n = vasprintf(&msg, fmt, ap);
	if (n >= 0) {
		/* names, paths and servers' words: nothing reaches a terminal raw */
		cjc_buf_add_printable(&line, msg, (size_t)n);
		free(msg);
	}
	va_end(ap);
	cjc_buf_add(&line, "\n", 1);
	if (log_path) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, log_mode);
		if (fd >= 0) {
			(void)!cjc_write_all(fd, line.data, line.len);
			close(fd);
		}
	}
	if (log_debug)
		(void)!cjc_write_all(2, line.data, line.len);
	cjc_buf_release(&line);
}
