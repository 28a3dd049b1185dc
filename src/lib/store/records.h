/*
 * records.h - the store's own small files, each a blob (base/blob.h), read
 * and written through the store (store.h): manifests, hash caches, metadata
 * memos, compiler identities.
 *
 * cjc_blob_write() replaces a file of the store atomically (temporary file
 * beside it, then rename; its directories made); cjc_blob_read() reads and
 * checks one, as store.h reads anything of the store (no symbolic links, no
 * FIFOs, bounded).  Both take the file's name inside the namespace and
 * return 0, or -1 with errno (EBADMSG: damaged).
 */
#ifndef CJC_RECORDS_H
#define CJC_RECORDS_H

#include <stdint.h>

#include "base/blob.h"
#include "base/util.h"
#include "keys/manifest.h"
#include "store/store.h"

int cjc_blob_write(const struct cjc_store *s, const char *sub, const char magic[4],
		   const struct cjc_buf *payload);
/* On success, payload holds the bytes after the magic, without the CRC. */
int cjc_blob_read(const struct cjc_store *s, const char *sub, const char magic[4],
		  struct cjc_buf *payload);

/*
 * Memos (docs/trust.md, "your own memos only"): what the store remembers
 * that nothing checks against content on each use (hash and absence
 * records, settled metadata, compiler identities, index rows).  A memo is
 * used only when its file is owned by you or root and writable by no one
 * else (fs.h cjc_fd_trusted), and is written only into a file of your own,
 * created with mode 0644 (less the umask), never group-writable:
 *
 *   <sub>        root's, and that of the first user who wrote it: a store
 *                of one user, or root's, has only these
 *   <sub>.<uid>  a user's own (not root's), where <sub> is someone else's
 *                (or a link, or anything but a regular file)
 *
 * cjc_blob_memo_open(): the file to read: <sub> when it is yours; else
 * (not root, and something is at <sub>) <sub>.<uid> when it is yours; else
 * <sub> when it is root's.  -1 with errno ENOENT (none) or EPERM (none you
 * may trust): then the caller works the memo out afresh.  A hit in a store
 * of one user costs one open and an fstat, as before.
 * cjc_blob_memo_name(): the name to write, in a new allocation.
 * cjc_blob_memo_replace(): writes one whole there: a temporary file
 * created beside it through its directory's fd, renamed over it.
 * cjc_blob_read_memo() / cjc_blob_write_memo(): cjc_blob_read/write for memos.
 */
int cjc_blob_memo_open(const struct cjc_store *s, const char *sub);
char *cjc_blob_memo_name(const struct cjc_store *s, const char *sub);
int cjc_blob_memo_replace(const struct cjc_store *s, const char *sub, const void *p, size_t n);
int cjc_blob_read_memo(const struct cjc_store *s, const char *sub, const char magic[4],
		       struct cjc_buf *payload);
int cjc_blob_write_memo(const struct cjc_store *s, const char *sub, const char magic[4],
			const struct cjc_buf *payload);

/* Files of records, which are memos: a payload of u32 version, u32 count,
 * then the records.  Reading checks the frame, unpacks a packed payload
 * (blob.h) and checks the version, and leaves the cursor (over payload) at
 * the first record; writing packs at the store's compression_level and
 * creates the directory if needed.  Manifests are packed and unpacked the
 * same way. */
int cjc_blob_read_records(const struct cjc_store *s, const char *sub, const char magic[4],
			  uint32_t version, struct cjc_buf *payload, struct cjc_cursor *c,
			  uint32_t *count);
int cjc_blob_write_records(const struct cjc_store *s, const char *sub, const char magic[4],
			   uint32_t version, uint32_t count, const struct cjc_buf *records);

/* A manifest of the store (sub: its name there, store.h); a missing or
 * damaged one is -1 (errno ENOENT/EBADMSG; an unreadable one: store.h). */
int cjc_manifest_read(const struct cjc_store *s, const char *sub, struct cjc_manifest *m);
/* Puts a copy of rec first in the manifest, dropping the oldest beyond the limit. */
int cjc_manifest_add(const struct cjc_store *s, const char *sub,
		     const struct cjc_manifest_record *rec);

/* Remembers the hashes in a hash-cache file of the store (keys/filehash.h;
 * sub: its name there); missing, damaged or not to be trusted: nothing. */
int cjc_filehash_load(const struct cjc_store *s, const char *sub);
/* Writes what is remembered, when anything was hashed since the load. */
int cjc_filehash_save(const struct cjc_store *s, const char *sub);
/* The same for the shared hash cache (filehash.h): its records, kept apart. */
int cjc_filehash_load_shared(const struct cjc_store *s, const char *sub);
int cjc_filehash_save_shared(const struct cjc_store *s, const char *sub);

/* The same for the metadata memo (keys/metamemo.h). */
int cjc_metamemo_load(const struct cjc_store *s, const char *sub);
int cjc_metamemo_save(const struct cjc_store *s, const char *sub);

#endif
