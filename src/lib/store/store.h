/*
 * store.h - the artifact store on a local or shared file system.
 *
 * Layout under the namespace directory $CJC_DIR/v1/<os>-<arch>/:
 *
 *   entries/<kk>/<key>/     one entry per key (<kk>: the key's first two hex
 *                           digits); holds metadata.json (metadata.h: the
 *                           document, or one zstd frame of it with zstd's
 *                           checksum, where compression_level made that
 *                           smaller; the signature is the document's) and the
 *                           artifacts it lists, all read-only, each one zstd
 *                           frame (compress.h) when its record says "zstd"
 *                           (compression_level; kept as it is when that is
 *                           not smaller), else the bytes as they are:
 *       output.o | output.cubin | output.fatbin | output.ptx   what nvcc made
 *       stdout, stderr      what nvcc printed, when it printed anything
 *       metadata.sig        the writer's signature of metadata.json (sign.h),
 *                           when it had a sign_key
 *   manifests/<kk>/<key>    direct key -> entry keys (manifest.h)
 *   ids/<hash>              remembered compiler identities (identity.h)
 *   hashes/<kk>/<id>        per translation unit (id: hash of cwd and source
 *                           path): remembered file hashes (filehash.h), and
 *                           <id>.meta, metadata already checked (metamemo.h)
 *     (these, and index/, are memos (blob.h): used only from a file of
 *     yours or root's that no one else can write; a user who finds someone
 *     else's at a name keeps her own beside it as <name>.<uid>)
 *   stats/<n>               counter shards (stats.h)
 *   stats/evict.<n>.<uid>, stats/lease.<uid>  one user's own lock files
 *   stats/stalled.<uid>.<id>  one user's memo of a stalled lease server (lease.h)
 *                           (cjc_store_own_file: evict.h, lease.h)
 *   stats/targets, stats/uncacheable  counters per target and per reason (stats.h)
 *   journal, journal.1      the record of recent compiles (journal.h)
 *   staging/s.<host>.<pid>.<random>/  entries being written; a crashed
 *                           writer's staging is left for `cjc gc`
 *   quarantine/<key>.<host>.<pid>.<random>/  what `cjc verify --fix` moved aside
 *   index/<kk>, index/<kk>.<uid>  what `cjc ls` shows of each entry
 *                           (index.h): a publication appends a row to the
 *                           publisher's own; never trusted over the entries
 *
 * Writes (docs/trust.md): the namespace is opened once, below $CJC_DIR one
 * directory at a time without following links, and kept open (s->fd).
 * Every create, rename and removal in the store is relative to a directory
 * fd opened from it the same way (openat2 with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, or a walk that makes what is missing): openat,
 * mkdirat, renameat, unlinkat.  No store path is ever handed whole to a
 * call that writes, so a member who renames a directory of the store and
 * plants a link in its place cannot send a write, a rename or a removal
 * outside it.  Paths of the store (cjc_store_path, cjc_staging.dir,
 * cjc_store_quarantine's dest, the dir given to foreach callbacks) are for
 * messages and for reading; what is still done by path: cjc_entry_open_dir
 * (reads, O_NOFOLLOW) and opening $CJC_DIR itself, which may be a link.
 *
 * Publication (cjc_staging_*): a writer makes its own staging directory
 * (mkdirat in staging/'s fd), opens it without following a link and checks
 * it is its own (fstat), then writes every artifact into that fd with
 * O_EXCL | O_NOFOLLOW, fsyncs each file, writes metadata.json last, fsyncs
 * the directory, checks it is still at its name, and renames it to
 * entries/<kk>/<key> in one renameat(2) between staging/'s fd and the
 * shard's, then fsyncs the shard.  rename() of a directory onto an existing
 * non-empty one fails, so the first writer wins; a loser removes its own
 * staging and keeps its own output.  A staging directory someone renamed
 * away or replaced is not published (ELOOP, EPERM, ESTALE): the compile
 * goes on unpublished.  Nothing ever writes inside a visible entry.  No
 * locks: this is safe on NFS-like file systems.
 *
 * Reading (cjc_store_open_entry, cjc_entry_copy/read): the metadata is parsed
 * strictly (or, for cjc_store_open_entry, hashed as stored and recognised
 * as a file that passed before: metamemo.h; one stored compressed passed
 * when it inflated whole, its checksum held and the document parsed), and every byte of every
 * artifact is hashed and its size checked as it is served; one stored compressed is checked as
 * stored (size and hash) and as inflated (size and hash), and never inflated past its recorded
 * size.  cjc_entry_open_dir always parses, and gives `meta`.  Any failure is reported as damage,
 * with the reason; the entry is not touched.  Functions return 0 or -1 with errno / a reason in
 * `why`, except where an enum says more.
 */
#ifndef CJC_STORE_H
#define CJC_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/util.h"
#include "keys/key.h"
#include "keys/metadata.h"

#define CJC_SIGN_FILE "metadata.sig" /* an entry's signature (sign.h) */

struct cjc_store {
	char *dir; /* the namespace directory */
	int fd;    /* open on it (O_PATH), while dir is set */
	mode_t dir_mode; /* $CJC_DIR's mode and group: every directory made in */
	gid_t dir_gid;   /* the store takes them (not the umask); 0: unknown */
	/* zstd level for the artifacts it publishes (compress.h); 0: none.
	 * cjc_store_open sets CJC_COMPRESSION_DEFAULT; the compression_level
	 * setting, where the caller reads settings. */
	int compression_level;
};

/* Opens, creating what is missing, a store whose path may be trusted
 * (docs/trust.md): $CJC_DIR and every directory on the way to it are yours
 * or root's and writable by no one else, unless sticky ($CJC_DIR itself may
 * be its group's), and every link on the way is yours or root's; otherwise
 * -1 with EPERM, and cjc_store_strerror() says which and what to do. */
int cjc_store_open(struct cjc_store *s, const char *cache_dir);
/* strerror(e), or why the last cjc_store_open of this thread refused its
 * path (EPERM). */
const char *cjc_store_strerror(int e);
/* "cache directory DIR is unusable: WHY" for cjc_store_open's failure
 * with errno e, control and bidi characters escaped; malloc'd. */
char *cjc_store_unusable(const char *dir, int e);
/* The same for a store that must be there already (one to read, such as a
 * copy to report on): creates nothing; ENOENT when it has no namespace. */
int cjc_store_open_existing(struct cjc_store *s, const char *cache_dir);
void cjc_store_close(struct cjc_store *s);
/* A path inside the namespace, in a new allocation. */
char *cjc_store_path(const struct cjc_store *s, const char *sub);
char *cjc_store_entry_dir(const struct cjc_store *s, const char *key);
char *cjc_store_entry_name(const char *key); /* "entries/<kk>/<key>" */
/* Names of files inside the namespace ("manifests/<kk>/<key>", ...). */
char *cjc_store_manifest_name(const char *direct_key);
/* A translation unit's hash cache, by working directory and source path. */
char *cjc_store_hash_cache_name(const char *cwd, const char *source);

/*
 * The store's own files, read as docs/store.md, trust asks: opened by their name inside
 * the namespace without following a symbolic link at any step (openat2's
 * RESOLVE_NO_SYMLINKS), without blocking on a FIFO, and read only when they
 * are regular files of at most `max` bytes (fs.h cjc_read_bounded: errno
 * EINVAL, EFBIG, ELOOP; cjc_untrusted_error() words them).  Writes make
 * the directories on the way as real ones (mkdirat, each opened
 * O_NOFOLLOW) and replace files by renameat in their directory's fd.
 */
#define CJC_STORE_MAX_METADATA ((size_t)16 << 20)
#define CJC_STORE_MAX_FILE ((size_t)64 << 20) /* manifests, caches, counters, journal */
int cjc_store_openat(const struct cjc_store *s, const char *sub, int flags, mode_t mode);
int cjc_store_read(const struct cjc_store *s, const char *sub, size_t max, struct cjc_buf *out);
/* For files written in place (counters, the journal, locks): a regular file or -1 (EINVAL). */
int cjc_store_open_regular(const struct cjc_store *s, const char *sub, int flags, mode_t mode);
int cjc_store_make_dirs(const struct cjc_store *s, const char *sub);
/* A lock file only this user can lock (evict.c, lease.h): name in the
 * store's directory dir (made when missing), opened read-write when it is a
 * regular file of this user's alone (mode 0600, one link); anything else
 * there (another user's file, a link, a FIFO) is replaced by a new file of
 * ours, renamed over it in dir's fd.  The fd, or -1 with errno when none
 * can be had (the disk failed, or what is there cannot be replaced). */
int cjc_store_own_file(const struct cjc_store *s, const char *dir, const char *name);
/* Puts a new empty file (mode, less the umask) at sub, renamed over what is
 * there in the fd of sub's directory: for a file written in place that has
 * a second name (a hard link someone planted; stats.c). */
int cjc_store_fresh_file(const struct cjc_store *s, const char *sub, mode_t mode);
/* Writes a temporary file beside sub and renames it over sub, both in the
 * fd of sub's directory (made when missing). */
int cjc_store_replace(const struct cjc_store *s, const char *sub, const void *p, size_t n);
/* renameat() between the fds of from's and to's directories. */
int cjc_store_rename(const struct cjc_store *s, const char *from, const char *to);
/* Removes a file or tree in place, relative to its directory's fd (fs.h
 * cjc_remove_tree_at); missing is not an error.  A reader may see a tree
 * half gone: entries are discarded instead. */
int cjc_store_remove(const struct cjc_store *s, const char *sub);
/* Takes a file or tree of the store (sub) out of sight: renamed into
 * staging/ (a reader sees all of it or none), then deleted there; what a
 * failed deletion leaves, gc reclaims.  -1 when it is still where it was. */
int cjc_store_discard(const struct cjc_store *s, const char *sub);
/* The same into bin, a directory of staging/ made by cjc_store_bin() (NULL:
 * staging/ itself), for one thread discarding many trees: threads that all
 * rename into staging/ wait on its lock for each rename (evict.c). */
int cjc_store_discard_into(const struct cjc_store *s, const char *sub, const char *bin);
/* A new directory of staging/ ("staging/discard.<host>.<pid>.<random>", a
 * name in the namespace), reclaimed by gc like any staging once its maker
 * is gone; NULL when it cannot be made.  cjc_store_remove() it when done. */
char *cjc_store_bin(const struct cjc_store *s);
const char *cjc_untrusted_error(int err);

struct cjc_entry {
	char *dir;
	int dfd;      /* open on dir, while dir is set */
	json_t *meta; /* NULL when the document was recognised (metamemo.h) */
	bool unread;  /* recognised by its stamp, its bytes not read (metamemo.h) */
	uid_t meta_uid; /* the owner of the metadata.json that was read or recognised (sign.h) */
	struct cjc_artifact *files;
	size_t nfiles;
	int64_t duration_ms;
};

enum cjc_lookup { CJC_ENTRY_FOUND, CJC_ENTRY_ABSENT, CJC_ENTRY_DAMAGED };

enum cjc_lookup cjc_store_open_entry(const struct cjc_store *s, const char *key,
				     struct cjc_entry *e, struct cjc_buf *why);
enum cjc_lookup cjc_entry_open_dir(const char *dir, const char *key, struct cjc_entry *e,
				   struct cjc_buf *why);
/* By key, as cjc_store_open_entry opens it, but always parsed (meta set). */
enum cjc_lookup cjc_store_read_entry(const struct cjc_store *s, const char *key,
				     struct cjc_entry *e, struct cjc_buf *why);
const struct cjc_artifact *cjc_entry_artifact(const struct cjc_entry *e, const char *name);
/* Copies an artifact to out_fd, verifying size and hash: 0, -1 when the
 * entry is damaged or unreadable, -2 when out_fd cannot be written. */
int cjc_entry_copy(const struct cjc_entry *e, const char *name, int out_fd, struct cjc_buf *why);
int cjc_entry_read(const struct cjc_entry *e, const char *name, struct cjc_buf *data,
		   struct cjc_buf *why);
/* The file of an artifact as it is stored (compressed or not: what a
 * remote store keeps), appended to stored once both checks passed. */
int cjc_entry_read_stored(const struct cjc_entry *e, const char *name, struct cjc_buf *stored,
			  struct cjc_buf *why);
/* The document of the metadata.json of the entry open at dfd, appended to
 * text: read bounded, inflated when stored compressed (below).  For what
 * needs its bytes (a signature's check, a remote store's record). */
int cjc_entry_metadata_text(int dfd, struct cjc_buf *text, struct cjc_buf *why);
/* Verifies every artifact. */
int cjc_entry_verify(const struct cjc_entry *e, struct cjc_buf *why);
void cjc_entry_release(struct cjc_entry *e);

struct cjc_staging {
	char *dir;  /* its path, for messages only; set while it exists */
	char *name; /* its name in staging/ */
	int parent; /* staging/, open (O_PATH) while dir is set */
	int dfd;    /* the writer's directory itself, open while dir is set */
	struct cjc_artifact files[16];
	size_t nfiles;
	json_t *index_doc; /* borrowed: the metadata as a document, for published; or NULL */
	/* Called by cjc_staging_publish once it put the staging in place as
	 * key, while its files are still listed; or NULL.  So the caller tells
	 * what keeps track of entries above the store: the index `cjc ls`
	 * reads (index.h, cjc_index_published). */
	void (*published)(const struct cjc_store *s, const struct cjc_staging *st, const char *key);
	bool transient;    /* to be read and removed, never published: no write-back started */
	bool sealed;       /* finished and fsynced (cjc_staging_seal): only the rename is left */
	bool copy;         /* of an entry a remote store keeps: the rename is not made durable */
	int compression_level;  /* the store's, when begun */
	uint64_t metadata_size; /* what metadata.json took once written (compressed or not) */
};

/* Makes and opens this writer's directory in staging/ (registered as a
 * temporary, fs.h).  -1 with ELOOP or EPERM when what was made is not
 * there as this user's directory by the time it is opened. */
int cjc_staging_begin(const struct cjc_store *s, struct cjc_staging *st);
/* The same, or with transient a staging to be read and removed, never
 * published (remote_only): no write-back is started, and it is made 0700,
 * so that no member of a group store can change it while it is served or
 * sent. */
int cjc_staging_begin_as(const struct cjc_store *s, struct cjc_staging *st, bool transient);
/* Adds an artifact from the current contents of a file / from memory,
 * stored compressed at st->compression_level when that is smaller. */
int cjc_staging_add_file(struct cjc_staging *st, const char *name, const char *src);
int cjc_staging_add_data(struct cjc_staging *st, const char *name, const void *p, size_t n);
/* Adds an artifact as stored (rec: its record; p[0..n): the file's bytes,
 * compressed or not, as rec says), checked by the caller against rec's
 * stored size and hash (a remote store's; the read that serves it checks
 * both again). */
int cjc_staging_add_stored(struct cjc_staging *st, const struct cjc_artifact *rec, const void *p,
			   size_t n);
/* Writes the signature (sign.h; NULL or empty: unsigned), then
 * metadata.json: the staging then holds a whole entry. */
int cjc_staging_finish(struct cjc_staging *st, const struct cjc_buf *metadata,
		       const struct cjc_buf *signature);
/* Finishes the staging and fsyncs it, so that publishing it is one
 * rename: a caller with time to spare (a fetch ahead, remote.c) seals it
 * there, beside other work, instead of in cjc_staging_publish. */
int cjc_staging_seal(struct cjc_staging *st, const struct cjc_buf *metadata,
		     const struct cjc_buf *signature);
/* A finished staging, opened as an entry (through its fd, parsed, verified
 * as it is read like any entry); the staging stays this writer's. */
enum cjc_lookup cjc_staging_open_entry(const struct cjc_staging *st, const char *key,
				       struct cjc_entry *e, struct cjc_buf *why);
/* Seals the staging, unless it was sealed, and renames it into place
 * (then calls st->published).  *won is false when an entry with that key
 * was already there (not an error). */
int cjc_staging_publish(const struct cjc_store *s, struct cjc_staging *st, const char *key,
			const struct cjc_buf *metadata, const struct cjc_buf *signature, bool *won);
/* Removes this writer's staging directory (by its name in staging/'s fd);
 * harmless on one never begun when it was zeroed. */
void cjc_staging_abort(struct cjc_staging *st);

/* Calls fn for each entry directory (key, path); stops when fn returns
 * non-zero.  The directories are listed through fds; the path is for
 * messages and readers: to change an entry, name it by its key. */
int cjc_store_foreach_entry(const struct cjc_store *s,
			    int (*fn)(const char *key, const char *dir, void *ctx), void *ctx);
/* An entry named by a key prefix: how many keys start with it, and the first. */
struct cjc_key_match {
	const char *prefix;
	size_t matches;
	char key[CJC_HEX_LEN + 1];
	char *dir; /* free() it */
};
int cjc_store_find_key(const struct cjc_store *s, const char *prefix, struct cjc_key_match *m);
/* The same for the entries whose keys start with prefix (at most 2 digits). */
int cjc_store_foreach_entry_in(const struct cjc_store *s, const char *prefix,
			       int (*fn)(const char *key, const char *dir, void *ctx), void *ctx);
/* Calls fn for each manifest (its direct key, its path). */
int cjc_store_foreach_manifest(const struct cjc_store *s,
			       int (*fn)(const char *direct_key, const char *path, void *ctx), void *ctx);

#endif
