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

/* Files of records: a payload of u32 version, u32 count, then the records.
 * Reading checks the frame and the version and leaves the cursor (over
 * payload) at the first record; writing creates the directory if needed. */
int cjc_blob_read_records(const struct cjc_store *s, const char *sub, const char magic[4],
			  uint32_t version, struct cjc_buf *payload, struct cjc_cursor *c,
			  uint32_t *count);
int cjc_blob_write_records(const struct cjc_store *s, const char *sub, const char magic[4],
			   uint32_t version, uint32_t count, const struct cjc_buf *records);

#endif
