/*
 * metamemo.h - metadata.json documents already checked, remembered by their
 * SHA-256, so a hit need not parse a large document again.
 *
 * A record says: a metadata.json of entry KEY whose bytes hash to SHA passed
 * the strict check of metadata.h, and lists these artifacts (name, size,
 * sha256) and this duration.  A reader hashes every byte of the metadata it
 * reads; only when the hash equals a record's is the record used in place of
 * parsing, which is a check of every byte against a document that passed.
 *
 * A record may also hold the stamp (stamp.h) of the metadata.json whose
 * bytes hashed to SHA, and when it was taken.  While that stamp holds for
 * the entry's metadata.json, the racy-clean rule proves its bytes unchanged
 * since they were hashed, and the hit neither reads nor hashes them again:
 * the rule that lets a hit trust a source file it does not read.  The
 * artifacts are still hashed, every byte, on every read.
 *
 * Records live in memory for the process and in a small file per
 * translation unit (blob.h, magic "CJCV"), loaded before a lookup and saved
 * after it when anything was added; the newest CJC_METAMEMO_MAX are kept.
 * The file is a memo (blob.h): read only when it is yours or root's and no
 * one else can write it, written into one of yours.
 * Payload: u32 version (2), u32 count, then per record: 64 bytes key, 32
 * bytes SHA, u64 duration_ms, the stamp (five u64), u64 taken_ns (0: no
 * stamp), u32 file count, then per file: u32 length, name, u64 size, 64
 * bytes sha256 hex.
 */
#ifndef CJC_METAMEMO_H
#define CJC_METAMEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "base/hash.h"
#include "keys/metadata.h"

#define CJC_METAMEMO_MAX 64

/* Finds the record of key whose metadata hashed to sha: a copy of its
 * artifacts (free with cjc_artifacts_free) and its duration. */
bool cjc_metamemo_find(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
		       struct cjc_artifact **files, size_t *nfiles, int64_t *duration_ms);
/* The same for the record of key whose stamp holds for now (stamp.h). */
struct cjc_stamp;
bool cjc_metamemo_find_stamp(const char *key, const struct cjc_stamp *now,
			     struct cjc_artifact **files, size_t *nfiles, int64_t *duration_ms);
/* Notes the stamp of the file, taken at taken_ns, that hashed to sha. */
void cjc_metamemo_stamp(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
			const struct cjc_stamp *st, int64_t taken_ns);
void cjc_metamemo_add(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
		      const struct cjc_artifact *files, size_t nfiles, int64_t duration_ms);
/* The memo file's records (the file itself: store/records.h), as
 * cjc_filehash_decode/encode do. */
#define CJC_METAMEMO_MAGIC "CJCV"
#define CJC_METAMEMO_VERSION 3 /* 3: how each artifact is stored */
void cjc_metamemo_decode(struct cjc_cursor *c, uint32_t count);
bool cjc_metamemo_encode(struct cjc_buf *records, uint32_t *count);
void cjc_metamemo_forget(void);

#endif
