#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

int cjc_journal_append(const struct cjc_store *s, json_t *record)
{
	char *text = json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER);
	char *path = cjc_store_path(s, "journal");
	int rc = -1, e = ENOMEM;
	int fd = text ? cjc_store_open_regular(s, "journal", O_WRONLY | O_CREAT | O_APPEND, 0666) : -1;
	if (fd >= 0) {
		size_t n = strlen(text);
		text[n] = '\n'; /* the NUL becomes the end of the line */
		rc = cjc_write_all(fd, text, n + 1);
		e = errno;
		struct stat st;
		if (!rc && !fstat(fd, &st) && st.st_size > CJC_JOURNAL_MAX_BYTES) {
			char *old = cjc_store_path(s, "journal.1");
			(void)rename(path, old); /* another writer may have done it first */
			free(old);
		}
		close(fd);
	} else if (text) {
		e = errno;
	}
	free(text);
	free(path);
	errno = e;
	return rc;
}

/* Calls fn for each line of one file that is a JSON object. */
static int foreach_in(const struct cjc_store *s, const char *name, const char *needle,
		      int (*fn)(json_t *, void *), void *ctx, size_t *skipped)
{
	struct cjc_buf text = CJC_BUF_INIT;
	if (cjc_store_read(s, name, CJC_STORE_MAX_FILE, &text)) {
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
	static const char *const files[] = { "journal.1", "journal" };
	int rc = 0;
	for (size_t i = 0; i < 2 && !rc; i++)
		rc = foreach_in(s, files[i], needle, fn, ctx, skipped);
	return rc > 0 ? 0 : rc;
}
