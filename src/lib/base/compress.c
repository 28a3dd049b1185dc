#include "base/compress.h"

#include <errno.h>
#include <string.h>
#include <zstd.h>

/* The frame of p[0..n) at level, with or without zstd's checksum. */
static int compress_frame(const void *p, size_t n, int level, bool summed, struct cjc_buf *out)
{
	if (level < 1 || level > CJC_COMPRESSION_MAX) {
		errno = EINVAL;
		return -1;
	}
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t bound = ZSTD_compressBound(n), made = 0;
	cjc_buf_reset(out);
	cjc_buf_grow(out, bound);
	if (cc && !ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level)) &&
	    !ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, summed)))
		made = ZSTD_compress2(cc, out->data, bound, p, n);
	ZSTD_freeCCtx(cc);
	if (!cc || !made || ZSTD_isError(made)) {
		errno = ENOMEM;
		return -1;
	}
	out->len = made;
	return 0;
}

int cjc_compress(const void *p, size_t n, int level, struct cjc_buf *out)
{
	return compress_frame(p, n, level, false, out);
}

int cjc_compress_summed(const void *p, size_t n, int level, struct cjc_buf *out)
{
	return compress_frame(p, n, level, true, out);
}

bool cjc_compressed(const void *p, size_t n)
{
	static const unsigned char magic[4] = { 0x28, 0xb5, 0x2f, 0xfd }; /* ZSTD_MAGICNUMBER */
	return n >= sizeof magic && !memcmp(p, magic, sizeof magic);
}

/* The window log a frame of at most limit bytes needs: a frame of known
 * content size (ours) has a window no larger than its content rounded up
 * to a power of two.  10 and 31: zstd's bounds (ZSTD_WINDOWLOG_ABSOLUTEMIN,
 * ZSTD_WINDOWLOG_MAX_64, which zstd.h keeps for static linking only). */
static int window_log_for(uint64_t limit)
{
	int log = 10;
	while (log < 31 && ((uint64_t)1 << log) < limit)
		log++;
	return log;
}

int cjc_inflate_begin(struct cjc_inflate *z, uint64_t limit)
{
	memset(z, 0, sizeof *z);
	z->limit = limit;
	z->ctx = ZSTD_createDCtx();
	if (!z->ctx) {
		z->why = "out of memory";
		return -1;
	}
	ZSTD_DCtx_setParameter(z->ctx, ZSTD_d_windowLogMax, window_log_for(limit));
	return 0;
}

/* Stops the inflater with a reason: -1. */
static int stop(struct cjc_inflate *z, const char *why)
{
	if (!z->why)
		z->why = why;
	return -1;
}

int cjc_inflate_feed(struct cjc_inflate *z, const void *in, size_t n,
		     int (*sink)(void *ctx, const void *p, size_t n), void *ctx)
{
	char chunk[1 << 16];
	ZSTD_inBuffer src = { in, n, 0 };
	bool more = n > 0; /* input left, or output the last call had no room for */
	while (!z->why && more) {
		if (z->ended && src.pos < src.size)
			return stop(z, "more bytes after its zstd frame");
		if (z->ended)
			break;
		/* never more than one byte past the limit: enough to see it passed */
		uint64_t room = z->limit - z->made + 1;
		ZSTD_outBuffer dst = { chunk, room < sizeof chunk ? (size_t)room : sizeof chunk,
				       0 };
		size_t left = ZSTD_decompressStream(z->ctx, &dst, &src);
		if (ZSTD_isError(left))
			return stop(z, "not a whole zstd frame");
		z->made += dst.pos;
		z->ended = left == 0;
		if (z->made > z->limit)
			return stop(z, "larger than its recorded size once decompressed");
		if (dst.pos && sink(ctx, chunk, dst.pos))
			return stop(z, "its bytes could not be taken");
		more = src.pos < src.size || dst.pos == dst.size;
	}
	return z->why ? -1 : 0;
}

int cjc_inflate_end(struct cjc_inflate *z)
{
	if (!z->why && !z->ended)
		stop(z, "a zstd frame cut short");
	ZSTD_freeDCtx(z->ctx);
	z->ctx = NULL;
	return z->why ? -1 : 0;
}

static int append(void *ctx, const void *p, size_t n)
{
	cjc_buf_add(ctx, p, n);
	return 0;
}

int cjc_inflate_all(const void *in, size_t n, uint64_t limit, struct cjc_buf *out, const char **why)
{
	struct cjc_inflate z;
	int rc = cjc_inflate_begin(&z, limit) ? -1 : cjc_inflate_feed(&z, in, n, append, out);
	rc = cjc_inflate_end(&z) || rc ? -1 : 0;
	if (why)
		*why = z.why;
	return rc;
}

int cjc_inflate_frame(const void *in, size_t n, uint64_t limit, struct cjc_buf *out,
		      const char **why)
{
	unsigned long long size = ZSTD_getFrameContentSize(in, n);
	const char *bad = NULL;
	if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR)
		bad = "not a whole zstd frame";
	else if (size > limit)
		bad = "larger than its recorded size once decompressed";
	else if (ZSTD_findFrameCompressedSize(in, n) != n)
		bad = "more bytes after its zstd frame";
	ZSTD_DCtx *d = bad ? NULL : ZSTD_createDCtx();
	if (!bad && !d)
		bad = "out of memory";
	if (!bad) {
		cjc_buf_grow(out, (size_t)size);
		/* checks the frame's checksum, where it has one */
		size_t made = ZSTD_decompressDCtx(d, out->data + out->len, (size_t)size, in, n);
		if (ZSTD_isError(made) || made != size)
			bad = "not a whole zstd frame";
		else
			out->data[out->len += made] = '\0';
	}
	ZSTD_freeDCtx(d);
	if (why)
		*why = bad;
	return bad ? -1 : 0;
}
