/* fuzz_inflate.c - libFuzzer: an artifact's stored file, inflated as a read
 * of the store inflates it (store/compress.h), after a co-writer planted
 * any bytes there.  The first two bytes are the artifact's recorded size
 * (0 to 65535); the rest is the file.  The inflater may refuse anything,
 * but never hands on more than the recorded size (nor makes more than one
 * byte past it), and a refusal says why. */
#include "base/compress.h"
#include "cudajitcache.h"

struct count {
	uint64_t made;
};

static int take(void *ctx, const void *p, size_t n)
{
	(void)p;
	((struct count *)ctx)->made += n;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint64_t limit = (uint64_t)data[0] << 8 | data[1];
	struct cjc_inflate z;
	struct count c = { 0 };
	int rc = cjc_inflate_begin(&z, limit);
	/* fed in two pieces, as chunks of a file are */
	size_t half = (size - 2) / 2;
	if (!rc)
		rc = cjc_inflate_feed(&z, data + 2, half, take, &c);
	if (!rc)
		rc = cjc_inflate_feed(&z, data + 2 + half, size - 2 - half, take, &c);
	rc |= cjc_inflate_end(&z);
	if (c.made > limit || z.made > limit + 1)
		__builtin_trap(); /* inflated past the recorded size (and the byte that shows it) */
	if (rc && !z.why)
		__builtin_trap(); /* a refusal must say why */
	return 0;
}
