/*
 * fill_store.c - fills a store with synthetic entries through the library's
 * own publication path, for measuring how the store scales.
 *
 *     fill_store CACHE-DIR COUNT [BYTES] [FIRST]
 *
 * Entries are numbered from FIRST (default 0).  Each entry holds one artifact of BYTES (default 16384) random-looking
 * bytes and a valid metadata.json; entries are counted as a publisher
 * counts them.  Prints the time taken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudajitcache.h"

static int publish_one(const struct cjc_store *s, unsigned long i, size_t bytes)
{
	char seed[32], key[CJC_HEX_LEN + 1];
	snprintf(seed, sizeof seed, "synthetic %lu", i);
	cjc_hash_buf_hex(seed, strlen(seed), key);
	unsigned char *data = malloc(bytes);
	for (size_t k = 0; k < bytes; k++)
		data[k] = (unsigned char)(k * 131 + i);
	struct cjc_staging st;
	struct cjc_buf meta = CJC_BUF_INIT;
	char *argv[] = { "nvcc", "-c", "synthetic.cu", NULL };
	json_t *options = json_pack("{s:s}", "kind", "object");
	bool won = false;
	int rc = cjc_staging_begin(s, &st);
	if (!rc)
		rc = cjc_staging_add_data(&st, "output.o", data, bytes);
	struct cjc_metadata md = {
		.key = key, .argv = argv, .argc = 3, .cwd = "/", .compiler_path = "nvcc",
		.compiler_realpath = "/usr/local/cuda/bin/nvcc", .compiler_version = "synthetic",
		.host_path = "gcc", .host_version = "synthetic", .options = options,
		.files = st.files, .nfiles = st.nfiles, .duration_ms = 1000,
	};
	if (!rc)
		rc = cjc_metadata_format(&md, &meta, &st.index_doc);
	st.published = cjc_index_published;
	uint64_t total = meta.len + bytes;
	json_t *doc = st.index_doc;
	if (!rc)
		rc = cjc_staging_publish(s, &st, key, &meta, NULL, &won);
	else
		cjc_staging_abort(&st);
	json_decref(doc);
	if (!rc && won)
		cjc_evict_account(s, key, total);
	json_decref(options);
	cjc_buf_release(&meta);
	free(data);
	return rc;
}

int main(int argc, char **argv)
{
	struct cjc_store s;
	if (argc < 3 || cjc_store_open(&s, argv[1])) {
		fprintf(stderr, "usage: fill_store CACHE-DIR COUNT [BYTES] [FIRST]\n");
		return 2;
	}
	unsigned long n = strtoul(argv[2], NULL, 10);
	size_t bytes = argc > 3 ? strtoul(argv[3], NULL, 10) : 16384;
	unsigned long first = argc > 4 ? strtoul(argv[4], NULL, 10) : 0;
	int64_t t0 = cjc_now_ms();
	for (unsigned long i = first; i < first + n; i++)
		if (publish_one(&s, i, bytes)) {
			perror("fill_store: publish");
			return 1;
		}
	printf("%lu entries of %zu bytes published in %.1f s\n", n, bytes,
	       (double)(cjc_now_ms() - t0) / 1000.0);
	cjc_store_close(&s);
	return 0;
}
