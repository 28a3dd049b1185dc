/*
 * filehash.h - the SHA-256 and size of source and header files, as a compile
 * sees them now, without reading files that have not changed.
 *
 * Results are remembered for the life of the process, so a file listed by
 * several manifest records is read once.  cjc_filehash_get() returns 0, or -1
 * with errno when the file cannot be read (a missing header is simply a
 * mismatch for the caller).  cjc_filehash_forget() drops what is remembered.
 *
 * Across processes, hashes are remembered in a hash-cache file (blob.h,
 * magic "CJCF"), one per translation unit: cjc_filehash_load() reads one
 * before the lookup, cjc_filehash_save() writes it back when something was
 * hashed.  Each record holds a path, the file's stamp when it was hashed
 * (device, inode, size, mtime, ctime), the time the hash was taken, and the
 * hash.  A remembered hash is used only when the stamp still holds
 * (stamp.h: unchanged, and older than the racy-clean margin when it was
 * taken); else the file is read and hashed again.  A damaged file is ignored.
 * The file is a memo (blob.h): read only when it is yours or root's and no
 * one else can write it (a record forged by another user with a file's
 * stamp and another content's hash would serve a wrong hit), and written
 * into one of yours (`<sub>.<uid>` where someone else's is at sub).
 * A record may instead say that no file was at path while the nearest
 * directory above it that exists had the stamp (cjc_filehash_absent).
 *
 * Payload: u32 version (2), u32 count, then per record: the path (util.h's
 * length-prefixed string), u32 kind (0: a hash, 1: absent), for kind 1 a
 * u32 length (that directory is the path's first so many bytes), the stamp
 * (stamp.h: the file's, or for kind 1 the directory's), u64 taken_ns, 32
 * bytes of SHA-256 (zero for kind 1).
 */
#ifndef CJC_FILEHASH_H
#define CJC_FILEHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "base/util.h"

int cjc_filehash_get(const char *path, uint64_t *size, unsigned char sha[CJC_DIGEST_LEN]);
void cjc_filehash_forget(void);
/* Makes every later cjc_filehash_get() look at the file again (its stamp,
 * else its bytes), through directories opened afresh: for what a compile
 * read, which may have changed, or been swapped with its directory, since
 * the lookup before it looked. */
void cjc_filehash_recheck(void);
/* Hashes many files at once, on up to one thread per CPU (4 at most), when
 * most of them have no remembered hash (a fresh store, a new checkout), so
 * that a later cjc_filehash_get of each is answered from memory.  Otherwise
 * it does nothing: checking stamps is not worth a thread. */
void cjc_filehash_prefetch(char *const *paths, size_t n);
/* Whether no file is at path now (ENOENT or ENOTDIR), as stat(2) would say.
 * Directories are opened once per process, so checking many names in one
 * directory walks its path once; cjc_filehash_forget() closes them.  A name
 * found absent before is known absent while its directory's stamp holds. */
bool cjc_filehash_absent(const char *path);
/* The hash-cache file's records (the file itself: store/records.h).
 * Decoding remembers each record; encoding returns false, and adds
 * nothing, when nothing was hashed since the last decode or encode. */
#define CJC_FILEHASH_MAGIC "CJCF"
#define CJC_FILEHASH_VERSION 2
void cjc_filehash_decode(struct cjc_cursor *c, uint32_t count);
bool cjc_filehash_encode(struct cjc_buf *records, uint32_t *count);
/*
 * The shared hash cache: the records of files under dirs (each ending in
 * '/': the toolkit's and the system's headers), which every translation
 * unit of a store reads, kept in one file of their own besides each
 * translation unit's.  A translation unit new to the store loads it
 * (records.h), so a remote hit into a store that compiled anything before
 * does not hash cuda_runtime.h's two hundred headers again.  Its records
 * are checked as any are (stamps); encode_shared gives them, only when one
 * under dirs changed.
 */
void cjc_filehash_share_under(char *const *dirs, size_t n);
bool cjc_filehash_encode_shared(struct cjc_buf *records, uint32_t *count);
/* Decodes the shared file's records as inherited: a unit's own file keeps
 * only those it looked at (not every header a store has seen), and the
 * shared file keeps them all (another toolkit's too). */
void cjc_filehash_decode_shared(struct cjc_cursor *c, uint32_t count);
/* How many hashes were taken from a hash-cache file / read from files, and
 * how many names were known absent by their directory's stamp. */
void cjc_filehash_counts(uint64_t *reused, uint64_t *hashed, uint64_t *gone);

#endif
