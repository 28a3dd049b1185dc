/*
 * jit_internal.h - the JIT library's modules (docs/jit.md), shared by its
 * files and by nothing else.
 *
 *   settings.c  the settings table: PREFIX_JIT_*, CJC_JIT_*, the cjc settings
 *   handle.c    the handle's lock, errors, log, store, counters, settings
 *               (calls none of the others: every module stands on it)
 *   job.c       what both compilers' paths share: the private directory of
 *               a miss, the request's key words and hook, what a miss prints
 *   hit.c       the handle's part of the one lookup (compile/lookup.h)
 *   jit.c       the public calls: handles, results, a compile's dispatch
 *   nvcc.c      a compile with nvcc, keyed and published as `cjc` does it
 *   deps.c      whether a manifest record's files are unchanged, per handle
 *   changes.c   whether anything those files are read through may have changed (base/watch.h)
 *   tools.c     nvcc's, the host compiler's and `as`'s identities, once per change
 *   nvrtc.c     a compile with NVRTC (dlopen), keyed by its library and version
 *   journal.c   the cjc journal's records of compiles, for `cjc why --jit`
 *   driver.c    the CUDA driver (dlopen): the GPU's arch, loading modules
 *   program.c   an NVRTC program the library did not create (program.h:
 *               the NVRTC shim's), through the same store and journal
 *
 * Functions return 0 or -1 and set the handle's error (jit_fail) unless a
 * comment says otherwise.  Nothing here holds h->lock while a compiler,
 * the driver or the file system works, only while it touches memory.
 */
#ifndef CJC_JIT_INTERNAL_H
#define CJC_JIT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/hash.h"
#include "base/util.h"
#include "compile/config.h"
#include "compile/lookup.h"
#include "compile/publish.h"
#include "compile/watch.h"
#include "cudajitcache/jit.h"
#include "keys/manifest.h"
#include "keys/metadata.h"
#include "keys/nvcc_args.h"
#include "keys/place.h"
#include "remote/remote.h"
#include "store/identity.h"
#include "store/store.h"

struct cjc_jit;

/* ---- handle.c ---- */

/* Opens the handle's store at the first call (cjc_jit_open touches nothing
 * on disk) and says whether it is usable; thread-safe, and cheap after the
 * first call.  It sets no error: an unusable store means compiling without
 * it (docs/jit.md). */
bool jit_store_ready(struct cjc_jit *h);

/* Sets this thread's error on the handle; always returns -1. */
int jit_fail(struct cjc_jit *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line for the cjc log (the `log` setting), when there is one. */
void jit_note(const struct cjc_jit *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A publication (publish.h) of entry key, for source name, into the
 * handle's store with its settings; notes go to the cjc log (jit_note).
 * The caller adds the artifact and what else it has. */
struct cjc_publish jit_publish_of(struct cjc_jit *h, const char *key, const char *name,
				  const struct cjc_metadata *md);

/* The remote tier: the handle's remote stores (the `remote` setting), opened
 * for one compile's miss and closed after it, so a store that failed is
 * tried again at the next miss; NULL when there are none or readonly is set. */
struct cjc_remotes *jit_remote_open(struct cjc_jit *h);

/* What went into a compile's key, for its journal record (journal.c): set
 * once the compile is looked up in the store; borrowed from the compiler's
 * job, which outlives every record. */
struct jit_why {
	bool set;
	const struct cjc_compile *c; /* nvcc */
	const char *cwd;
	const struct cjc_identity *nvcc, *host;
	const struct cjc_strvec *env;
	const struct cjc_strvec *options; /* NVRTC */
	struct cjc_identity library;      /* NVRTC: its strings borrowed */
};

/* What one compile works with, whichever the compiler. */
struct jit_job {
	struct cjc_jit *h;
	const struct cjc_jit_request *req;
	const char *name;
	const char *arch;
	const char *ext; /* "cubin", "fatbin", "ptx" */
	unsigned char code_sha[CJC_DIGEST_LEN];
	char *source; /* the source's path as keyed: JIT_KEYED_SOURCE_DIR/<name> */
	json_t *meta; /* metadata.json's "jit": name, source, extra_signature, hook */
	struct cjc_jit_result *out;
	bool cached;          /* jit_cacheable() said yes */
	const char *compiler; /* for the journal, when not the handle's ("nvrtc-shim") */
	struct jit_why why;
};

/* The entry's copy of the source (an artifact of every JIT entry). */
#define JIT_SOURCE_FILE CJC_JIT_SOURCE_FILE

/* Whether a compile may use the store: not with `disable` set, nor when the
 * store is unusable (jit_store_ready); when not, one note says why and the
 * compile runs without the cache. */
bool jit_cacheable(struct jit_job *j);

/* Where the key and metadata.json say the source is: a path that cannot
 * exist, for where the file really lies (below) must be no part of a key. */
#define JIT_KEYED_SOURCE_DIR CJC_JIT_SOURCE_DIR

/* Counts a hit or a miss in the store (stats.h). */
void jit_count(struct jit_job *j, int counter, uint64_t saved_ms);

/* ---- hit.c ---- */

/* The handle's part of a lookup (compile/lookup.h) for a job's direct key:
 * its store (the metadata memo loaded first), trusted_keys, readonly and
 * max_size, its counters (jit_count) and notes (jit_note).  The caller adds
 * match, deliver and ctx, and the remote stores. */
struct cjc_lookup_request jit_lookup_request(struct jit_job *j, const char *direct_key);
/* After a lookup: whether it served the entry, then journaled as a hit
 * (jit_journal_hit). */
bool jit_lookup_served(struct jit_job *j, const struct cjc_lookup_result *r);

/* ---- deps.c ---- */

/* deps.c: the first record of m whose entry key its files give and whose
 * files are unchanged, or -1.  The source (the path source, or named when
 * not NULL: nvcc.c keys a request's source by either) is compared with
 * source_sha, the bytes in hand. */
long jit_deps_match(struct cjc_jit *h, const struct cjc_manifest *m, const char *direct_key,
		    const struct cjc_place *place, const char *source,
		    const unsigned char source_sha[CJC_DIGEST_LEN]);
long jit_deps_match_named(struct cjc_jit *h, const struct cjc_manifest *m, const char *direct_key,
			  const struct cjc_place *place, const char *source, const char *named,
			  const unsigned char source_sha[CJC_DIGEST_LEN]);
/* The size and SHA-256 of a file as it is now, remembered by its stamp.
 * With expect (not JIT_ANY_SIZE), a file of another size is -1 unread: a
 * record's file that has changed size, or a huge one a record names, is
 * not hashed to find that out. */
#define JIT_ANY_SIZE UINT64_MAX
int jit_deps_hash(struct cjc_jit *h, const char *path, uint64_t expect, uint64_t *size,
		  unsigned char sha[CJC_DIGEST_LEN]);
/* The record of what a watched NVRTC compile of job j read (compile/watch.h,
 * settled here): the source (j->source, source_size bytes, j->code_sha),
 * each file found, hashed now (its stamp held through the compile), and
 * each name not found; rec's entry key is the caller's.  0; or -1 with why
 * (what the watch could not key, a file that cannot be read, or one that
 * names __DATE__, __TIME__ or __TIMESTAMP__: rules.h). */
int jit_deps_record(struct jit_job *j, size_t source_size, struct cjc_watch *w,
		    struct cjc_manifest_record *rec, struct cjc_buf *why);
/* The hashes remembered across processes: the store's memo "hashes/jit"
 * (records.h: a memo of yours or root's), read before the handle's first
 * lookup and written after a miss and at close when a hash was taken.
 * Each is used only while its file's stamp holds, as in the handle. */
void jit_deps_load(struct cjc_jit *h);
void jit_deps_save(struct cjc_jit *h);

/*
 * journal.c: a record in the cjc journal (store/journal.h; fields in
 * compile/why.h) for each compile looked up in the store, as cjc's launcher
 * writes one, so that `cjc why --jit NAME` explains it.  A hit from a
 * handle's memory writes none: it would cost more than the hit.  Each call
 * is one line in nvcc.c or nvrtc.c; failures to write are noted (jit_note),
 * never returned.
 *
 *   jit_journal_facts_nvcc/_nvrtc  what went into the key: after this, the
 *                                  compile's records are written
 *   jit_journal_uncacheable        the compile is not cached, and why (NULL: nothing)
 *   jit_journal_hit                an entry served from the store (or a remote store)
 *   jit_journal_compiled           after the compiler ran: rc != 0, "failed"
 *                                  with the call's error; else a miss, its
 *                                  record (rec, with the entry key when it
 *                                  can be published), whether the entry is
 *                                  in the store, or why not (unstable)
 */
void jit_journal_facts_nvcc(struct jit_job *j, const struct cjc_compile *c, const char *cwd,
			    const struct cjc_identity *nvcc, const struct cjc_identity *host,
			    const struct cjc_strvec *env);
void jit_journal_facts_nvrtc(struct jit_job *j, const struct cjc_strvec *options,
			     const char *realpath, const char *version, const char *digest);
void jit_journal_uncacheable(struct jit_job *j, const char *reason);
void jit_journal_hit(struct jit_job *j, const char *key, int64_t saved_ms);
void jit_journal_compiled(struct jit_job *j, int rc, const struct cjc_manifest_record *rec,
			  bool published, int64_t duration_ms, const char *unstable);

/* ---- nvrtc.c ---- */

/* The identity of the NVRTC that holds the function version (nvrtcVersion)
 * and was asked for as path: its version, the library and the
 * libnvrtc-builtins beside it hashed, remembered in the handle's store when
 * it is usable (identity.h); -1 with the reason in why. */
int jit_nvrtc_identify(struct cjc_jit *h, int (*version)(int *, int *), const char *path,
		       struct cjc_identity *id, struct cjc_buf *why);

/* The settings (settings.c): one row each, PREFIX_JIT_<name> beats the
 * global variable (CJC_JIT_<name>) beats the cjc setting or the default. */
enum jit_setting {
	JIT_CACHE_DIR,
	JIT_NVCC_COMPILER,
	JIT_NVRTC_LIBRARY,
	JIT_COMPILER,
	JIT_PRINT_COMPILER_COMMAND,
	JIT_PTXAS_VERBOSE,
	JIT_PRINT_LOAD_TIME,
	JIT_DUMP_PTX,
	JIT_DUMP_SASS,
	JIT_CHECK_NO_SPILLS,
	JIT_WITH_LINEINFO,
	JIT_CPP_STANDARD,
	JIT_DEBUG,
	JIT_DUMP_ASM,
	JIT_CHECK_NO_LOCAL_MEMORY,
	JIT_SETTING_COUNT
};

enum jit_compiler { JIT_NVCC, JIT_NVRTC };

struct jit_settings {
	char *text[JIT_SETTING_COUNT];   /* each value as text ("" when unset) */
	const char *origin[JIT_SETTING_COUNT]; /* the variable it came from, or "cjc", "default" */
	bool flag[JIT_SETTING_COUNT];    /* the booleans */
	enum jit_compiler compiler;
};

/* Fills s from the environment and cfg; -1 with the message (naming the
 * variable) in err. */
int jit_settings_load(struct jit_settings *s, const char *prefix, const struct cjc_config *cfg,
		      struct cjc_buf *err);
void jit_settings_release(struct jit_settings *s);
int jit_setting_find(const char *name);
/* The PREFIX_JIT_* and CJC_JIT_* variables in the environment that are not
 * settings (a misspelt PREFIX_JIT_DUMP_PXT), or whose value holds a control
 * character, each with a line saying so. */
void jit_settings_unknown(const char *prefix, struct cjc_strvec *lines);

/* changes.c: the handle's change generation, or 0 when there is no
 * change signal to trust (then every check stats). */
uint64_t jit_changes_generation(struct cjc_jit *h);
/* Watches every directory r's files and candidates are reached through
 * (but the source's, keyed by content: source or named): the generation
 * to check them in (cjc_watch_paths); 0 when it cannot, and r's files must
 * then be checked each time. */
uint64_t jit_changes_watch(struct cjc_jit *h, const struct cjc_manifest_record *r,
			   const char *source, const char *named);
/* The same for each path of paths (no source to skip). */
uint64_t jit_changes_watch_paths(struct cjc_jit *h, const struct cjc_strvec *paths);
void jit_changes_release(struct cjc_jit *h);

/* tools.c: the programs an nvcc request runs, identified (identity.h) or
 * remembered from change generation gen (the request's, asked as it
 * began).  0, or -1 (noted in the log). */
struct jit_toolset {
	struct cjc_identity nvcc, host;
	char *as; /* where PATH finds `as`, "" for nowhere (key.h) */
};
int jit_tools_identify(struct cjc_jit *h, uint64_t gen, const char *cwd, const char *nvcc,
		       const char *host, struct jit_toolset *out);
void jit_toolset_release(struct jit_toolset *t);
void jit_tools_release(struct cjc_jit *h);

/* deps.c: remembered hashes of the files manifest records name, and
 * listings of the directories of the candidates that must stay absent, per
 * handle, each trusted only while its stamp holds (stamp.h). */
struct jit_deps {
	struct dep_memo **buckets;
	size_t n;
	struct dir_memo **dirs;
	size_t ndirs;
	bool loaded; /* the store's record of them read (jit_deps_load) */
	bool meta_loaded; /* the store's memo of checked metadata read (jit_deps_load_meta) */
	bool dirty;  /* a hash taken since it was read or written */
};

struct driver;
struct nvrtc;
struct jit_memory;
struct jit_changes;
struct jit_tools;

/* Devices whose arch a handle remembers (driver.c); others are asked each time. */
#define JIT_DEVICES 64

struct cjc_jit {
	char *prefix;         /* cjc_jit_open's, or NULL */
	struct jit_settings set;
	struct cjc_config cfg;
	/* The store, opened at the first call that needs it (jit_store_ready):
	 * 0 not yet, 1 open in `store`, -1 unusable for the reason in store_why.
	 * Set once, under the lock; read without it. */
	atomic_int store_state;
	struct cjc_store store;
	char *store_why;
	pthread_key_t error_key;
	pthread_mutex_t lock; /* guards what follows */
	unsigned forks;       /* the fork generation the lock was made in (jit.c) */
	struct jit_deps deps;
	char device_arch[JIT_DEVICES][16]; /* per device ordinal, once asked ("" until then) */
	struct driver *driver;
	struct nvrtc *nvrtc;
	char *nvrtc_error;    /* why NVRTC could not be loaded */
	struct jit_memory *memory; /* memory.c, made on the first put */
	struct jit_changes *changes; /* changes.c, made on the first use */
	struct jit_tools *tools;     /* tools.c, made on the first use */
};

/* The handle's lock, made anew in a child after fork() (handle.c). */
void jit_lock(struct cjc_jit *h);
void jit_unlock(struct cjc_jit *h);
/* How many fork()s this process descends from, since the library was loaded. */
unsigned jit_fork_generation(void);
/* What the library sets up once per process (handle.c): fork counting, no
 * signal handlers for its temporaries, jansson's hash seed. */
void jit_process_once(void);

/* Whether the store is open already (jit_store_ready said yes before). */
static inline bool jit_store_open(const struct cjc_jit *h)
{
	return atomic_load(&((struct cjc_jit *)h)->store_state) > 0;
}

/* Empties this thread's error: each public call starts with it, so that
 * cjc_jit_error() describes the last call only. */
void jit_clear_error(struct cjc_jit *h);
/* A call's answer when its work was abandoned for want of memory (base/oom.h):
 * -1, and the error says so without needing memory itself. */
int jit_out_of_memory(struct cjc_jit *h);

/* A post-compile hook's output (cjc_jit_bytes_set). */
struct cjc_jit_bytes {
	struct cjc_buf buf;
	bool set;
	bool failed; /* a cjc_jit_bytes_set() that could not keep the bytes */
};

/* ---- job.c ---- */

/* The request's own key words (extra_signature, the hook's identity), after
 * the compiler's: args gets "jit:extra_signature=..." and "jit:hook=...". */
void jit_key_request(const struct jit_job *j, struct cjc_strvec *args);
/* The source as a file of the entry, and the request's facts: for publish.h. */
void jit_publish_request(const struct jit_job *j, struct cjc_publish *p,
			 struct cjc_publish_file *source, struct cjc_metadata *md);
/* Runs the request's post-compile hook, if any, on data (replaced by what
 * the hook keeps); -1 (error set) when the hook fails. */
int jit_run_hook(struct jit_job *j, struct cjc_buf *data);
/* Fails the compile (-1, error set) when the compiler's messages (a hit's
 * replayed ones too) report what CHECK_NO_SPILLS or CHECK_NO_LOCAL_MEMORY
 * forbid; else 0. */
int jit_check_ptxas(struct jit_job *j, const char *log, size_t len);

/* The largest output read back from the compiler. */
#define JIT_OUTPUT_MAX ((size_t)1 << 30)

/*
 * job.c: the private directory a miss works in (docs/trust.md): the source
 * as <path>/src/<name>, alone in its directory, and whatever the compiler
 * writes.  Made in $TMPDIR, else /tmp, else $XDG_RUNTIME_DIR: the first
 * whose every directory from / down is owned by you or root and, when
 * others may write it, sticky, so that no other user can rename anything
 * on the path.  The directory is 0700 and yours, checked on its open fd;
 * files in it are created and read relative to that fd, without following
 * links.  Registered for removal at exit (fs.h); jit_workdir_remove()
 * removes it at the end of the compile.
 */
struct jit_workdir {
	int base;     /* the directory it was made in */
	int fd;       /* the directory itself */
	char *name;   /* its name in base */
	char *path;   /* its path, for the compiler's command line */
	char *source; /* <path>/src/<name> */
};
/* Makes the directory and writes the request's code as the source. */
int jit_workdir_make(struct jit_job *j, struct jit_workdir *w);
/* Removes the directory and everything in it; nothing when make did not fill w. */
void jit_workdir_remove(struct jit_workdir *w);
/* What a miss says, as settings ask: the compiler's messages (err:
 * PTXAS_VERBOSE), the PTX and SASS (DUMP_PTX, DUMP_SASS: the published
 * entry's, key, else from the output, data, where that can be), and a note
 * when readonly kept it from the store.  key is NULL when nothing was
 * published. */
void jit_print_miss(struct jit_job *j, const struct cjc_buf *err, const struct cjc_buf *data,
		    const char *key);

int jit_nvcc_compile(struct jit_job *j);
int jit_nvrtc_compile(struct jit_job *j);

/* deps.c (and above: its calls program.c uses too) */
void jit_deps_release(struct jit_deps *d);
/* The memo of the metadata documents checked (keys/metamemo.h), read once
 * per handle before its first hit; saved with the hashes. */
void jit_deps_load_meta(struct cjc_jit *h);

/* memory.c: the requests a handle served.  jit_memory_find: the item of a
 * lookup key (the direct key), with a reference the caller gives back
 * (jit_memory_release), or NULL.  jit_memory_put: keeps what a request
 * was served (rec, the record that named it, is moved in), replacing an
 * older item of the same lookup.
 * jit_memory_serve: fills the result from an item and counts the hit.
 * jit_memory_checked: whether the item's files were found unchanged in
 * change generation gen (changes.c); jit_memory_mark_checked says they were. */
struct jit_memory_item;
bool jit_memory_checked(struct cjc_jit *h, const struct jit_memory_item *it, uint64_t gen);
void jit_memory_mark_checked(struct cjc_jit *h, struct jit_memory_item *it, uint64_t gen);
struct jit_memory_item *jit_memory_find(struct cjc_jit *h, const char *lookup);
const struct cjc_manifest_record *jit_memory_record(const struct jit_memory_item *it);
void jit_memory_serve(struct jit_job *j, const struct jit_memory_item *it);
void jit_memory_release(struct cjc_jit *h, struct jit_memory_item *it);
void jit_memory_put(struct cjc_jit *h, const char *lookup, const char *key,
		    struct cjc_manifest_record *rec, const void *data, size_t size, const char *log,
		    int64_t duration_ms);
/* Whether an item's record still holds (nvcc.c, nvrtc.c): found so in
 * change generation gen (0: none), or found so now by match, after watch
 * put watches on its paths and said the generation they were in place in
 * (0: none), which the item is then marked checked in. */
struct jit_memory_check {
	uint64_t (*watch)(void *ctx, const struct cjc_manifest_record *rec);
	long (*match)(void *ctx, const struct cjc_manifest *m);
	void *ctx;
};
bool jit_memory_holds(struct cjc_jit *h, struct jit_memory_item *it, uint64_t gen,
		      const struct jit_memory_check *c);
/* Forgets the items of entry key (cjc_jit_drop). */
void jit_memory_forget(struct cjc_jit *h, const char *key);
/* At close: the pending counts to the store, and every item freed. */
void jit_memory_release_all(struct cjc_jit *h);

/* driver.c */
int jit_driver_arch(struct cjc_jit *h, char *arch, size_t len);
void jit_driver_release(struct driver *d);
/* nvrtc.c */
void jit_nvrtc_release(struct nvrtc *n);

#endif
