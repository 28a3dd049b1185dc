#include "store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"

/* This user's journal, or its older half: "journal-<uid>[.1]". */
static void own_name(char *name, size_t len, bool older)
{
	snprintf(name, len, "journal-%lu%s", (unsigned long)geteuid(), older ? ".1" : "");
}

/* Your journal open for appending; one that others wrote or can write is
 * unlinked (relative to the namespace's fd: the name, never what a link
 * there points to) and begun afresh. */
static int open_own(const struct cjc_store *s, const char *name)
{
	int flags = O_WRONLY | O_CREAT | O_APPEND;
	int fd = cjc_store_open_regular(s, name, flags, 0644);
	if (fd < 0 || cjc_fd_trusted(fd))
		return fd;
	close(fd);
	fd = unlinkat(s->fd, name, 0) ? -1 : cjc_store_open_regular(s, name, flags | O_EXCL, 0644);
	if (fd < 0)
		errno = EPERM;
	return fd;
}

int cjc_journal_append(const struct cjc_store *s, json_t *record)
{
	char name[64];
	own_name(name, sizeof name, false);
	char *text = json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc = -1, e = ENOMEM;
	int fd = text ? open_own(s, name) : -1;
	if (fd >= 0) {
		size_t n = strlen(text);
		text[n] = '\n'; /* the NUL becomes the end of the line */
		rc = cjc_write_all(fd, text, n + 1);
		e = errno;
		struct stat st;
		if (!rc && !fstat(fd, &st) && st.st_size > CJC_JOURNAL_MAX_BYTES) {
			char older[64];
			own_name(older, sizeof older, true);
			/* another of your writers may have done it first */
			(void)renameat(s->fd, name, s->fd, older);
		}
		close(fd);
	} else if (text) {
		e = errno;
	}
	free(text);
	errno = e;
	return rc;
}

/* Calls fn for each line of one file that is a JSON object. */
static int foreach_in(const struct cjc_store *s, const char *name, const char *needle,
		      int (*fn)(json_t *, void *), void *ctx, size_t *skipped)
{
	struct cjc_buf text = CJC_BUF_INIT;
	int fd = cjc_store_openat(s, name, O_RDONLY | O_NONBLOCK, 0);
	if (fd >= 0 && !cjc_fd_trusted(fd)) { /* anyone may have written it: ignored */
		close(fd);
		return 0;
	}
	if (cjc_read_regular_and_close(fd, CJC_STORE_MAX_FILE, &text)) {
		cjc_buf_release(&text);
		return errno == ENOENT ? 0 : -1;
	}
	int stop = 0;
	for (char *line = text.data, *eol; !stop && line && *line; line = eol ? eol + 1 : NULL) {
		eol = strchr(line, '\n');
		size_t n = eol ? (size_t)(eol - line) : strlen(line);
		if (needle && !memmem(line, n, needle, strlen(needle)))
			continue;
		json_t *r = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
		if (json_is_object(r))
			stop = fn(r, ctx);
		else if (skipped)
			++*skipped;
		json_decref(r);
	}
	cjc_buf_release(&text);
	return stop;
}

int cjc_journal_foreach(const struct cjc_store *s, const char *needle,
			int (*fn)(json_t *record, void *ctx), void *ctx, size_t *skipped)
{
	/* the shared journal of earlier versions, then yours, oldest first */
	char files[4][64] = { "journal.1", "journal" };
	own_name(files[2], sizeof files[2], true);
	own_name(files[3], sizeof files[3], false);
	int rc = 0;
	for (size_t i = 0; i < 4 && !rc; i++)
		rc = foreach_in(s, files[i], needle, fn, ctx, skipped);
	return rc > 0 ? 0 : rc;
}
