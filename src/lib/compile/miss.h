/*
 * miss.h - the steps of a miss that cjc's launcher and the JIT library
 * share: when nvcc started, as the file system's clock says, and the
 * manifest record of what it read.
 *
 * cjc_miss_start() is taken just before nvcc runs.  cjc_miss_record() then
 * reads nvcc's dependency output and fills a manifest record (manifest.h):
 * each file's path (relative under base_dir, place.h), size and SHA-256,
 * and the include candidates that must stay absent (includescan.h), in
 * nvcc's search order.  A file that cannot be hashed, or whose stamp is
 * newer than the start, makes the record unstable (*stable false, with the
 * reason): what was hashed might not be what nvcc read, so nothing may be
 * published.  The source is the exception: when its bytes, read again, are
 * the ones keyed, nvcc read those, however recent its stamp.
 *
 * A file that names __DATE__, __TIME__ or __TIMESTAMP__ (rules.h: the
 * bytes with line splices joined, comments included) makes the output
 * depend on the clock: unless SOURCE_DATE_EPOCH (keyed, key.h) fixes it
 * (__DATE__ and __TIME__ only), *m->uncacheable says so and nothing may be
 * published.  Only a cacheable miss publishes, so a hit never needs to look
 * (docs/key.md).
 */
#ifndef CJC_MISS_H
#define CJC_MISS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/hash.h"
#include "base/util.h"
#include "keys/manifest.h"
#include "keys/nvcc_args.h"

/* The toolkit's include directory and its cccl/, found among the files a
 * compile read (by cuda_runtime.h); NULL when it read none. */
struct cjc_toolkit_dirs {
	char *include;
	char *cccl;
};
void cjc_toolkit_dirs_find(const struct cjc_dep *deps, size_t n, struct cjc_toolkit_dirs *t);
void cjc_toolkit_dirs_release(struct cjc_toolkit_dirs *t);

/* When nvcc starts, one tick of the coarse clock early (see miss.c). */
void cjc_miss_start(struct timespec *t);

struct cjc_miss {
	const struct cjc_compile *c;
	struct timespec started;                  /* cjc_miss_start() */
	const unsigned char *source_sha;          /* the source's bytes as keyed */
	/* how a dependency is hashed (filehash.h for cjc) */
	int (*hash)(void *ctx, const char *path, uint64_t *size, unsigned char sha[CJC_DIGEST_LEN]);
	void *ctx;
	/* out: why the compile must not be cached though nothing went wrong,
	 * or left NULL (malloc'd; NULL here: the record is unstable instead) */
	char **uncacheable;
};

/* 0, or -1 when the dependency output cannot be read (why says so). */
int cjc_miss_record(const struct cjc_miss *m, const char *depfile, struct cjc_manifest_record *rec,
		    bool *stable, struct cjc_buf *why);

#endif
