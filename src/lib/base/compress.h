/*
 * compress.h - an entry's artifacts as the store keeps them: one zstd frame
 * each (Debian's libzstd), or the bytes as they are (store.h).
 *
 * cjc_compress() makes the frame of a buffer at a level (1 to
 * CJC_COMPRESSION_MAX; the compression_level setting).  A reader inflates a
 * stored file as it reads it, chunk by chunk:
 *
 *     struct cjc_inflate z;
 *     cjc_inflate_begin(&z, a->size);           the artifact's recorded size
 *     while (a chunk of the file is read)
 *             cjc_inflate_feed(&z, chunk, n, sink, ctx);   sink gets the bytes
 *     cjc_inflate_end(&z);                      0: one whole frame, no more
 *
 * Each returns 0, or -1 when the bytes are not what the store wrote (not a
 * frame, a frame cut short or followed by more, more output than the
 * recorded size, a window larger than that size needs) or when sink
 * returns non-zero; z.why says which (a static string).  The inflater
 * never makes more than the recorded size, and never asks for more memory
 * than a window of that size: a damaged or hostile file is a miss, never a
 * crash nor a flood.  cjc_inflate_end() frees it, whatever went before.
 */
#ifndef CJC_COMPRESS_H
#define CJC_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

#define CJC_COMPRESSION_DEFAULT 1 /* measured on nvcc's outputs: bench/results.md */
#define CJC_COMPRESSION_MAX 19    /* zstd's highest but its "ultra" levels */

/* The frame of p[0..n) at level into out (reset first): 0, or -1 (EINVAL:
 * a level zstd does not have; ENOMEM). */
int cjc_compress(const void *p, size_t n, int level, struct cjc_buf *out);

struct cjc_inflate {
	void *ctx;       /* the ZSTD_DCtx */
	uint64_t limit;  /* the most it may make */
	uint64_t made;   /* what it made so far */
	bool ended;      /* a frame ended */
	const char *why; /* why it stopped, or NULL */
};

int cjc_inflate_begin(struct cjc_inflate *z, uint64_t limit);
int cjc_inflate_feed(struct cjc_inflate *z, const void *in, size_t n,
		     int (*sink)(void *ctx, const void *p, size_t n), void *ctx);
int cjc_inflate_end(struct cjc_inflate *z);

/* The same frame with zstd's checksum of p[0..n) in it (XXH64, which the
 * inflater checks): for a file that nothing else checks, metadata.json. */
int cjc_compress_summed(const void *p, size_t n, int level, struct cjc_buf *out);

/* Whether p[0..n) begins as a zstd frame does (its magic number). */
bool cjc_compressed(const void *p, size_t n);

/* One whole frame held in memory whose header gives its content size (all
 * of ours do), of at most limit bytes, inflated onto out (appended) in one
 * call: the store's bookkeeping, read whole.  0, or -1 as above. */
int cjc_inflate_frame(const void *in, size_t n, uint64_t limit, struct cjc_buf *out,
		      const char **why);

/* The three at once, for a frame held in memory: in[0..n) inflated onto
 * out (appended).  0, or -1 as above (*why, where why is not NULL, says
 * which). */
int cjc_inflate_all(const void *in, size_t n, uint64_t limit, struct cjc_buf *out,
		    const char **why);

#endif
