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
 * Records live in memory for the process and in a small file per
 * translation unit (blob.h, magic "CJCV"), loaded before a lookup and saved
 * after it when anything was added; the newest CJC_METAMEMO_MAX are kept.
 * Payload: u32 version, u32 count, then per record: 64 bytes key, 32 bytes
 * SHA, u64 duration_ms, u32 file count, then per file: u32 length, name,
 * u64 size, 64 bytes sha256 hex.
 */
#ifndef CJC_METAMEMO_H
#define CJC_METAMEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "hash.h"
#include "metadata.h"

#define CJC_METAMEMO_MAX 64

/* Finds the record of key whose metadata hashed to sha: a copy of its
 * artifacts (free with cjc_artifacts_free) and its duration. */
bool cjc_metamemo_find(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
		       struct cjc_artifact **files, size_t *nfiles, int64_t *duration_ms);
void cjc_metamemo_add(const char *key, const unsigned char sha[CJC_DIGEST_LEN],
		      const struct cjc_artifact *files, size_t nfiles, int64_t duration_ms);
struct cjc_store;
/* The file of the store (sub: its name there) that remembers them. */
int cjc_metamemo_load(const struct cjc_store *s, const char *sub);
int cjc_metamemo_save(const struct cjc_store *s, const char *sub);
void cjc_metamemo_forget(void);

#endif
