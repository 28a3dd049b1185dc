#include "store/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
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

/*
 * Reading: one file line by line through a buffer that grows up to
 * CJC_JOURNAL_MAX_LINE, so a file of any size costs that much memory at
 * most; a longer line is skipped (counted) up to its newline.
 */
struct reader {
	char *buf;
	size_t cap;
	uint64_t max_file; /* a larger file is an error (EFBIG) */
	bool lenient;      /* a file that cannot be opened as a regular file, or is larger, is ignored */
	int (*fn)(const char *line, size_t n, void *ctx);
	void *ctx;
	struct cjc_journal_counts *counts;
};

#define READ_CHUNK ((size_t)256 << 10)

/* Hands each complete line of buf[0, len) to fn; returns how many bytes it
 * used and sets *stop when fn asked to stop. */
static size_t hand_lines(struct reader *r, size_t len, bool *skipping, int *stop)
{
	size_t start = 0;
	char *nl;
	while (!*stop && (nl = memchr(r->buf + start, '\n', len - start))) {
		size_t n = (size_t)(nl - (r->buf + start));
		if (!*skipping && n > CJC_JOURNAL_MAX_LINE) {
			r->counts->skipped++;
		} else if (!*skipping) {
			r->counts->lines++;
			*stop = r->fn(r->buf + start, n, r->ctx);
		}
		*skipping = false;
		start += n + 1;
	}
	return start;
}

/* Room for the next read: the buffer grows while the line in it may still
 * be taken (to twice CJC_JOURNAL_MAX_LINE at most); a line that outgrows
 * CJC_JOURNAL_MAX_LINE is dropped up to its newline. */
static void make_room(struct reader *r, size_t *len, bool *skipping)
{
	if (*len > CJC_JOURNAL_MAX_LINE) {
		if (!*skipping)
			r->counts->skipped++;
		*skipping = true;
		*len = 0;
	}
	if (r->cap - *len >= READ_CHUNK / 2)
		return;
	r->cap = r->cap ? 2 * r->cap : READ_CHUNK;
	r->buf = cjc_xrealloc(r->buf, r->cap);
}

/* Every line of the first size bytes of the file open at fd (which it
 * closes): what it held when it was opened; a journal that grows meanwhile
 * is not followed.  fn returns non-zero to stop.  The last line may lack
 * its newline. */
static int read_lines(struct reader *r, int fd, uint64_t size)
{
	size_t len = 0;
	bool skipping = false;
	int stop = 0, rc = 0;
	for (uint64_t left = size; left;) {
		make_room(r, &len, &skipping);
		size_t room = r->cap - len;
		ssize_t got = read(fd, r->buf + len, room < left ? room : (size_t)left);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			rc = got < 0 ? -1 : 0;
			break;
		}
		r->counts->bytes += (uint64_t)got;
		left -= (uint64_t)got;
		size_t used = hand_lines(r, len + (size_t)got, &skipping, &stop);
		len += (size_t)got - used;
		memmove(r->buf, r->buf + used, len);
		if (stop)
			break;
	}
	if (!rc && !stop && len && !skipping && len <= CJC_JOURNAL_MAX_LINE) {
		r->counts->lines++;
		stop = r->fn(r->buf, len, r->ctx);
	}
	int e = errno;
	close(fd);
	errno = e;
	return rc ? -1 : stop;
}

/* One journal file, when it is there and trusted (journal.h); 0 when it is
 * not, 1 when fn stopped. */
static int read_file(const struct cjc_store *s, const char *name, struct reader *r)
{
	int fd = cjc_store_open_regular(s, name, O_RDONLY, 0);
	if (fd < 0 && (errno == ENOENT || r->lenient)) {
		r->counts->ignored += errno != ENOENT;
		return 0;
	}
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) || !cjc_stat_trusted(&st)) { /* anyone may have written it: ignored */
		close(fd);
		r->counts->ignored++;
		return 0;
	}
	if ((uint64_t)st.st_size > r->max_file) {
		close(fd);
		r->counts->ignored += r->lenient;
		errno = EFBIG;
		return r->lenient ? 0 : -1;
	}
	r->counts->files++;
	return read_lines(r, fd, (uint64_t)st.st_size);
}

/* The records of the lines of one file (optionally those holding needle). */
struct records {
	const char *needle;
	int (*fn)(json_t *record, void *ctx);
	void *ctx;
	size_t *skipped;
};

static int record_of_line(const char *line, size_t n, void *ctx)
{
	struct records *rs = ctx;
	if (rs->needle && !memmem(line, n, rs->needle, strlen(rs->needle)))
		return 0;
	json_t *r = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
	int stop = 0;
	if (json_is_object(r))
		stop = rs->fn(r, rs->ctx);
	else if (rs->skipped)
		++*rs->skipped;
	json_decref(r);
	return stop;
}

int cjc_journal_foreach(const struct cjc_store *s, const char *needle,
			int (*fn)(json_t *record, void *ctx), void *ctx, size_t *skipped)
{
	/* the shared journal of earlier versions, then yours, oldest first */
	char files[4][64] = { "journal.1", "journal" };
	own_name(files[2], sizeof files[2], true);
	own_name(files[3], sizeof files[3], false);
	struct records rs = { needle, fn, ctx, skipped };
	struct cjc_journal_counts counts = { 0 };
	/* as every small file of the store is read: a compile's miss reads it */
	struct reader r = { .max_file = CJC_STORE_MAX_FILE, .fn = record_of_line, .ctx = &rs,
			    .counts = &counts };
	int rc = 0;
	for (size_t i = 0; i < 4 && !rc; i++)
		rc = read_file(s, files[i], &r);
	free(r.buf);
	if (skipped)
		*skipped += counts.skipped;
	return rc > 0 ? 0 : rc;
}

/* "journal", "journal-<uid>", each optionally ".1": the names a journal has. */
static bool is_journal_name(const char *name)
{
	if (strncmp(name, "journal", 7))
		return false;
	name += 7;
	if (*name == '-') {
		size_t digits = strspn(++name, "0123456789");
		if (!digits || digits > 10)
			return false;
		name += digits;
	}
	return !*name || !strcmp(name, ".1");
}

/* Older first: by user ("journal" before "journal-<uid>"), then ".1" first. */
static int journal_order(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t nx = strcspn(x, "."), ny = strcspn(y, ".");
	int c = nx != ny ? (nx < ny ? -1 : 1) : strncmp(x, y, nx);
	return c ? c : -strcmp(x + nx, y + ny);
}

#define MAX_JOURNAL_FILES 4096

/* The names of the namespace's journal files, in journal_order. */
static int journal_names(const struct cjc_store *s, struct cjc_strvec *names)
{
	int fd = cjc_store_openat(s, ".", O_RDONLY | O_DIRECTORY, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct dirent *de;
	while ((de = readdir(d)) && names->n < MAX_JOURNAL_FILES)
		if (is_journal_name(de->d_name))
			cjc_strvec_push(names, de->d_name);
	closedir(d);
	if (names->n)
		qsort(names->v, names->n, sizeof *names->v, journal_order);
	return 0;
}

int cjc_journal_scan(const struct cjc_store *s, int (*fn)(const char *line, size_t n, void *ctx),
		     void *ctx, struct cjc_journal_counts *counts)
{
	struct cjc_strvec names = { 0 };
	struct reader r = { .max_file = CJC_JOURNAL_MAX_SCAN, .lenient = true, .fn = fn, .ctx = ctx,
			    .counts = counts };
	int rc = journal_names(s, &names);
	for (size_t i = 0; !rc && i < names.n; i++)
		rc = read_file(s, names.v[i], &r);
	int e = errno;
	free(r.buf);
	cjc_strvec_clear(&names);
	errno = e;
	return rc > 0 ? 0 : rc;
}

/*
 * Skimming a record: the spans of its top-level members, found by skipping
 * strings and nesting without decoding them.  Bounded by the text: nothing
 * is read past n, and nesting is counted, not recursed.
 */
static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Past the string that starts at p (a quote); NULL when it does not end. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end;) {
		const char *q = memchr(p, '"', (size_t)(end - p));
		if (!q)
			return NULL;
		size_t backslashes = 0;
		while (q - backslashes > p && q[-1 - (ptrdiff_t)backslashes] == '\\')
			backslashes++;
		if (!(backslashes & 1))
			return q + 1;
		p = q + 1;
	}
	return NULL;
}

/* Past an object or array that starts at p; NULL when it does not close. */
static const char *skip_nested(const char *p, const char *end)
{
	size_t depth = 0;
	while (p && p < end) {
		char c = *p;
		if (c == '"') {
			p = skip_string(p, end);
			continue;
		}
		p++;
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return p;
	}
	return NULL;
}

/* Past the value at p: a string, an object or array, or a literal. */
static const char *skip_value(const char *p, const char *end)
{
	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p == '{' || *p == '[')
		return skip_nested(p, end);
	const char *q = p;
	while (q < end && ((*q && strchr("+-.eE", *q)) || (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z')))
		q++;
	return q > p ? q : NULL;
}

size_t cjc_journal_value_len(const char *text, size_t n)
{
	const char *end = skip_value(text, text + n);
	return end ? (size_t)(end - text) : 0;
}

/* Sets the wanted member named by the string [name, name_end), if any. */
static void take_member(struct cjc_journal_member *m, size_t nm, const char *name,
			const char *name_end, const char *value, const char *value_end)
{
	size_t n = (size_t)(name_end - name) - 2; /* without the quotes */
	for (size_t i = 0; i < nm; i++) {
		if (!m[i].value && m[i].len_name == n && !memcmp(m[i].name, name + 1, n)) {
			m[i].value = value;
			m[i].len = (size_t)(value_end - value);
			return;
		}
	}
}

int cjc_journal_skim(const char *line, size_t n, struct cjc_journal_member *m, size_t nm)
{
	const char *end = line + n, *p = skip_blanks(line, end);
	for (size_t i = 0; i < nm; i++) {
		m[i].value = NULL;
		m[i].len = 0;
		m[i].len_name = strlen(m[i].name);
	}
	if (p >= end || *p++ != '{')
		return -1;
	p = skip_blanks(p, end);
	if (p < end && *p == '}')
		return skip_blanks(p + 1, end) == end ? 0 : -1;
	while (p && p < end) {
		const char *name = p, *name_end = *p == '"' ? skip_string(p, end) : NULL;
		p = name_end ? skip_blanks(name_end, end) : NULL;
		if (!p || p >= end || *p != ':')
			return -1;
		const char *value = skip_blanks(p + 1, end), *value_end = skip_value(value, end);
		if (!value_end)
			return -1;
		take_member(m, nm, name, name_end, value, value_end);
		p = skip_blanks(value_end, end);
		if (p < end && *p == '}')
			return skip_blanks(p + 1, end) == end ? 0 : -1;
		p = p < end && *p == ',' ? skip_blanks(p + 1, end) : NULL;
	}
	return -1;
}
