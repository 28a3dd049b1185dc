/*
 * journal.h - the record of recent compiles, for `cjc why` and per-target
 * statistics.
 *
 * One line per compile through the cache (hit, miss, uncacheable, error),
 * each a compact JSON object, appended with one write(2) to the user's own
 * file `journal-<uid>` of the namespace (mode 0644 whatever the umask),
 * opened O_APPEND, so that parallel compiles do not interleave their lines.
 * When the file has grown past CJC_JOURNAL_MAX_BYTES it is renamed to
 * `journal-<uid>.1` (replacing the older one), so the record stays bounded
 * at about twice that size and a hit pays one open, one fstat and one write.
 *
 * Trust by owner: a group store's members can append to any file they can
 * write, so a journal file counts only when it is owned by you or root and
 * writable by nobody else (checked on the open fd).  A writer finding its
 * file otherwise takes it out of sight and starts a new one; a reader
 * ignores it.  Readers take the shared `journal.1` and `journal` that
 * earlier versions wrote (when trusted by that rule: a store of one user),
 * then journal-<uid>.1 and journal-<uid>, oldest line first; a line that is
 * not a JSON object (torn by a crash, edited by hand) is skipped and counted;
 * a file larger than CJC_STORE_MAX_FILE is not read (EFBIG): a miss reads
 * the journal to explain itself.
 * The fields are the caller's (see the tool's why.h); the journal only
 * stores and returns objects.
 *
 * Reports (cjc_journal_scan) read every user's journal the same rule
 * trusts (a copy of a store that a CI runner saved holds the runner's
 * journal-<uid>): the files the namespace lists as journal, journal-<uid>
 * and each one's .1, the older half of each first.  Files are read in
 * chunks, line by line, up to CJC_JOURNAL_MAX_SCAN each; a line longer
 * than CJC_JOURNAL_MAX_LINE is skipped and counted, so memory stays
 * bounded.  A name that is not a regular file (a link, a FIFO, a directory
 * someone planted) or a larger file is left unread and counted, as an
 * untrusted file is.
 * cjc_journal_skim() finds the spans of a record's top-level members
 * without parsing the rest (a record's "facts" are most of its bytes): the
 * caller decodes the few it needs.
 */
#ifndef CJC_JOURNAL_H
#define CJC_JOURNAL_H

#include <jansson.h>
#include <stdint.h>

#include "store/store.h"

#define CJC_JOURNAL_MAX_BYTES (1024 * 1024)

/* Appends one record; returns 0 or -1 with errno. */
int cjc_journal_append(const struct cjc_store *s, json_t *record);

/* Calls fn for every record, oldest first, or (needle not NULL) for those
 * whose line contains needle; fn returns non-zero to stop.  *skipped (may
 * be NULL) counts lines that were not JSON objects. */
int cjc_journal_foreach(const struct cjc_store *s, const char *needle,
			int (*fn)(json_t *record, void *ctx), void *ctx, size_t *skipped);

#define CJC_JOURNAL_MAX_LINE ((size_t)16 << 20)
#define CJC_JOURNAL_MAX_SCAN ((uint64_t)2 << 30) /* a file, for a report: a million records fit */

struct cjc_journal_counts {
	size_t files;   /* journal files read */
	size_t ignored; /* files left unread: not trusted, not regular files, links */
	size_t lines;   /* lines handed to the caller */
	size_t skipped; /* lines longer than CJC_JOURNAL_MAX_LINE, not handed */
	uint64_t bytes; /* bytes read */
};

/* Calls fn for every line (without its newline) of every trusted journal
 * file of the namespace; fn returns non-zero to stop.  Adds to *counts
 * (zero it first).  0, or -1 with errno when a file or the namespace could
 * not be read (what was read before counts). */
int cjc_journal_scan(const struct cjc_store *s, int (*fn)(const char *line, size_t n, void *ctx),
		     void *ctx, struct cjc_journal_counts *counts);

/* A top-level member a caller wants from a record: name in; value and len
 * out: the member's JSON text, a string with its quotes (NULL: absent). */
struct cjc_journal_member {
	const char *name;
	const char *value;
	size_t len;
	size_t len_name; /* set by cjc_journal_skim */
};

/* Finds the members m[0..nm) of the record in line[0, n) (the first of a
 * name that repeats); 0, or -1 when the line is not a JSON object as far as
 * its brackets, quotes and commas tell (members found before still set). */
int cjc_journal_skim(const char *line, size_t n, struct cjc_journal_member *m, size_t nm);
/* The length of the JSON value that text[0, n) starts with (no blanks
 * before it), as the skim finds it; 0 when it does not end there. */
size_t cjc_journal_value_len(const char *text, size_t n);

#endif
