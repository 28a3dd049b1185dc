#include "blob.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fs.h"
#include "store.h"

void cjc_blob_encode(struct cjc_buf *out, const char magic[4], const void *payload, size_t n)
{
	size_t start = out->len;
	cjc_buf_add(out, magic, 4);
	cjc_buf_add(out, payload, n);
	uLong crc = crc32(0L, (const Bytef *)out->data + start, (uInt)(out->len - start));
	cjc_buf_add_u32(out, (uint32_t)crc);
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

int cjc_blob_write(const struct cjc_store *s, const char *sub, const char magic[4],
		   const struct cjc_buf *payload)
{
	struct cjc_buf framed = CJC_BUF_INIT;
	cjc_blob_encode(&framed, magic, payload->data, payload->len);
	int rc = cjc_store_replace(s, sub, framed.data, framed.len);
	int e = errno;
	cjc_buf_release(&framed);
	errno = e;
	return rc;
}

int cjc_blob_read(const struct cjc_store *s, const char *sub, const char magic[4],
		  struct cjc_buf *payload)
{
	struct cjc_buf raw = CJC_BUF_INIT;
	int rc = cjc_store_read(s, sub, CJC_STORE_MAX_FILE, &raw);
	const void *p;
	size_t n;
	if (!rc)
		rc = cjc_blob_decode(raw.data, raw.len, magic, &p, &n);
	if (!rc) { /* the payload moved to the front in place: no second copy */
		memmove(raw.data, p, n);
		raw.data[n] = '\0';
		raw.len = n;
		cjc_buf_release(payload);
		*payload = raw;
		raw = (struct cjc_buf)CJC_BUF_INIT;
	}
	int e = errno;
	cjc_buf_release(&raw);
	errno = e;
	return rc;
}

int cjc_blob_read_records(const struct cjc_store *s, const char *sub, const char magic[4],
			  uint32_t version, struct cjc_buf *payload, struct cjc_cursor *c,
			  uint32_t *count)
{
	if (cjc_blob_read(s, sub, magic, payload))
		return -1;
	cjc_cursor_init(c, payload->data, payload->len);
	uint32_t v = cjc_cursor_u32(c);
	*count = cjc_cursor_u32(c);
	if (c->bad || v != version) {
		cjc_buf_release(payload);
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

int cjc_blob_write_records(const struct cjc_store *s, const char *sub, const char magic[4],
			   uint32_t version, uint32_t count, const struct cjc_buf *records)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_buf_add_u32(&payload, version);
	cjc_buf_add_u32(&payload, count);
	cjc_buf_add(&payload, records->data, records->len);
	int rc = cjc_blob_write(s, sub, magic, &payload);
	int e = errno;
	cjc_buf_release(&payload);
	errno = e;
	return rc;
}
