/*
 * why.h - the journal's records of compiles (store/journal.h), as cjc's
 * launcher and the JIT library write them and `cjc why` reads them: what
 * happened, what went into the key, and for a miss, what differed from the
 * nearest earlier entry for the same source and target.
 *
 * A record is one JSON object:
 *
 *   time          RFC 3339 UTC
 *   result        "hit", "miss", "failed" (the compiler failed), "uncacheable", "error"
 *   source        the source file, resolved (realpath), or null; a JIT
 *                 request's is CJC_JIT_SOURCE_DIR/<name> (metadata.h)
 *   output        the output file, resolved, or null (JIT: null)
 *   target        the build-target label, or null (JIT: "jit")
 *   cwd           the working directory, or null
 *   jit           (JIT compiles only) {"prefix": the library's settings
 *                 prefix or null, "name": the request's name, "compiler":
 *                 "nvcc" or "nvrtc"}
 *   entry         the entry served (hit) or made (miss), or null
 *   published     (miss) whether the entry is in the store (published by this
 *                 compile or by a concurrent one that won)
 *   not_published (miss) why not, when it is not
 *   saved_ms      (hit) the recorded duration of the entry served
 *   duration_ms   (miss) how long the compiler ran
 *   reason        why it was uncacheable, an error, why a JIT compile
 *                 failed, or (miss) what the lookup found
 *   facts         (hit, miss) what went into the direct key: "args" (one string
 *                 per option; a JIT request's extra_signature and hook as
 *                 "jit:extra_signature=..." and "jit:hook=..."), "env"
 *                 (object), "nvcc" and "host" ({"path", "version" (last
 *                 line), "digest"}; for NVRTC, "nvcc" is the library and
 *                 "compiler" is "NVRTC"), "cwd" (null unless the output
 *                 records it), "cwd_keyed_by" ("-G", "-g" or null),
 *                 "resolved" (object: relative path -> where it resolves, as
 *                 keyed), "base_dir" (or null), "rule" (how the key treats
 *                 the working directory, in words: place.h), "records_dirs"
 *                 (-g, -G or -lineinfo: the output names directories)
 *   paths         (nvcc compiles) how their paths are keyed (path-free keys,
 *                 place.h): {"root": the root or null, "keyed": "exact: ..."
 *                 or "relative to the root: ...", with the reason, "exact":
 *                 why this compile's paths stay exact though the options
 *                 allowed a root (a file or the output names a path), or null}
 *   compared_with (miss) the earlier entry, or null when none is recorded
 *   compared_source (miss) the earlier entry's source, when it is another
 *                 directory's compile of this source (below)
 *   changes       (miss) array of {"kind", ...}: dependency / dependency_added /
 *                 dependency_removed ("path", "old", "new" sha256),
 *                 argument_added / argument_removed ("argument"),
 *                 environment ("name", "old", "new"), compiler ("which",
 *                 "old", "new"), working_directory ("old", "new",
 *                 "recorded_by"), resolution ("argument": a relative path,
 *                 "old", "new": where it resolved), base_dir ("old", "new"),
 *                 checkout ("old", "new": the two directories, "source": the
 *                 other's, "keyed": whether the directory is in the key,
 *                 "shared_by": the setting that would share entries between
 *                 them, or null for none, "why")
 *   note          (miss) what the lookup or the comparison found when no
 *                 change explains the miss (e.g. the entry was cleaned)
 *
 * The earlier entry: among the records for the same source and target (and,
 * for JIT compiles, the same library prefix) that name an entry in the
 * store, the one whose facts differ least (the latest of those); its
 * dependencies come from that entry's metadata.json, so they are compared
 * only while the entry is still there.
 *
 * Another directory's (nvcc compiles, when no such record exists): the
 * record of the same target whose source shares the most trailing path
 * components with this one (at least the source's path under its root,
 * place.h), then the one whose facts differ least, the latest of those; its
 * facts and dependencies are compared with that directory's paths moved
 * under this one's, and the "checkout" change comes first when the
 * directory is in the key, last when not.  The rules of docs/key.md decide
 * "shared_by": none where the output names an _INTERNAL_ symbol (paths
 * "exact" says so), where the two working directories lie differently in
 * their directories, or where a -D or -X option names the directory;
 * "base_dir=<the directory above both> with hash_dir=false" where the
 * output records directories; else "base_dir=<...>".  The journal bounds
 * the search (journal.h); the store's entries are not scanned.
 *
 * Calling sequence: cjc_why_record() (then cjc_why_set_jit() for a JIT
 * compile), the result's own fields, cjc_why_facts() or
 * cjc_why_facts_nvrtc() for a hit or a miss, cjc_why_miss() for a miss,
 * then cjc_journal_append().  The caller owns the record (json_decref).
 */
#ifndef CJC_COMPILE_WHY_H
#define CJC_COMPILE_WHY_H

#include <jansson.h>

#include "keys/manifest.h"
#include "keys/nvcc_args.h"
#include "store/identity.h"
#include "store/store.h"

/* A new record; source and output are resolved when they exist. */
json_t *cjc_why_record(const char *result, const char *cwd, const char *source,
		       const char *output, const char *target);
/* A JIT compile's "jit" member; prefix may be NULL. */
void cjc_why_set_jit(json_t *record, const char *prefix, const char *name, const char *compiler);
/* What went into the direct key of an nvcc compile. */
json_t *cjc_why_facts(const struct cjc_compile *c, const char *cwd,
		      const struct cjc_identity *nvcc, const struct cjc_identity *host,
		      char *const *env, size_t nenv);
/* The "paths" member: root and exact may be NULL. */
json_t *cjc_why_paths(const char *root, const char *keyed, const char *exact);
/* What went into the key of an NVRTC compile: its words, and the library. */
json_t *cjc_why_facts_nvrtc(char *const *args, size_t nargs, const struct cjc_identity *library);
/* For a miss: sets compared_with and changes (and note, when they say nothing). */
void cjc_why_miss(const struct cjc_store *s, json_t *record, const struct cjc_dep *deps,
		  size_t ndeps);

/* How many of a miss's changes explain it: all but the last when that is
 * another directory's compile whose directory is not in the key. */
size_t cjc_why_explaining(json_t *changes);

/* A path as records hold it: resolved, or made absolute against cwd when it
 * does not exist; JSON null for NULL. */
json_t *cjc_why_path(const char *path, const char *cwd);
/* The text a journal line holding this path holds, for cjc_journal_foreach's
 * needle; NULL (every line) when the journal escapes it. */
const char *cjc_why_needle(const char *path);

#endif
