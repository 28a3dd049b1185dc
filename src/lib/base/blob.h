/*
 * blob.h - the cache's own small binary files (manifests, the compiler
 * identity cache, counters, hash caches), each guarded by a CRC-32 so that a torn or
 * damaged write is caught and treated as absent.
 *
 * Layout: magic (4 bytes) | payload | crc32 of magic+payload (u32 LE).
 *
 * cjc_blob_encode() frames a payload in memory; cjc_blob_decode() checks a
 * framed buffer and points at its payload (0, or -1 with errno EBADMSG).
 * cjc_blob_open() and cjc_blob_close() frame in place: open appends the
 * magic and says where the blob starts, the caller appends the payload,
 * close appends the checksum; the same bytes, without a copy of a payload
 * (a heavy manifest's is 342 KB: fresh pages cost more than the copy).
 * Reading and writing such files of the store: store/records.h.
 *
 * Packed: the payload stored as one zstd frame of itself (compress.h),
 * magic | frame | crc32 of magic+frame, where that is smaller.  The CRC
 * checks the stored bytes; the frame inflates to a bounded size, whole or
 * not at all.  Only files whose plain payload begins with a small version
 * number (manifests, files of records) are packed, so a payload that
 * begins with zstd's magic number is a packed one; an older plain file
 * reads as it always did.  cjc_blob_close_packed() closes a blob opened
 * with cjc_blob_open(), packing its payload at level (0: never);
 * cjc_blob_unpack() turns a decoded payload that is packed into the plain
 * one (out, reset), at most max bytes: 0, 1 when it was not packed (out
 * untouched), or -1 with errno EBADMSG.
 */
#ifndef CJC_BLOB_H
#define CJC_BLOB_H

#include <stddef.h>

#include "base/util.h"

void cjc_blob_encode(struct cjc_buf *out, const char magic[4], const void *payload, size_t n);
size_t cjc_blob_open(struct cjc_buf *out, const char magic[4]);
void cjc_blob_close(struct cjc_buf *out, size_t start);
void cjc_blob_close_packed(struct cjc_buf *out, size_t start, int level);
int cjc_blob_unpack(const void *payload, size_t n, size_t max, struct cjc_buf *out);
int cjc_blob_decode(const void *data, size_t n, const char magic[4], const void **payload,
		    size_t *payload_len);

#endif
