/*
 * why.h - what `cjc why` says: the journal records the launcher writes
 * (journal.h), and for a miss, what differed from the nearest earlier entry
 * for the same source and target.
 *
 * A record is one JSON object:
 *
 *   time          RFC 3339 UTC
 *   result        "hit", "miss", "failed" (nvcc failed), "uncacheable", "error"
 *   source        the source file, resolved (realpath), or null
 *   output        the output file, resolved, or null
 *   target        the build-target label, or null
 *   cwd           the working directory
 *   entry         the entry served (hit) or made (miss), or null
 *   published     (miss) whether the entry is in the store (published by this
 *                 compile or by a concurrent one that won)
 *   not_published (miss) why not, when it is not
 *   saved_ms      (hit) the recorded duration of the entry served
 *   duration_ms   (miss) how long nvcc ran
 *   reason        why it was uncacheable, an error, or (miss) what the lookup found
 *   facts         (hit, miss) what went into the direct key: "args" (one string
 *                 per option), "env" (object), "nvcc" and "host" ({"path",
 *                 "version" (last line), "digest"}), "cwd" (null unless the
 *                 output records it), "cwd_keyed_by" ("-G", "-g" or null),
 *                 "resolved" (object: relative path -> where it resolves, as
 *                 keyed), "base_dir" (or null), "rule" (how the key treats
 *                 the working directory, in words: place.h)
 *   compared_with (miss) the earlier entry, or null when none is recorded
 *   changes       (miss) array of {"kind", ...}: dependency / dependency_added /
 *                 dependency_removed ("path", "old", "new" sha256),
 *                 argument_added / argument_removed ("argument"),
 *                 environment ("name", "old", "new"), compiler ("which",
 *                 "old", "new"), working_directory ("old", "new",
 *                 "recorded_by"), resolution ("argument": a relative path,
 *                 "old", "new": where it resolved), base_dir ("old", "new")
 *   note          (miss) what the lookup or the comparison found when no
 *                 change explains the miss (e.g. the entry was cleaned)
 *
 * `cjc why` adds "summary", the plain words derived from those fields:
 * "miss: k.h changed; -DFOO=1 added".
 *
 * The earlier entry: among the records for the same source and target that
 * name an entry in the store, the one whose facts differ least (the latest
 * of those); its dependencies come from that entry's metadata.json, so they
 * are compared only while the entry is still there.
 */
#ifndef CJC_WHY_H
#define CJC_WHY_H

#include <jansson.h>
#include <stdbool.h>

#include "keys/manifest.h"
#include "keys/nvcc_args.h"
#include "store/identity.h"
#include "store/store.h"

/* A new record; source and output are resolved when they exist. */
json_t *cjc_why_record(const char *result, const char *cwd, const char *source,
			   const char *output, const char *target);
/* What went into the direct key. */
json_t *cjc_why_facts(const struct cjc_compile *c, const char *cwd,
			  const struct cjc_identity *nvcc, const struct cjc_identity *host,
			  char *const *env, size_t nenv);
/* For a miss: sets compared_with and changes (and note, when they say nothing). */
void cjc_why_miss(const struct cjc_store *s, json_t *record, const struct cjc_dep *deps,
		      size_t ndeps);
/* `cjc why PATH`: prints the last record of that output or source; 0, or 1
 * when none is recorded. */
int cjc_why_print(const struct cjc_store *s, const char *path, bool json);

#endif
