/*
 * once.c - a warning said once per build (once.h).
 */
#include "once.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/hash.h"
#include "base/log.h"

/* The memo's name: the message's hash (a fixed length, any characters)
 * and the session. */
static void memo_name(const char *message, char *name, size_t size)
{
	char hex[CJC_HEX_LEN + 1];
	cjc_hash_buf_hex(message, strlen(message), hex);
	snprintf(name, size, "said.%.16s.%ld", hex, (long)getsid(0));
}

/* A memo of size 0 is new: nobody has said it; one byte: said, and its
 * mtime is when a compile last met the trouble. */
static bool renew(int fd)
{
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return true;
	bool say = st.st_size == 0 || time(NULL) - st.st_mtime >= CJC_ONCE_QUIET_S;
	if (st.st_size == 0 && cjc_write_all(fd, "1", 1))
		return true;
	(void)futimens(fd, NULL);
	return say;
}

/* Removes the memos (said.*) no compile renewed for CJC_ONCE_KEEP_S. */
static void forget_old(int dir)
{
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	struct stat st;
	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "said.", 5) &&
		    !fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    time(NULL) - st.st_mtime >= CJC_ONCE_KEEP_S)
			(void)unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
}

/* The run-time directory (fs.h), and what the log is to know of it. */
static int memo_dir(void)
{
	struct cjc_buf news = CJC_BUF_INIT;
	int dir = cjc_user_run_dir_told(&news);
	if (news.len)
		cjc_log("%s", news.data);
	cjc_buf_release(&news);
	return dir;
}

bool cjc_say_once(const char *message)
{
	char name[64];
	int dir = memo_dir();
	if (dir < 0)
		return true;
	memo_name(message, name, sizeof name);
	int fd = cjc_open_regular(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
	struct stat st;
	if (fd >= 0 && !fstat(fd, &st) && st.st_size == 0)
		forget_old(dir); /* a new memo: once per message and build */
	close(dir);
	if (fd < 0)
		return true;
	bool say = cjc_lock_bounded(fd, LOCK_EX) || renew(fd);
	close(fd); /* unlocks */
	return say;
}
