/* fuzz_store_files.c - libFuzzer: the store's remaining kinds of file, as a
 * co-writer of the store could plant them: a remembered compiler identity
 * (decoded directly), a counter shard and the per-target counters (written
 * into a store with a valid frame or as they come, then read).  The first
 * byte picks the kind and whether the CRC frame is made valid. */
#include <stdio.h>
#include <unistd.h>

#include "cudajitcache.h"

static struct cjc_store store;

static void plant(const char *name, const uint8_t *data, size_t size, bool frame, const char *magic)
{
	struct cjc_buf b = CJC_BUF_INIT;
	if (frame)
		cjc_blob_encode(&b, magic, data, size);
	else
		cjc_buf_add(&b, data, size);
	if (cjc_store_replace(&store, name, b.data, b.len))
		__builtin_trap();
	cjc_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!store.dir) {
		char dir[64];
		snprintf(dir, sizeof dir, "/tmp/cjc-fuzz-store.%d", (int)getpid());
		if (cjc_store_open(&store, dir))
			__builtin_trap();
	}
	if (size < 1)
		return 0;
	bool frame = data[0] & 4;
	uint64_t v[CJC_STAT_COUNT];
	struct cjc_stats_row *rows = NULL;
	size_t n = 0;
	struct cjc_identity id = { 0 };
	switch (data[0] & 3) {
	case 0:
		if (!cjc_identity_decode(data + 1, size - 1, &id))
			cjc_identity_release(&id);
		break;
	case 1:
		plant("stats/3", data + 1, size - 1, frame, "CJCS");
		(void)cjc_stats_read(&store, v);
		(void)cjc_stats_bump(&store, CJC_STAT_HITS, 1);
		break;
	default:
		plant("stats/targets", data + 1, size - 1, frame, "CJCN");
		(void)cjc_stats_read_named(&store, CJC_STATS_BY_TARGET, &rows, &n);
		cjc_stats_rows_free(rows, n);
		(void)cjc_stats_bump_named(&store, CJC_STATS_BY_TARGET, "t", CJC_STAT_MISSES, 0);
		break;
	}
	return 0;
}
