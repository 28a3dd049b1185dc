/*
 * blob.h - the cache's own small binary files (manifests, the compiler
 * identity cache, counters, hash caches), each guarded by a CRC-32 so that a torn or
 * damaged write is caught and treated as absent.
 *
 * Layout: magic (4 bytes) | payload | crc32 of magic+payload (u32 LE).
 *
 * cjc_blob_encode() frames a payload in memory; cjc_blob_decode() checks a
 * framed buffer and points at its payload.  cjc_blob_write() replaces a file
 * of the store atomically (temporary file beside it, then rename; its
 * directories made); cjc_blob_read() reads and checks one, as store.h reads
 * anything of the store (no symbolic links, no FIFOs, bounded).  Both take
 * the file's name inside the namespace and return 0, or -1 with errno
 * (EBADMSG: damaged).
 */
#ifndef CJC_BLOB_H
#define CJC_BLOB_H

#include <stddef.h>

#include "util.h"

void cjc_blob_encode(struct cjc_buf *out, const char magic[4], const void *payload, size_t n);
int cjc_blob_decode(const void *data, size_t n, const char magic[4], const void **payload,
		    size_t *payload_len);
struct cjc_store;
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
 * then the records.  Reading checks the frame and the version and leaves
 * the cursor (over payload) at the first record; writing creates the
 * directory if needed. */
int cjc_blob_read_records(const struct cjc_store *s, const char *sub, const char magic[4],
			  uint32_t version, struct cjc_buf *payload, struct cjc_cursor *c,
			  uint32_t *count);
int cjc_blob_write_records(const struct cjc_store *s, const char *sub, const char magic[4],
			   uint32_t version, uint32_t count, const struct cjc_buf *records);

#endif
