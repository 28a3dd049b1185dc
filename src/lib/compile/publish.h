/*
 * publish.h - what a miss does after the compiler ran, one way for `cjc`
 * (src/tool/launcher.c), the JIT library's nvcc and NVRTC compiles
 * (src/jit), and whatever compiles next.
 *
 * cjc_publish() stages the artifact, the compiler's stdout and stderr and
 * what diagnostics.h keeps (ptx, sass); formats metadata.json from the
 * caller's description (the caller says what differs: the command, the
 * compilers, the options); signs it with sign_key; publishes the entry
 * (store.h: first valid writer wins); counts it and, past max_size, evicts
 * from its shard (evict.h); and records it in the manifest of its direct
 * key (manifest.h), when there is one.  Failures are said through note and
 * never fatal: a compile whose entry could not be published still
 * delivers its output.  Remote stores are the caller's (remote.h), after
 * the output was delivered.
 */
#ifndef CJC_PUBLISH_H
#define CJC_PUBLISH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"
#include "compile/diagnostics.h"
#include "keys/manifest.h"
#include "keys/metadata.h"
#include "store/store.h"

struct cjc_publish_file {
	const char *name;
	const void *data;
	size_t size;
};

struct cjc_publish {
	const struct cjc_store *store;
	const char *key;                      /* the entry key */
	const char *what;                     /* for messages: the source's name */
	const char *direct_key;               /* with rec: the manifest to record it in; or NULL */
	const struct cjc_manifest_record *rec;
	const char *artifact;                 /* its name in the entry ("output.o") */
	const char *artifact_path;            /* its bytes: a file, or */
	const void *artifact_data;            /* in memory */
	size_t artifact_size;
	const struct cjc_buf *out, *err;      /* the compiler's stdout and stderr, or NULL */
	const struct cjc_publish_file *extra; /* more files for the entry (a JIT's source) */
	size_t nextra;
	/* what diagnostics.h keeps, or diag NULL: nvcc's kept directory, its output */
	const struct cjc_diagnostics *diag;
	const char *keep_dir, *output, *ext;
	const struct cjc_metadata *md;        /* all but key, files and nfiles */
	const char *sign_key;                 /* or NULL */
	const char *sign_setting;             /* how messages name sign_key ("CJC_SIGN_KEY") */
	uint64_t max_size;                    /* 0: no limit */
	/* remote_only: the entry is finished here (store.h) instead of being
	 * published, for the caller to send (cjc_remote_publish_staged) and
	 * remove; no manifest is written.  NULL: published as usual. */
	struct cjc_staging *unpublished;
	/* note: a line for the log; warn: one for the user (sign_key cannot sign) */
	void (*note)(void *ctx, const char *line);
	void (*warn)(void *ctx, const char *line);
	void *ctx;
};

enum cjc_published {
	CJC_PUBLISH_FAILED = -1,      /* not in the store */
	CJC_PUBLISHED = 0,            /* in the store, ours or a winner's; manifest recorded */
	CJC_PUBLISHED_NO_MANIFEST = 1, /* in the store, but the manifest could not be written */
	CJC_STAGED = 2                 /* finished in p->unpublished */
};

/* After a publication that won (this one, or a remote entry's: remote.h):
 * counts the entry's bytes and, past max_size, evicts from its shard; uses
 * store, key, max_size and note. */
void cjc_publish_keep_within_limit(const struct cjc_publish *p, uint64_t bytes);

/* *won: whether this call's entry was the one that became visible. */
enum cjc_published cjc_publish(const struct cjc_publish *p, bool *won);

#endif
