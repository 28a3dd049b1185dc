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
 * not a JSON object (torn by a crash, edited by hand) is skipped and counted.
 * The fields are the caller's (see the tool's why.h); the journal only
 * stores and returns objects.
 */
#ifndef CJC_JOURNAL_H
#define CJC_JOURNAL_H

#include <jansson.h>

#include "store/store.h"

#define CJC_JOURNAL_MAX_BYTES (1024 * 1024)

/* Appends one record; returns 0 or -1 with errno. */
int cjc_journal_append(const struct cjc_store *s, json_t *record);

/* Calls fn for every record, oldest first, or (needle not NULL) for those
 * whose line contains needle; fn returns non-zero to stop.  *skipped (may
 * be NULL) counts lines that were not JSON objects. */
int cjc_journal_foreach(const struct cjc_store *s, const char *needle,
			int (*fn)(json_t *record, void *ctx), void *ctx, size_t *skipped);

#endif
