/*
 * manifest.h - how a compile finds its entry without running the
 * preprocessor.
 *
 * A manifest is keyed by the "direct key": everything about a compile that
 * is known before it runs (arguments, options-file contents, toolchain
 * identity, environment, the source's bytes).  It lists records, newest
 * first; each record is the dependency set of one earlier miss (every file
 * nvcc's dependency output named, with its size and SHA-256), the include
 * candidates that were absent then (see includescan.h), and the entry key
 * that compile produced.  A compile whose every listed file still hashes the
 * same and whose every candidate is still absent would read exactly the same
 * bytes, so its entry key is the recorded one.
 *
 * The file is a blob (blob.h, magic "CJCM") whose payload is, little-endian:
 *
 *     u32 version (2)            u32 record count
 *     per record:  64 bytes entry key (lowercase hex)
 *                  u32 dependency count, then per dependency:
 *                      u32 path length, path bytes, u64 size, 32 bytes SHA-256
 *                  u32 absent count, then per candidate: u32 length, path bytes
 *                  u32 root length, root bytes (0: none; path-free keys, place.h)
 *                  u32 flags (1: exact, key.h)
 *
 * The store packs that payload (blob.h: one zstd frame, at the store's
 * compression_level); the plain form, which remote stores are sent, is
 * read as well.  Version 1, without the last two fields, is still read (no
 * root, not exact).
 * cjc_manifest_match() first moves each record made under another root
 * under this place's (place.h), so what is hashed and served names this
 * directory's files.
 *
 * A manifest is a hint, not an entry: it is replaced atomically (rename), a
 * lost update under concurrency costs at most a later miss, and a damaged
 * one reads as empty.  At most CJC_MANIFEST_MAX records are kept.
 */
#ifndef CJC_MANIFEST_H
#define CJC_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>

#include "base/hash.h"
#include "base/util.h"
#include "keys/key.h"

#define CJC_MANIFEST_MAX 32
/* The most a packed manifest (blob.h) may inflate to: store.h's bound on
 * the store's files. */
#define CJC_MANIFEST_MAX_FILE ((size_t)64 << 20)

/* A record (struct cjc_manifest_record, struct cjc_dep) is what an entry
 * key is made of: key.h has it. */

struct cjc_manifest {
	struct cjc_manifest_record *recs;
	size_t n;
};

/* Decodes a payload; returns 0, or -1 with errno EBADMSG. */
int cjc_manifest_decode(const void *p, size_t n, struct cjc_manifest *m);
void cjc_manifest_encode(const struct cjc_manifest *m, struct cjc_buf *out);
/* The payload of old with a copy of rec put first, dropping the oldest
 * beyond the limit (the file itself: store/records.h). */
#define CJC_MANIFEST_MAGIC "CJCM"
void cjc_manifest_encode_with(const struct cjc_manifest *old,
			      const struct cjc_manifest_record *rec, struct cjc_buf *payload);
/* A manifest file's whole contents (the blob), as a remote store holds it
 * (remote.h): decode, and encode old with a copy of rec put first. */
int cjc_manifest_decode_file(const void *p, size_t n, struct cjc_manifest *m);
void cjc_manifest_encode_file_with(const struct cjc_manifest *old,
				   const struct cjc_manifest_record *rec, struct cjc_buf *out);
struct cjc_place;
/* The index of the first record whose files are unchanged and whose entry
 * key is what those files give in this place (key.h), or -1.  So a record
 * can only lead to the entry its own files name: a poisoned one is a miss. */
long cjc_manifest_match(const struct cjc_manifest *m, const char *direct_key,
			const struct cjc_place *place);
/* The same, where unchanged(ctx, r) may vouch that r's files are unchanged
 * (the watching helper, compile/watcher.h); else they are checked. */
long cjc_manifest_match_vouched(const struct cjc_manifest *m, const char *direct_key,
				const struct cjc_place *place,
				bool (*unchanged)(void *ctx, const struct cjc_manifest_record *r),
				void *ctx);
/* The same, where holds(ctx, r) alone says whether r's files are unchanged
 * (the JIT library's, which knows its requests' sources and headers). */
long cjc_manifest_match_held(const struct cjc_manifest *m, const char *direct_key,
			     const struct cjc_place *place,
			     bool (*holds)(void *ctx, const struct cjc_manifest_record *r),
			     void *ctx);
/* Whether every file r lists hashes as recorded and every candidate is
 * still absent (filehash.h: by stamp where a hash is remembered). */
bool cjc_manifest_record_holds(const struct cjc_manifest_record *r);
void cjc_manifest_record_release(struct cjc_manifest_record *rec);
void cjc_manifest_release(struct cjc_manifest *m);

#endif
