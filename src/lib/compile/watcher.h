/*
 * watcher.h - the watching helper (docs/store.md#the-watching-helper): a
 * process of this user's that keeps inotify watches (base/watch.h) on the
 * files of manifest records recently checked, so that a `cjc nvcc` hit
 * need not stat every header its record lists.
 *
 * A compile about to check a record (manifest.h) by stat asks the helper,
 * in one round trip, whether the record (named by its digest,
 * cjc_watcher_digest) is unchanged since the helper last found it so; yes
 * skips the stats.  No, no helper, or no answer within
 * CJC_WATCHER_WAIT_US: the compile checks as before, and after a hit it
 * sends the record (cjc_watcher_checked).  The helper then watches every
 * path the record lists, reads its generation G, and checks the record's
 * files itself (cjc_manifest_record_holds: the stamps and hashes a compile
 * uses), its relative paths taken from the compile's working directory
 * (part of the digest); only if they hold is the record marked unchanged
 * in G.  It
 * answers yes while its generation is G: every change after the watches
 * were in place is an event that starts a new generation, and its own
 * check after them saw every change before.  So its yes rests on nothing
 * the compile said but the record's bytes.  A record with a relative path,
 * or a path inotify cannot vouch for, is never marked.
 *
 * Who and where: base/helperproc.h.  The helper's name is keyed with the
 * user's secret and says what a helper's view of paths rests on: this
 * cjc (its stamp), the mount namespace and the root directory; a compile
 * elsewhere has a helper of its own.  A socket at the name whose listener
 * is another user's is not used (the compile is told, cjc_watcher_news);
 * neither is a run-time directory that is not private (fs.h).  The helper
 * is started (`cjc __watch`, src/tool/watch_cmd.c) by a compile that
 * finds none, exits after CJC_WATCHER_IDLE_S without clients, or once its
 * socket is gone from its name; killing it costs speed, never correctness.
 *
 * The protocol, in host byte order, on a stream socket, no greeting:
 *     ask:      u8 'a', u32 32, the record's digest
 *     answer:   u8 '1' (unchanged) or '0'
 *     checked:  u8 'c', u32 length (at most CJC_WATCHER_MAX_RECORD), then
 *               u32 length and the working directory, and a one-record
 *               manifest payload (manifest.h); no answer
 *
 * Calling sequence (a compile): struct cjc_watcher w = CJC_WATCHER_INIT;
 * cjc_watcher_unchanged per record about to be checked;
 * cjc_watcher_checked for the record a hit was served by;
 * cjc_watcher_close.  Nothing here fails a build or prints.
 */
#ifndef CJC_WATCHER_H
#define CJC_WATCHER_H

#include <stdbool.h>

#include "base/hash.h"
#include "base/util.h"
#include "keys/manifest.h"

#define CJC_WATCHER_VERSION 1u
#define CJC_WATCHER_WAIT_US 300 /* the bound on an answer; past it, stat */
#define CJC_WATCHER_IDLE_S 600
#define CJC_WATCHER_MAX_RECORD (64u << 20)

struct cjc_watcher {
	int fd;                               /* to the helper, or -1 */
	bool tried;                           /* the helper was looked for */
	bool vouched;                         /* for the record of digest */
	unsigned char digest[CJC_DIGEST_LEN]; /* the last record asked about */
	struct cjc_buf news;                  /* what the user is to be told (once) */
};
#define CJC_WATCHER_INIT                                                                           \
	{                                                                                          \
		-1, false, false, { 0 }, CJC_BUF_INIT                                              \
	}

/* Whether the helper vouches that rec's files are unchanged (one round
 * trip, at most CJC_WATCHER_WAIT_US); starts one where none lives. */
bool cjc_watcher_unchanged(struct cjc_watcher *w, const char *cwd,
			   const struct cjc_manifest_record *rec);
/* Gives the helper rec, found unchanged by stat, to watch and check
 * (nothing when it vouched for rec, or none answers). */
void cjc_watcher_checked(struct cjc_watcher *w, const char *cwd,
			 const struct cjc_manifest_record *rec);
/* A line to tell the user once (a socket or directory not ours), or NULL. */
const char *cjc_watcher_news(const struct cjc_watcher *w);
void cjc_watcher_close(struct cjc_watcher *w);

/* For the helper: the record's digest (paths, sizes, hashes, absent
 * names, the entry key) where its relative paths start from cwd, and the
 * helper's name (hex) keyed with key. */
void cjc_watcher_digest(const struct cjc_manifest_record *rec, const char *cwd,
			unsigned char out[CJC_DIGEST_LEN]);
void cjc_watcher_name(const unsigned char *key, char name[CJC_HEX_LEN + 1]);

#endif
