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
 * published.  So does a time macro the preprocessor expanded, however its
 * name was written (pasted: CAT(__TI, ME__)), as the texts it wrote show
 * (cjc_rules_clock_expanded): each *.ii that nvcc kept in m->kept, one per
 * device architecture and the host's.  Only a cacheable miss publishes, so
 * a hit never needs to look (docs/key.md).
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
	/* where nvcc -keep wrote its intermediate files (the caller ran it
	 * with -keep -keep-dir), or NULL */
	const char *kept;
};

/* Whether the texts the preprocessor wrote for a miss (each *.ii nvcc
 * -keep kept in kept) name the directory dir outside their directives, or
 * __builtin_FILE: a path that reaches the output however its macro was
 * written (CAT(__FI, LE__) is no __FILE__ to a search of the sources). */
bool cjc_miss_kept_names(const char *kept, const char *dir);

/* 0, or -1 when the dependency output cannot be read (why says so). */
int cjc_miss_record(const struct cjc_miss *m, const char *depfile, struct cjc_manifest_record *rec,
		    bool *stable, struct cjc_buf *why);

/*
 * Whether a path rules.h found may reach the output does: the rules read
 * texts, and cannot tell a dead #if branch (GCC 13's libstdc++ defines
 * __glibcxx_assert with __FILE__ under _GLIBCXX_ASSERTIONS and uses it in
 * <bit>, which CUDA's headers include), so where cjc_rules_paths_reach()
 * says one may, the preprocessor decides.  The miss's command runs again
 * with -E into out (removed after), for the device code (with -Xcompiler
 * -dD) and, where host, for the host code (-U__CUDA_ARCH__
 * -UCUDA_DOUBLE_MATH_FUNCTIONS: what nvcc 13's host pass does not define);
 * cjc_rules_preprocessed_names() reads each text.  Where -E fails, or the
 * command makes device code for more than one architecture (-E shows the
 * first alone), one may.  Each run costs about what the compile's front
 * end does, so it is asked only on a miss the rules found something in.
 */
struct cjc_miss_preprocess {
	const struct cjc_strvec *command; /* the miss's command, less -o and -M* */
	const char *out;                  /* where -E writes, a temporary file */
	char *const *env;                 /* changes to the environment (run.h), or NULL */
	bool host;                        /* the output holds host code (-c) */
	char *const *names;               /* the file names that must not reach it */
	size_t n;
};
bool cjc_miss_preprocessed_names(const struct cjc_miss_preprocess *p);

#endif
