#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/compress.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/stamp.h"
#include "keys/metamemo.h"

/* errno after a failed openat of name in dirfd: ELOOP for a link, which
 * O_PATH | O_DIRECTORY | O_NOFOLLOW reports as ENOTDIR. */
static int open_errno(int dirfd, const char *name)
{
	int e = errno;
	struct stat st;
	if (e == ENOTDIR && !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
		e = ELOOP;
	return e;
}

/*
 * Makes the directory name in dirfd as every directory of the store is made
 * (docs/store.md): with the store root's mode and group, whatever the umask
 * of whoever makes it, so that one clean by root under umask 077 does not
 * lock a group out.  Only a directory of the caller's own is changed.
 */
static void take_root_mode(const struct cjc_store *s, int fd)
{
	struct stat st;
	if (!s->dir_mode || fstat(fd, &st) || st.st_uid != geteuid())
		return;
	if (st.st_gid != s->dir_gid)
		(void)fchown(fd, (uid_t)-1, s->dir_gid); /* best effort: not in the group */
	(void)fchmod(fd, s->dir_mode);
}

static int make_dir(const struct cjc_store *s, int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, s->dir_mode ? s->dir_mode & 0777 : 0777))
		return -1;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		take_root_mode(s, fd);
		close(fd);
	}
	return 0;
}

/*
 * Walks sub below the directory open at start one openat() at a time,
 * refusing symbolic links (ELOOP).  make: every component is a directory,
 * made when missing (make_dir).  Directories on the way are opened O_PATH;
 * the last component with flags and mode.  The final descriptor, or -1.
 */
static int walk_from(const struct cjc_store *s, int start, const char *sub, bool make, int flags,
		     mode_t mode)
{
	char *copy = cjc_xstrdup(sub), *save = NULL, *next;
	int fd = fcntl(start, F_DUPFD_CLOEXEC, 0);
	int e = fd < 0 ? errno : 0;
	for (char *c = strtok_r(copy, "/", &save); fd >= 0 && c; c = next) {
		next = strtok_r(NULL, "/", &save);
		int nfd = -1;
		if (make && make_dir(s, fd, c) && errno != EEXIST)
			e = errno;
		else if ((nfd = openat(fd, c, (next ? O_PATH | O_DIRECTORY : flags) | O_NOFOLLOW | O_CLOEXEC,
				       next ? 0 : mode)) < 0)
			e = open_errno(fd, c);
		close(fd);
		fd = nfd;
	}
	free(copy);
	errno = e;
	return fd;
}

static int walk(const struct cjc_store *s, const char *sub, bool make, int flags, mode_t mode)
{
	return walk_from(s, s->fd, sub, make, flags, mode);
}

/*
 * Every directory of the namespace must be a real directory: a symbolic
 * link planted inside the store must not send writes or removals outside
 * it ($CJC_DIR itself may be a link).
 */
static const char *const subdirs[] = { "entries", "manifests", "staging", "ids", "stats", "hashes" };
#define NSUBDIRS (sizeof subdirs / sizeof *subdirs)

/* 0 when each subdirectory of the namespace is a real directory (made when
 * missing; with make false, missing is allowed); -1 with errno (ELOOP: a
 * link) otherwise. */
static int check_subdirs(const struct cjc_store *s, bool make)
{
	for (size_t i = 0; i < NSUBDIRS; i++) {
		struct stat st;
		int rc = fstatat(s->fd, subdirs[i], &st, AT_SYMLINK_NOFOLLOW);
		if (rc && errno == ENOENT && !make)
			continue;
		if (rc && errno == ENOENT && (!make_dir(s, s->fd, subdirs[i]) || errno == EEXIST))
			rc = fstatat(s->fd, subdirs[i], &st, AT_SYMLINK_NOFOLLOW);
		if (rc)
			return -1;
		if (!S_ISDIR(st.st_mode)) {
			errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
			return -1;
		}
	}
	return 0;
}

/* Why the last cjc_store_open of this thread refused its directory. */
static __thread char refusal[PATH_MAX + 160];

const char *cjc_store_strerror(int e)
{
	return e == EPERM && refusal[0] ? refusal : strerror(e);
}

char *cjc_store_unusable(const char *dir, int e)
{
	struct cjc_buf b = CJC_BUF_INIT;
	char *raw = cjc_xasprintf("cache directory %s is unusable: %s", dir, cjc_store_strerror(e));
	cjc_buf_adds(&b, "");
	cjc_buf_add_printable(&b, raw, strlen(raw));
	free(raw);
	return cjc_buf_detach(&b);
}

/* $CJC_DIR, open (O_PATH): checked on the whole way from "/" unless only
 * read (cjc_open_dir_safe); its mode and group are those of every
 * directory made in the store. */
static int open_top(struct cjc_store *s, const char *cache_dir, bool make)
{
	struct cjc_buf why = CJC_BUF_INIT;
	refusal[0] = '\0';
	if (!*cache_dir) { /* no HOME and no home directory (config.c) */
		snprintf(refusal, sizeof refusal, "no store named and no home directory for "
			 "uid %lu: set CJC_DIR or HOME", (unsigned long)geteuid());
		errno = EPERM;
		return -1;
	}
	int top = make ? cjc_open_dir_safe(cache_dir, true, 0777, &why)
		       : open(cache_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int e = errno;
	struct stat st;
	if (top >= 0 && !fstat(top, &st)) {
		s->dir_mode = st.st_mode & 03777;
		s->dir_gid = st.st_gid;
	} else if (top < 0 && why.len) {
		snprintf(refusal, sizeof refusal, "%s", why.data);
	}
	cjc_buf_release(&why);
	errno = e;
	return top;
}

/*
 * Opens the namespace, creating it on first use: $CJC_DIR by its path (it
 * may be a link of yours or root's: open_top), then v1/<os>-<arch> below it
 * one directory at a time without following links, and every later access
 * relative to that fd.  On a hit this is three opens and six fstatat
 * calls, and the check of the path to $CJC_DIR.
 */
static int open_store(struct cjc_store *s, const char *cache_dir, bool make)
{
	struct utsname u;
	if (uname(&u))
		strcpy(u.machine, "unknown");
	char *ns = cjc_xasprintf("%s/linux-%s", CJC_STORE_FORMAT, u.machine);
	s->dir = cjc_path_join(cache_dir, ns);
	s->fd = -1;
	s->compression_level = CJC_COMPRESSION_DEFAULT;
	int top = open_top(s, cache_dir, make);
	if (top >= 0 && (s->fd = walk_from(s, top, ns, false, O_PATH | O_DIRECTORY, 0)) < 0 &&
	    errno == ENOENT && make)
		s->fd = walk_from(s, top, ns, true, O_PATH | O_DIRECTORY, 0);
	int rc = s->fd < 0 || check_subdirs(s, make) ? -1 : 0;
	int e = errno;
	if (top >= 0)
		close(top);
	free(ns);
	if (rc) {
		if (s->fd >= 0)
			close(s->fd);
		free(s->dir);
		s->dir = NULL;
	}
	errno = e;
	return rc;
}

int cjc_store_open(struct cjc_store *s, const char *cache_dir)
{
	return open_store(s, cache_dir, true);
}

int cjc_store_open_existing(struct cjc_store *s, const char *cache_dir)
{
	return open_store(s, cache_dir, false);
}

void cjc_store_close(struct cjc_store *s)
{
	if (s->dir)
		close(s->fd);
	free(s->dir);
	s->dir = NULL;
}

int cjc_store_openat(const struct cjc_store *s, const char *sub, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.mode = flags & O_CREAT ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};
	long fd = syscall(SYS_openat2, s->fd, sub, &how, sizeof how);
	if (fd < 0 && errno == ENOSYS) /* before Linux 5.6 */
		return walk(s, sub, false, flags, mode);
	return (int)fd;
}

int cjc_store_open_regular(const struct cjc_store *s, const char *sub, int flags, mode_t mode)
{
	return cjc_keep_regular(cjc_store_openat(s, sub, flags | O_NONBLOCK, mode));
}

static bool ours_alone(int fd)
{
	struct stat st;
	return !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 077) && st.st_nlink == 1;
}

int cjc_store_own_file(const struct cjc_store *s, const char *dir, const char *name)
{
	char *sub = cjc_path_join(dir, name);
	int fd = cjc_store_open_regular(s, sub, O_RDWR | O_CREAT, 0600);
	free(sub);
	if (fd >= 0 && ours_alone(fd))
		return fd;
	if (fd >= 0)
		close(fd);
	/* replaced only when something else is at the name: a link, a FIFO, a
	 * directory, a file of someone else's; a failing disk is an error */
	else if (errno != ELOOP && errno != EINVAL && errno != EISDIR && errno != EACCES &&
		 errno != EPERM && errno != ENXIO)
		return -1;
	int dfd = cjc_store_openat(s, dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0 && !cjc_store_make_dirs(s, dir))
		dfd = cjc_store_openat(s, dir, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0)
		return -1;
	char *tmp = cjc_unique_name(name);
	fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && renameat(dfd, tmp, dfd, name)) {
		(void)unlinkat(dfd, tmp, 0);
		close(fd);
		fd = -1;
	}
	free(tmp);
	close(dfd);
	return fd;
}

static int open_parent(const struct cjc_store *s, const char *sub, const char **name);

int cjc_store_fresh_file(const struct cjc_store *s, const char *sub, mode_t mode)
{
	const char *name;
	int dfd = open_parent(s, sub, &name);
	if (dfd < 0)
		return -1;
	char *tmp = cjc_unique_name(name);
	int fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	int rc = fd < 0 || renameat(dfd, tmp, dfd, name) ? -1 : 0;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (rc && fd >= 0)
		(void)unlinkat(dfd, tmp, 0);
	free(tmp);
	close(dfd);
	errno = e;
	return rc;
}

int cjc_store_read(const struct cjc_store *s, const char *sub, size_t max, struct cjc_buf *out)
{
	return cjc_read_regular_and_close(cjc_store_openat(s, sub, O_RDONLY | O_NONBLOCK, 0), max, out);
}

int cjc_store_make_dirs(const struct cjc_store *s, const char *sub)
{
	int fd = walk(s, sub, true, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* The directory sub is in, opened (O_PATH) as every directory of the store
 * is, and sub's last name in it (*name). */
static int open_parent(const struct cjc_store *s, const char *sub, const char **name)
{
	const char *slash = strrchr(sub, '/');
	*name = slash ? slash + 1 : sub;
	if (!slash)
		return fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
	char *dir = cjc_xstrndup(sub, (size_t)(slash - sub));
	int fd = cjc_store_openat(s, dir, O_PATH | O_DIRECTORY, 0);
	free(dir);
	return fd;
}

int cjc_store_rename(const struct cjc_store *s, const char *from, const char *to)
{
	const char *from_name, *to_name;
	int from_dir = open_parent(s, from, &from_name);
	int to_dir = from_dir < 0 ? -1 : open_parent(s, to, &to_name);
	int rc = to_dir < 0 ? -1 : renameat(from_dir, from_name, to_dir, to_name);
	int e = errno;
	if (from_dir >= 0)
		close(from_dir);
	if (to_dir >= 0)
		close(to_dir);
	errno = e;
	return rc;
}

int cjc_store_remove(const struct cjc_store *s, const char *sub)
{
	const char *name;
	int dir = open_parent(s, sub, &name);
	if (dir < 0)
		return errno == ENOENT ? 0 : -1;
	int rc = cjc_remove_tree_at(dir, name);
	int e = errno;
	close(dir);
	errno = e;
	return rc;
}

int cjc_store_discard_into(const struct cjc_store *s, const char *sub, const char *bin)
{
	const char *slash = strrchr(sub, '/');
	char *trash = bin ? cjc_path_join(bin, slash ? slash + 1 : sub)
			  : cjc_unique_name("staging/discard");
	int rc = cjc_store_rename(s, sub, trash);
	if (!rc)
		(void)cjc_store_remove(s, trash); /* what is left, gc reclaims (its pid is gone) */
	int e = errno;
	free(trash);
	errno = e;
	return rc;
}

int cjc_store_discard(const struct cjc_store *s, const char *sub)
{
	return cjc_store_discard_into(s, sub, NULL);
}

char *cjc_store_bin(const struct cjc_store *s)
{
	char *bin = cjc_unique_name("staging/discard");
	const char *name;
	int dir = open_parent(s, bin, &name);
	/* made as staging is: a group store's gc may reclaim it */
	int rc = dir < 0 ? -1 : make_dir(s, dir, name);
	if (dir >= 0)
		close(dir);
	if (!rc)
		return bin;
	free(bin);
	return NULL;
}

int cjc_store_replace(const struct cjc_store *s, const char *sub, const void *p, size_t n)
{
	const char *slash = strrchr(sub, '/');
	char *dir = cjc_dirname(sub);
	int dfd = walk(s, dir, true, O_PATH | O_DIRECTORY, 0);
	int rc = dfd < 0 ? -1 : cjc_replace_file_at(dfd, slash ? slash + 1 : sub, p, n, 0666);
	int e = errno;
	if (dfd >= 0)
		close(dfd);
	free(dir);
	errno = e;
	return rc;
}

char *cjc_store_path(const struct cjc_store *s, const char *sub)
{
	return cjc_path_join(s->dir, sub);
}

char *cjc_store_entry_name(const char *key)
{
	return cjc_xasprintf("entries/%.2s/%s", key, key);
}

char *cjc_store_entry_dir(const struct cjc_store *s, const char *key)
{
	char *sub = cjc_store_entry_name(key);
	char *dir = cjc_store_path(s, sub);
	free(sub);
	return dir;
}

char *cjc_store_manifest_name(const char *direct_key)
{
	return cjc_xasprintf("manifests/%.2s/%s", direct_key, direct_key);
}

char *cjc_store_hash_cache_name(const char *cwd, const char *source)
{
	struct cjc_buf id = CJC_BUF_INIT;
	char hex[CJC_HEX_LEN + 1];
	cjc_buf_adds(&id, cwd);
	cjc_buf_add(&id, "", 1);
	cjc_buf_adds(&id, source);
	cjc_hash_buf_hex(id.data, id.len, hex);
	cjc_buf_release(&id);
	return cjc_xasprintf("hashes/%.2s/%s", hex, hex);
}

/* How a read uses the checked-metadata memo (metamemo.h): not at all; to
 * recognise a document by its hash (a staging's, soon removed); or that,
 * and by the file's stamp too, noting the stamp for the next reader. */
enum memo_use { MEMO_NONE, MEMO_BY_HASH, MEMO_FULL };

/* The document a compressed metadata.json holds (stored: its bytes),
 * appended to text: 0, or -1 (why). */
static int metadata_inflate(const struct cjc_buf *stored, struct cjc_buf *text, struct cjc_buf *why)
{
	const char *bad;
	if (!cjc_inflate_frame(stored->data, stored->len, CJC_STORE_MAX_METADATA, text, &bad))
		return 0;
	cjc_buf_addf(why, "metadata.json is damaged: %s", bad);
	return -1;
}

int cjc_entry_metadata_text(int dfd, struct cjc_buf *text, struct cjc_buf *why)
{
	struct cjc_buf stored = CJC_BUF_INIT;
	int rc = cjc_read_bounded(dfd, "metadata.json", O_NOFOLLOW, CJC_STORE_MAX_METADATA,
				  &stored);
	if (rc)
		cjc_buf_addf(why, "cannot read metadata.json: %s", cjc_untrusted_error(errno));
	else if (cjc_compressed(stored.data, stored.len))
		rc = metadata_inflate(&stored, text, why);
	else
		cjc_buf_add(text, stored.data, stored.len);
	cjc_buf_release(&stored);
	return rc;
}

/* Checks the metadata's text; with a memo, a document already checked is
 * recognised by its hash instead of parsed again, and with MEMO_FULL the
 * file's stamp (st, taken at taken_ns) is noted for the next reader. */
static int check_metadata(struct cjc_entry *e, const struct cjc_buf *text, const char *key,
			  enum memo_use memo, const struct cjc_stamp *st, int64_t taken_ns,
			  struct cjc_buf *why)
{
	unsigned char sha[CJC_DIGEST_LEN];
	bool use_memo = memo != MEMO_NONE;
	if (use_memo)
		cjc_hash_buf(text->data, text->len, sha);
	if (!use_memo || !cjc_metamemo_find(key, sha, &e->files, &e->nfiles, &e->duration_ms)) {
		struct cjc_buf plain = CJC_BUF_INIT;
		bool packed = cjc_compressed(text->data, text->len);
		if (!packed || !metadata_inflate(text, &plain, why))
			e->meta = packed ? cjc_metadata_parse(plain.data, plain.len, key, why)
					 : cjc_metadata_parse(text->data, text->len, key, why);
		cjc_buf_release(&plain);
		if (!e->meta)
			return -1;
		e->files = cjc_metadata_artifacts(e->meta, &e->nfiles);
		e->duration_ms = (int64_t)json_integer_value(json_object_get(e->meta, "duration_ms"));
		if (use_memo)
			cjc_metamemo_add(key, sha, e->files, e->nfiles, e->duration_ms);
	}
	if (memo == MEMO_FULL)
		cjc_metamemo_stamp(key, sha, st, taken_ns);
	return 0;
}

/* Reads and checks metadata.json of the entry open at dfd; with MEMO_FULL,
 * a document the memo knows by its stamp is not read at all. */
static int read_metadata(int dfd, const char *key, struct cjc_entry *e, enum memo_use memo,
			 struct cjc_buf *why)
{
	struct stat sb;
	struct cjc_stamp st = { 0 };
	e->meta_uid = (uid_t)-1;
	if (memo == MEMO_FULL && !fstatat(dfd, "metadata.json", &sb, AT_SYMLINK_NOFOLLOW) &&
	    S_ISREG(sb.st_mode)) {
		cjc_stamp_of(&sb, &st);
		e->meta_uid = sb.st_uid;
		if ((e->unread = cjc_metamemo_find_stamp(key, &st, &e->files, &e->nfiles,
							 &e->duration_ms)))
			return 0;
	}
	struct cjc_buf text = CJC_BUF_INIT;
	int64_t taken_ns = cjc_wall_ns();
	int fd = cjc_open_regular(dfd, "metadata.json", O_RDONLY | O_NOFOLLOW, 0);
	e->meta_uid = (uid_t)-1;
	if (fd >= 0 && !fstat(fd, &sb)) {
		cjc_stamp_of(&sb, &st);
		e->meta_uid = sb.st_uid; /* the file read, not whatever is at the name later */
	}
	int rc = cjc_read_regular_and_close(fd, CJC_STORE_MAX_METADATA, &text);
	if (rc)
		cjc_buf_addf(why, "cannot read metadata.json: %s", cjc_untrusted_error(errno));
	else
		rc = check_metadata(e, &text, key, memo, &st, taken_ns, why);
	cjc_buf_release(&text);
	return rc;
}

/* Reads the metadata of the entry open at dfd (which it takes over). */
static enum cjc_lookup open_entry(int dfd, const char *dir, const char *key, struct cjc_entry *e,
				  enum memo_use memo, struct cjc_buf *why)
{
	memset(e, 0, sizeof *e);
	if (dfd < 0) {
		if (errno == ENOENT)
			return CJC_ENTRY_ABSENT;
		cjc_buf_addf(why, "cannot open the entry: %s", strerror(errno));
		return CJC_ENTRY_DAMAGED;
	}
	if (read_metadata(dfd, key, e, memo, why)) {
		close(dfd);
		return CJC_ENTRY_DAMAGED;
	}
	e->dir = cjc_xstrdup(dir);
	e->dfd = dfd;
	return CJC_ENTRY_FOUND;
}

enum cjc_lookup cjc_entry_open_dir(const char *dir, const char *key, struct cjc_entry *e,
				   struct cjc_buf *why)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return open_entry(dfd, dir, key, e, MEMO_NONE, why);
}

static enum cjc_lookup open_by_key(const struct cjc_store *s, const char *key, struct cjc_entry *e,
				   enum memo_use memo, struct cjc_buf *why)
{
	char *sub = cjc_store_entry_name(key);
	char *dir = cjc_store_path(s, sub);
	int dfd = cjc_store_openat(s, sub, O_RDONLY | O_DIRECTORY, 0);
	enum cjc_lookup r = open_entry(dfd, dir, key, e, memo, why);
	free(dir);
	free(sub);
	return r;
}

enum cjc_lookup cjc_store_open_entry(const struct cjc_store *s, const char *key,
				     struct cjc_entry *e, struct cjc_buf *why)
{
	return open_by_key(s, key, e, MEMO_FULL, why);
}

enum cjc_lookup cjc_store_read_entry(const struct cjc_store *s, const char *key,
				     struct cjc_entry *e, struct cjc_buf *why)
{
	return open_by_key(s, key, e, MEMO_NONE, why);
}

const char *cjc_untrusted_error(int err)
{
	switch (err) {
	case EINVAL: return "not a regular file";
	case EFBIG: return "too large";
	case ELOOP: return "a symbolic link";
	default: return strerror(err);
	}
}

const struct cjc_artifact *cjc_entry_artifact(const struct cjc_entry *e, const char *name)
{
	for (size_t i = 0; i < e->nfiles; i++)
		if (!strcmp(e->files[i].name, name))
			return &e->files[i];
	return NULL;
}

/* Where an artifact's bytes go as they are read, and what they hashed to. */
struct serving {
	const struct cjc_artifact *a;
	int out_fd;
	struct cjc_buf *data;
	struct cjc_hash h;
	uint64_t total;
	struct cjc_buf *why;
	int rc; /* -2: out_fd could not be written */
};

/* Takes the next of the artifact's own bytes: hashed, counted, served. */
static int serve_bytes(void *ctx, const void *p, size_t n)
{
	struct serving *v = ctx;
	v->total += n;
	cjc_hash_update(&v->h, p, n);
	if (v->total > v->a->size)
		return -1; /* checked below */
	if (v->out_fd >= 0 && cjc_write_all(v->out_fd, p, n)) {
		cjc_buf_addf(v->why, "cannot write the output: %s", strerror(errno));
		v->rc = -2;
		return -1;
	}
	if (v->data)
		cjc_buf_add(v->data, p, n);
	return 0;
}

/* Whether n bytes hashing to h are what the record says: 0, or -1 (why). */
static int check_bytes(const char *name, const char *what, uint64_t n, uint64_t size,
		       struct cjc_hash *h, const char *sha, struct cjc_buf *why)
{
	char hex[CJC_HEX_LEN + 1];
	cjc_hash_final_hex(h, hex);
	if (n != size) {
		cjc_buf_addf(why, "%s has %llu %sbytes, metadata.json says %llu", name,
			     (unsigned long long)n, what, (unsigned long long)size);
		return -1;
	}
	if (strcmp(hex, sha)) {
		cjc_buf_addf(why, "%s does not match its %ssha256", name, what);
		return -1;
	}
	return 0;
}

/* Reads the file of an artifact open at fd, at most one byte past its
 * stored size: each chunk hashed (when stored compressed) and appended to
 * stored, when given, then served through v, inflated when stored
 * compressed.  Once serving fails the rest is still read and hashed, so
 * that a damaged file is told as one.  0, -1 (why) or -2 (v's output). */
static int read_stored(int fd, struct serving *v, struct cjc_buf *stored)
{
	const struct cjc_artifact *a = v->a;
	bool packed = a->stored_size != 0;
	struct cjc_hash h;
	struct cjc_inflate z = { 0 };
	cjc_hash_init(&h);
	char chunk[1 << 16];
	uint64_t total = 0;
	int served = packed ? cjc_inflate_begin(&z, a->size) : 0;
	ssize_t n = 0;
	while (!v->rc && total <= cjc_artifact_stored_size(a) &&
	       ((n = read(fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))) {
		if (n < 0)
			continue;
		total += (uint64_t)n;
		if (packed)
			cjc_hash_update(&h, chunk, (size_t)n);
		if (stored)
			cjc_buf_add(stored, chunk, (size_t)n);
		if (!served)
			served = packed ? cjc_inflate_feed(&z, chunk, (size_t)n, serve_bytes, v)
					: serve_bytes(v, chunk, (size_t)n);
	}
	int read_errno = n < 0 ? errno : 0;
	int inflated = packed ? cjc_inflate_end(&z) : 0;
	if (v->rc)
		return v->rc;
	if (read_errno) {
		cjc_buf_addf(v->why, "cannot read %s: %s", a->name, strerror(read_errno));
		return -1;
	}
	if (packed &&
	    check_bytes(a->name, "stored ", total, a->stored_size, &h, a->stored_sha256, v->why))
		return -1;
	if (inflated && v->total <= a->size) {
		cjc_buf_addf(v->why, "%s is damaged: %s", a->name, z.why);
		return -1;
	}
	return 0; /* the artifact's own bytes: checked by the caller */
}

/*
 * Streams an artifact through the hash into out_fd and/or data, then checks
 * it: 0, -1 (damaged) or -2 (the output could not be written).  The bytes
 * served are the bytes hashed: verifying first and copying after in the
 * kernel (copy_file_range, a reflink) was tried, was no faster on ext4, and
 * served what the file held after the check.  An artifact stored
 * compressed is checked twice: the file's bytes against the stored size
 * and hash, what they inflate to against the artifact's; inflating stops
 * one byte past the artifact's size.  stored, when given, gets the file's
 * bytes as they are (what a remote store is sent).
 */
static int stream_artifact(const struct cjc_entry *e, const char *name, int out_fd,
			   struct cjc_buf *data, struct cjc_buf *stored, struct cjc_buf *why)
{
	const struct cjc_artifact *a = cjc_entry_artifact(e, name);
	if (!a) {
		cjc_buf_addf(why, "%s is not listed in metadata.json", name);
		return -1;
	}
	int fd = cjc_open_regular(e->dfd, name, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0) {
		cjc_buf_addf(why, "cannot open %s: %s", name, cjc_untrusted_error(errno));
		return -1;
	}
	struct serving v = { .a = a, .out_fd = out_fd, .data = data, .why = why };
	cjc_hash_init(&v.h);
	int rc = read_stored(fd, &v, stored);
	close(fd);
	return rc ? rc : check_bytes(name, "", v.total, a->size, &v.h, a->sha256, why);
}

int cjc_entry_copy(const struct cjc_entry *e, const char *name, int out_fd, struct cjc_buf *why)
{
	return stream_artifact(e, name, out_fd, NULL, NULL, why);
}

int cjc_entry_read(const struct cjc_entry *e, const char *name, struct cjc_buf *data,
		   struct cjc_buf *why)
{
	return stream_artifact(e, name, -1, data, NULL, why);
}

int cjc_entry_read_stored(const struct cjc_entry *e, const char *name, struct cjc_buf *stored,
			  struct cjc_buf *why)
{
	return stream_artifact(e, name, -1, NULL, stored, why);
}

int cjc_entry_verify(const struct cjc_entry *e, struct cjc_buf *why)
{
	for (size_t i = 0; i < e->nfiles; i++)
		if (stream_artifact(e, e->files[i].name, -1, NULL, NULL, why))
			return -1;
	return 0;
}

void cjc_entry_release(struct cjc_entry *e)
{
	if (e->dir)
		close(e->dfd);
	free(e->dir);
	if (e->meta)
		json_decref(e->meta);
	cjc_artifacts_free(e->files, e->nfiles);
	memset(e, 0, sizeof *e);
}

/* Whether the directory open at fd is this user's own (EPERM if not). */
static int own_dir(int fd)
{
	struct stat st;
	if (fstat(fd, &st))
		return -1;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/*
 * Makes the writer's directory in staging/ and opens it without following a
 * link; from then on everything goes through that fd.  A member who renames
 * it away and plants a link or a directory of their own in its place gets
 * ELOOP or EPERM here (the compile goes on, unpublished), or, later, has
 * moved a directory that only this writer writes into.
 */
int cjc_staging_begin(const struct cjc_store *s, struct cjc_staging *st)
{
	memset(st, 0, sizeof *st);
	st->dfd = -1;
	int parent = cjc_store_openat(s, "staging", O_PATH | O_DIRECTORY, 0);
	if (parent < 0)
		return -1;
	st->parent = parent;
	st->name = cjc_unique_name("s");
	char *sub = cjc_path_join("staging", st->name);
	st->dir = cjc_store_path(s, sub);
	free(sub);
	cjc_tempfile_add_at(parent, st->name);
	if (mkdirat(parent, st->name, 0777) ||
	    (st->dfd = openat(parent, st->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    own_dir(st->dfd)) {
		int e = errno == ENOTDIR ? open_errno(parent, st->name) : errno;
		cjc_staging_abort(st);
		errno = e;
		return -1;
	}
	take_root_mode(s, st->dfd); /* the entry's: a group's members may evict it */
	st->compression_level = s->compression_level;
	return 0;
}

int cjc_staging_begin_as(const struct cjc_store *s, struct cjc_staging *st, bool transient)
{
	int rc = cjc_staging_begin(s, st);
	st->transient = transient;
	if (!rc && transient && fchmod(st->dfd, 0700)) {
		int e = errno;
		cjc_staging_abort(st);
		errno = e;
		rc = -1;
	}
	return rc;
}

/* Writes a new file of the staging and starts writing it back to disk;
 * sync_staged() waits for all of them before the rename, when their
 * write-backs are under way together. */
static int write_staged(const struct cjc_staging *st, const char *name, const void *p, size_t n)
{
	return cjc_write_new_file_at(st->dfd, name, p, n, 0444, !st->transient);
}

/* fsyncs every file written into the staging, then the directory. */
static int sync_staged(const struct cjc_staging *st, bool signed_)
{
	int rc = 0;
	for (size_t i = 0; i < st->nfiles && !rc; i++)
		rc = cjc_fsync_at(st->dfd, st->files[i].name);
	if (!rc && signed_)
		rc = cjc_fsync_at(st->dfd, CJC_SIGN_FILE);
	if (!rc)
		rc = cjc_fsync_at(st->dfd, "metadata.json");
	return rc ? rc : fsync(st->dfd);
}

/* Writes the artifact a (named, sized and hashed) from p[0..n): compressed
 * at the staging's level when that is smaller, recorded in a as stored. */
static int write_artifact(const struct cjc_staging *st, struct cjc_artifact *a, const void *p,
			  size_t n)
{
	struct cjc_buf packed = CJC_BUF_INIT;
	int rc;
	if (st->compression_level > 0 && !cjc_compress(p, n, st->compression_level, &packed) &&
	    packed.len < n) {
		a->stored_size = packed.len;
		cjc_hash_buf_hex(packed.data, packed.len, a->stored_sha256);
		rc = write_staged(st, a->name, packed.data, packed.len);
	} else {
		a->stored_size = 0;
		rc = write_staged(st, a->name, p, n);
	}
	cjc_buf_release(&packed);
	return rc;
}

/* The next artifact of the staging, zeroed (listed once it is written);
 * NULL with EINVAL when there is no room or name is not an artifact's. */
static struct cjc_artifact *new_artifact(struct cjc_staging *st, const char *name)
{
	if (st->nfiles == sizeof st->files / sizeof *st->files || !cjc_artifact_name_ok(name)) {
		errno = EINVAL;
		return NULL;
	}
	struct cjc_artifact *a = &st->files[st->nfiles];
	memset(a, 0, sizeof *a);
	return a;
}

static int add_artifact(struct cjc_staging *st, const char *name, int src_fd, const void *p,
			size_t n)
{
	struct cjc_artifact *a = new_artifact(st, name);
	if (!a)
		return -1;
	struct cjc_buf copy = CJC_BUF_INIT;
	int rc = 0;
	if (src_fd >= 0) {
		rc = cjc_read_fd(src_fd, &copy);
		p = copy.data;
		n = copy.len;
	}
	if (!rc && n == 0)
		rc = -1, errno = ENODATA; /* an empty artifact is never published */
	a->name = (char *)name;
	if (!rc)
		rc = write_artifact(st, a, p, n);
	int e = errno;
	a->name = NULL;
	if (!rc) {
		st->nfiles++;
		a->name = cjc_xstrdup(name);
		a->size = n;
		cjc_hash_buf_hex(p, n, a->sha256);
	}
	cjc_buf_release(&copy);
	errno = e;
	return rc;
}

int cjc_staging_add_stored(struct cjc_staging *st, const struct cjc_artifact *rec, const void *p,
			   size_t n)
{
	struct cjc_artifact *a = new_artifact(st, rec->name);
	if (!a)
		return -1;
	if (n == 0 || n != cjc_artifact_stored_size(rec)) {
		errno = EINVAL;
		return -1;
	}
	if (write_staged(st, rec->name, p, n))
		return -1;
	*a = *rec;
	a->name = cjc_xstrdup(rec->name);
	st->nfiles++;
	return 0;
}

int cjc_staging_add_file(struct cjc_staging *st, const char *name, const char *src)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = add_artifact(st, name, fd, NULL, 0);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int cjc_staging_add_data(struct cjc_staging *st, const char *name, const void *p, size_t n)
{
	return add_artifact(st, name, -1, p, n);
}

/* Whether the writer's directory is still at its name in staging/ (ESTALE
 * when someone renamed it away): what the rename would publish. */
static int still_there(const struct cjc_staging *st)
{
	struct stat at, ours;
	if (fstatat(st->parent, st->name, &at, AT_SYMLINK_NOFOLLOW) || fstat(st->dfd, &ours))
		return -1;
	if (at.st_dev != ours.st_dev || at.st_ino != ours.st_ino) {
		errno = ESTALE;
		return -1;
	}
	return 0;
}

/* fsyncs the directory open (O_PATH) at fd; failures are ignored. */
static void sync_dir(int fd)
{
	int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0) {
		(void)fsync(rfd);
		close(rfd);
	}
}

int cjc_staging_finish(struct cjc_staging *st, const struct cjc_buf *metadata,
		       const struct cjc_buf *signature)
{
	int rc = signature && signature->len
			 ? write_staged(st, CJC_SIGN_FILE, signature->data, signature->len) : 0;
	if (rc)
		return rc;
	/* compressed where that is smaller, with zstd's checksum of the
	 * document: nothing else records what the file holds */
	struct cjc_buf packed = CJC_BUF_INIT;
	bool pack = st->compression_level > 0 &&
		    !cjc_compress_summed(metadata->data, metadata->len, st->compression_level,
					 &packed) &&
		    packed.len < metadata->len;
	rc = pack ? write_staged(st, "metadata.json", packed.data, packed.len)
		  : write_staged(st, "metadata.json", metadata->data, metadata->len);
	st->metadata_size = pack ? packed.len : metadata->len;
	cjc_buf_release(&packed);
	return rc;
}

int cjc_staging_seal(struct cjc_staging *st, const struct cjc_buf *metadata,
		     const struct cjc_buf *signature)
{
	int rc = cjc_staging_finish(st, metadata, signature);
	if (!rc)
		rc = sync_staged(st, signature && signature->len);
	st->sealed = !rc;
	return rc;
}

enum cjc_lookup cjc_staging_open_entry(const struct cjc_staging *st, const char *key,
				       struct cjc_entry *e, struct cjc_buf *why)
{
	int dfd = fcntl(st->dfd, F_DUPFD_CLOEXEC, 0);
	return open_entry(dfd, st->dir, key, e, MEMO_BY_HASH, why);
}

int cjc_staging_publish(const struct cjc_store *s, struct cjc_staging *st, const char *key,
			const struct cjc_buf *metadata, const struct cjc_buf *signature, bool *won)
{
	*won = false;
	int rc = st->sealed ? 0 : cjc_staging_seal(st, metadata, signature);
	char *name = cjc_store_entry_name(key);
	char *shard_name = cjc_dirname(name);
	int shard = rc ? -1 : walk(s, shard_name, true, O_PATH | O_DIRECTORY, 0);
	if (!rc && (shard < 0 || still_there(st)))
		rc = -1;
	if (!rc) {
		if (!renameat(st->parent, st->name, shard, key)) {
			*won = true;
			cjc_tempfile_forget_at(st->parent, st->name);
			if (!st->copy) /* a copy lost to a crash is fetched again */
				sync_dir(shard);
			if (st->published)
				st->published(s, st, key);
		} else if (errno != EEXIST && errno != ENOTEMPTY) {
			rc = -1;
		}
	}
	int e = errno;
	if (shard >= 0)
		close(shard);
	free(name);
	free(shard_name);
	cjc_staging_abort(st);
	errno = e;
	return rc;
}

void cjc_staging_abort(struct cjc_staging *st)
{
	if (st->dir) {
		cjc_tempfile_remove_at(st->parent, st->name);
		if (st->dfd >= 0)
			close(st->dfd);
		close(st->parent);
	}
	free(st->dir);
	free(st->name);
	st->dir = st->name = NULL;
	st->dfd = st->parent = -1;
	st->sealed = false;
	for (size_t i = 0; i < st->nfiles; i++)
		free(st->files[i].name);
	st->nfiles = 0;
}

static bool is_key_name(const char *name, size_t len)
{
	size_t n = strlen(name);
	return n == len && strspn(name, "0123456789abcdef") == n;
}

static int match_key(const char *key, const char *dir, void *ctx)
{
	struct cjc_key_match *m = ctx;
	if (cjc_starts_with(key, m->prefix) && !m->matches++) {
		snprintf(m->key, sizeof m->key, "%s", key);
		m->dir = cjc_xstrdup(dir);
	}
	return 0;
}

int cjc_store_find_key(const struct cjc_store *s, const char *prefix, struct cjc_key_match *m)
{
	memset(m, 0, sizeof *m);
	m->prefix = prefix;
	char shard[3] = { 0 };
	strncpy(shard, prefix, 2); /* only the shards the prefix can be in */
	return cjc_store_foreach_entry_in(s, shard, match_key, m);
}

int cjc_store_foreach_entry(const struct cjc_store *s,
			    int (*fn)(const char *key, const char *dir, void *ctx), void *ctx)
{
	return cjc_store_foreach_entry_in(s, "", fn, ctx);
}

/* Each <top>/<kk>/<key> whose key starts with prefix. */
static int foreach_keyed(const struct cjc_store *s, const char *top_name, const char *prefix,
			 int (*fn)(const char *key, const char *dir, void *ctx), void *ctx)
{
	int top_fd = cjc_store_openat(s, top_name, O_RDONLY | O_DIRECTORY, 0);
	DIR *top = top_fd < 0 ? NULL : fdopendir(top_fd);
	if (!top) {
		int e = errno;
		if (top_fd >= 0)
			close(top_fd);
		errno = e;
		return e == ENOENT ? 0 : -1;
	}
	char *root = cjc_store_path(s, top_name); /* for the paths fn is given */
	int rc = 0;
	struct dirent *de;
	while (!rc && (de = readdir(top))) {
		if (!is_key_name(de->d_name, 2) || !cjc_starts_with(de->d_name, prefix))
			continue;
		char *sub = cjc_path_join(root, de->d_name);
		int fd = openat(dirfd(top), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d = fd < 0 ? NULL : fdopendir(fd);
		if (!d && fd >= 0)
			close(fd);
		struct dirent *ke;
		while (d && !rc && (ke = readdir(d))) {
			if (!is_key_name(ke->d_name, CJC_HEX_LEN) || strncmp(ke->d_name, de->d_name, 2))
				continue;
			char *dir = cjc_path_join(sub, ke->d_name);
			rc = fn(ke->d_name, dir, ctx);
			free(dir);
		}
		if (d)
			closedir(d);
		free(sub);
	}
	closedir(top);
	free(root);
	return rc;
}

int cjc_store_foreach_entry_in(const struct cjc_store *s, const char *prefix,
			       int (*fn)(const char *key, const char *dir, void *ctx), void *ctx)
{
	return foreach_keyed(s, "entries", prefix, fn, ctx);
}

int cjc_store_foreach_manifest(const struct cjc_store *s,
			       int (*fn)(const char *direct_key, const char *path, void *ctx), void *ctx)
{
	return foreach_keyed(s, "manifests", "", fn, ctx);
}
