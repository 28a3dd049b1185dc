#include "base/blob.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "base/compress.h"

void cjc_blob_encode(struct cjc_buf *out, const char magic[4], const void *payload, size_t n)
{
	size_t start = cjc_blob_open(out, magic);
	cjc_buf_add(out, payload, n);
	cjc_blob_close(out, start);
}

size_t cjc_blob_open(struct cjc_buf *out, const char magic[4])
{
	size_t start = out->len;
	cjc_buf_add(out, magic, 4);
	return start;
}

void cjc_blob_close(struct cjc_buf *out, size_t start)
{
	uLong crc = crc32(0L, (const Bytef *)out->data + start, (uInt)(out->len - start));
	cjc_buf_add_u32(out, (uint32_t)crc);
}

void cjc_blob_close_packed(struct cjc_buf *out, size_t start, int level)
{
	struct cjc_buf frame = CJC_BUF_INIT;
	const char *payload = out->data + start + 4;
	size_t n = out->len - start - 4;
	if (level > 0 && !cjc_compressed(payload, n) && !cjc_compress(payload, n, level, &frame) &&
	    frame.len < n) {
		out->len = start + 4;
		cjc_buf_add(out, frame.data, frame.len);
	}
	cjc_buf_release(&frame);
	cjc_blob_close(out, start);
}

int cjc_blob_unpack(const void *payload, size_t n, size_t max, struct cjc_buf *out)
{
	if (!cjc_compressed(payload, n))
		return 1;
	cjc_buf_reset(out);
	if (cjc_inflate_frame(payload, n, max, out, NULL)) {
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

int cjc_blob_decode(const void *data, size_t n, const char magic[4], const void **payload,
		    size_t *payload_len)
{
	const unsigned char *p = data;
	if (n < 8 || memcmp(p, magic, 4)) {
		errno = EBADMSG;
		return -1;
	}
	struct cjc_cursor c;
	cjc_cursor_init(&c, p + n - 4, 4);
	uint32_t want = cjc_cursor_u32(&c);
	if ((uint32_t)crc32(0L, p, (uInt)(n - 4)) != want) {
		errno = EBADMSG;
		return -1;
	}
	*payload = p + 4;
	*payload_len = n - 8;
	return 0;
}
