/*
 * Whether the files a manifest record names are unchanged, for a process
 * that lives long: the tool's filehash.h remembers a hash for the life of
 * its (short) process, which here could outlive a header's change.  So each
 * handle remembers, per path, the SHA-256 and the stamp the file had when
 * it was read, and every lookup stats the file: the hash is reused only
 * while the stamp holds (stamp.h, git's racy-clean rule).  Candidates that
 * must stay absent are looked up in a listing of their directory, kept
 * while the directory's own stamp holds (a name added or removed changes
 * its mtime), so a lookup stats each directory once instead of every
 * candidate (hundreds for a kernel that includes CUB).  A name in the
 * listing counts as present, even a dangling link: at worst a miss.  The
 * lock guards the tables alone; files are read, listed and stat'ed outside
 * it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/stamp.h"
#include "jit_internal.h"
#include "keys/key.h"
#include "keys/metamemo.h"
#include "keys/rules.h"
#include "store/records.h"

#define BUCKETS 1024
#define MAX_PATHS 65536 /* past this, files are hashed each time */
#define MAX_DIRS 4096   /* past this, candidates are stat'ed each time */

struct dep_memo {
	struct dep_memo *next;
	char *path;
	struct cjc_stamp st;
	int64_t taken_ns;
	uint64_t size;
	unsigned char sha[CJC_DIGEST_LEN];
};

static unsigned bucket_of(const char *path)
{
	return cjc_table_hash(path, strlen(path)) % BUCKETS;
}

/* A remembered hash that the file's stamp now still vouches for. */
static bool remembered(struct cjc_jit *h, const char *path, const struct cjc_stamp *now,
		       uint64_t *size, unsigned char sha[CJC_DIGEST_LEN])
{
	bool found = false;
	jit_lock(h);
	struct dep_memo *m = h->deps.buckets ? h->deps.buckets[bucket_of(path)] : NULL;
	for (; m && strcmp(m->path, path); m = m->next)
		;
	if (m && cjc_stamp_holds(&m->st, now, m->taken_ns)) {
		*size = m->size;
		memcpy(sha, m->sha, CJC_DIGEST_LEN);
		found = true;
	}
	jit_unlock(h);
	return found;
}

static void remember(struct cjc_jit *h, const char *path, const struct cjc_stamp *st,
		     int64_t taken_ns, uint64_t size, const unsigned char sha[CJC_DIGEST_LEN])
{
	jit_lock(h);
	if (!h->deps.buckets)
		h->deps.buckets = cjc_xcalloc(BUCKETS, sizeof *h->deps.buckets);
	unsigned b = bucket_of(path);
	struct dep_memo *m = h->deps.buckets[b];
	for (; m && strcmp(m->path, path); m = m->next)
		;
	if (!m && h->deps.n < MAX_PATHS) {
		m = cjc_xcalloc(1, sizeof *m);
		m->path = cjc_xstrdup(path);
		m->next = h->deps.buckets[b];
		h->deps.buckets[b] = m;
		h->deps.n++;
	}
	if (m) {
		m->st = *st;
		m->taken_ns = taken_ns;
		m->size = size;
		memcpy(m->sha, sha, CJC_DIGEST_LEN);
		h->deps.dirty = true;
	}
	jit_unlock(h);
}

#define MEMO_NAME "hashes/jit"
/* The metadata documents the handle's hits checked (keys/metamemo.h): a new
 * process's first hit then recognises its entry's by the file's stamp
 * instead of parsing it (a few hundred microseconds for a kernel that
 * includes the CUDA runtime's headers). */
#define META_MEMO_NAME "hashes/jit.meta"
#define MEMO_VERSION 1
static const char memo_magic[4] = { 'C', 'J', 'C', 'J' };

/* One record: str path, stamp, u64 taken_ns, u64 size, 32 bytes SHA-256. */
static bool decode_memo(struct cjc_jit *h, struct cjc_cursor *c)
{
	char *path = cjc_cursor_str(c, PATH_MAX);
	struct cjc_stamp st;
	cjc_stamp_decode(c, &st);
	int64_t taken = (int64_t)cjc_cursor_u64(c);
	uint64_t size = cjc_cursor_u64(c);
	const void *sha = cjc_cursor_bytes(c, CJC_DIGEST_LEN);
	bool ok = !c->bad && path && *path == '/' && sha;
	if (ok)
		remember(h, path, &st, taken, size, sha);
	free(path);
	return ok;
}

void jit_deps_load(struct cjc_jit *h)
{
	jit_lock(h);
	bool load = !h->deps.loaded && jit_store_ready(h);
	h->deps.loaded = true;
	jit_unlock(h);
	struct cjc_buf payload = CJC_BUF_INIT;
	struct cjc_cursor c;
	uint32_t count;
	if (!load || cjc_blob_read_records(&h->store, MEMO_NAME, memo_magic, MEMO_VERSION, &payload, &c,
					   &count))
		return;
	for (uint32_t i = 0; i < count && decode_memo(h, &c); i++)
		;
	jit_lock(h);
	h->deps.dirty = false;
	jit_unlock(h);
	cjc_buf_release(&payload);
}

void jit_deps_load_meta(struct cjc_jit *h)
{
	jit_lock(h);
	bool load = !h->deps.meta_loaded && jit_store_ready(h);
	h->deps.meta_loaded = true;
	jit_unlock(h);
	if (load)
		(void)cjc_metamemo_load(&h->store, META_MEMO_NAME);
}

void jit_deps_save(struct cjc_jit *h)
{
	if (jit_store_open(h) && !h->cfg.readonly && cjc_metamemo_save(&h->store, META_MEMO_NAME))
		jit_note(h, "cannot write %s: %s", META_MEMO_NAME, cjc_untrusted_error(errno));
	struct cjc_buf records = CJC_BUF_INIT;
	uint32_t count = 0;
	jit_lock(h);
	bool save = h->deps.dirty && jit_store_open(h) && !h->cfg.readonly;
	for (size_t b = 0; save && h->deps.buckets && b < BUCKETS; b++)
		for (struct dep_memo *m = h->deps.buckets[b]; m; m = m->next, count++) {
			cjc_buf_add_str(&records, m->path);
			cjc_stamp_encode(&records, &m->st);
			cjc_buf_add_u64(&records, (uint64_t)m->taken_ns);
			cjc_buf_add_u64(&records, m->size);
			cjc_buf_add(&records, m->sha, CJC_DIGEST_LEN);
		}
	h->deps.dirty = false;
	jit_unlock(h);
	if (save && cjc_blob_write_records(&h->store, MEMO_NAME, memo_magic, MEMO_VERSION, count,
					   &records))
		jit_note(h, "cannot write %s: %s", MEMO_NAME, cjc_untrusted_error(errno));
	cjc_buf_release(&records);
}

/* jit_deps_hash() of path, reached as name from dirfd. */
static int hash_at(struct cjc_jit *h, int dirfd, const char *name, const char *path,
		   uint64_t expect, uint64_t *size, unsigned char sha[CJC_DIGEST_LEN],
		   struct cjc_stamp *stamp)
{
	struct stat s;
	struct cjc_stamp own, *now = stamp ? stamp : &own; /* the stamp it had, for the caller */
	if (fstatat(dirfd, name, &s, 0) || (expect != JIT_ANY_SIZE && (uint64_t)s.st_size != expect))
		return -1;
	cjc_stamp_of(&s, now);
	bool memo = path[0] == '/'; /* a relative path names another file in another directory */
	if (memo && remembered(h, path, now, size, sha))
		return 0;
	int64_t taken = cjc_wall_ns();
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	int rc = fstat(fd, &s) || !S_ISREG(s.st_mode) ? -1 : cjc_hash_fd(fd, sha, size);
	int e = S_ISREG(s.st_mode) ? errno : EINVAL;
	close(fd);
	if (rc) {
		errno = e;
		return -1;
	}
	cjc_stamp_of(&s, now);
	if (memo && now->size == *size)
		remember(h, path, now, taken, *size, sha);
	return 0;
}

int jit_deps_hash(struct cjc_jit *h, const char *path, uint64_t expect, uint64_t *size,
		  unsigned char sha[CJC_DIGEST_LEN])
{
	jit_deps_load(h);
	return hash_at(h, AT_FDCWD, path, path, expect, size, sha, NULL);
}

struct dir_memo {
	struct dir_memo *next;
	char *path;
	struct cjc_stamp st; /* the directory's, when it was listed */
	int64_t taken_ns;
	struct cjc_strvec names; /* sorted */
};

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The listing of dir that its stamp now still vouches for: whether name is
 * in it (1), not (0), or no such listing (-1). */
static int listed(struct cjc_jit *h, const char *dir, const struct cjc_stamp *now, const char *name)
{
	int found = -1;
	jit_lock(h);
	struct dir_memo *m = h->deps.dirs ? h->deps.dirs[bucket_of(dir)] : NULL;
	for (; m && strcmp(m->path, dir); m = m->next)
		;
	if (m && cjc_stamp_holds(&m->st, now, m->taken_ns))
		found = bsearch(&name, m->names.v, m->names.n, sizeof *m->names.v, by_name) != NULL;
	jit_unlock(h);
	return found;
}

static void remember_dir(struct cjc_jit *h, const char *dir, const struct cjc_stamp *st,
			 int64_t taken_ns, struct cjc_strvec *names)
{
	jit_lock(h);
	if (!h->deps.dirs)
		h->deps.dirs = cjc_xcalloc(BUCKETS, sizeof *h->deps.dirs);
	unsigned b = bucket_of(dir);
	struct dir_memo *m = h->deps.dirs[b];
	for (; m && strcmp(m->path, dir); m = m->next)
		;
	if (!m && h->deps.ndirs < MAX_DIRS) {
		m = cjc_xcalloc(1, sizeof *m);
		m->path = cjc_xstrdup(dir);
		m->next = h->deps.dirs[b];
		h->deps.dirs[b] = m;
		h->deps.ndirs++;
	}
	if (m) {
		cjc_strvec_clear(&m->names);
		m->names = *names;
		*names = (struct cjc_strvec)CJC_STRVEC_INIT;
		m->st = *st;
		m->taken_ns = taken_ns;
	}
	jit_unlock(h);
}

/* Lists dir (stamped st just before) and says whether name is in it. */
static bool list_dir(struct cjc_jit *h, const char *dir, const struct cjc_stamp *st, const char *name)
{
	int64_t taken = cjc_wall_ns();
	DIR *d = opendir(dir);
	if (!d)
		return true; /* cannot tell: present */
	struct cjc_strvec names = CJC_STRVEC_INIT;
	struct dirent *de;
	bool found = false;
	while ((de = readdir(d))) {
		cjc_strvec_push(&names, de->d_name);
		found = found || !strcmp(de->d_name, name);
	}
	closedir(d);
	qsort(names.v, names.n, sizeof *names.v, by_name);
	remember_dir(h, dir, st, taken, &names);
	cjc_strvec_clear(&names);
	return found;
}

/* The directories one check goes through, each opened once (O_PATH): a
 * record's file is stat'ed by its last name from its directory's fd, one
 * lookup instead of one per component of its path (the toolkit's headers
 * are reached through a link and ".."), and a candidate's directory is
 * stamped for its listing.  A candidate's directory is met again and
 * again: /a/x.h, /a/b/y.h, /a/z.h, so they are found by a hash of their
 * path.  Past SEEN_DIRS, one more slot is opened afresh each time. */
#define SEEN_DIRS 256
#define SEEN_SLOTS (2 * SEEN_DIRS)

struct seen_dir {
	char *path;
	size_t len;
	int fd;
	int state; /* 0: a directory (stamp in st, open as fd); 1: nothing there; -1: other */
	struct cjc_stamp st;
};

struct seen_dirs {
	struct seen_dir d[SEEN_DIRS + 1];
	unsigned short slot[SEEN_SLOTS]; /* 1 + the index in d, by hash; 0: free */
	size_t n;
	bool overflow; /* d[SEEN_DIRS] was used */
};

/* Only the table is cleared: a slot of d is filled as it is taken. */
static void seen_init(struct seen_dirs *s)
{
	memset(s->slot, 0, sizeof s->slot);
	s->n = 0;
	s->overflow = false;
	s->d[SEEN_DIRS].path = NULL;
}

static void seen_release(struct seen_dirs *s)
{
	for (size_t i = 0; i <= SEEN_DIRS; i++) {
		if (i >= s->n && !(i == SEEN_DIRS && s->d[i].path))
			continue;
		if (s->d[i].fd >= 0)
			close(s->d[i].fd);
		free(s->d[i].path);
	}
}

/* Opens l's directory: from its parent's fd when the parent was seen (one
 * lookup instead of one per component), else by its whole path. */
static void open_dir(struct seen_dir *l, const struct seen_dir *parent)
{
	struct stat st;
	if (parent && parent->state > 0) {
		l->fd = -1, l->state = 1; /* below nothing: nothing */
		return;
	}
	l->fd = parent && !parent->state ? openat(parent->fd, l->path + parent->len + 1,
						  O_PATH | O_DIRECTORY | O_CLOEXEC)
					 : open(l->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (l->fd < 0)
		l->state = errno == ENOENT || errno == ENOTDIR ? 1 : -1;
	else if (fstat(l->fd, &st))
		l->state = -1;
	else
		l->state = 0, cjc_stamp_of(&st, &l->st);
}

/* The seen directory at dir, or NULL; at: where its slot is or would be. */
static struct seen_dir *seen_at(struct seen_dirs *s, const char *dir, size_t len, size_t *at)
{
	*at = cjc_table_hash(dir, len) % SEEN_SLOTS;
	for (; s->slot[*at]; *at = (*at + 1) % SEEN_SLOTS) {
		struct seen_dir *l = &s->d[s->slot[*at] - 1];
		if (l->len == len && !memcmp(l->path, dir, len))
			return l;
	}
	return NULL;
}

static const struct seen_dir *look_at_dir(struct seen_dirs *s, const char *dir, size_t len)
{
	size_t at, parent_at;
	struct seen_dir *l = seen_at(s, dir, len, &at);
	if (l)
		return l;
	const char *slash = memrchr(dir, '/', len);
	const struct seen_dir *parent = slash && slash > dir ?
		seen_at(s, dir, (size_t)(slash - dir), &parent_at) : NULL;
	l = &s->d[s->n < SEEN_DIRS ? s->n : SEEN_DIRS];
	if (s->n < SEEN_DIRS) {
		s->slot[at] = (unsigned short)++s->n;
	} else {
		s->overflow = true;
		if (l->path && l->fd >= 0)
			close(l->fd);
		free(l->path);
	}
	l->path = cjc_xstrndup(dir, len);
	l->len = len;
	open_dir(l, parent);
	return l;
}

/*
 * A record found unchanged is noted in the store, in a memo of its own
 * (records.h) named by its entry key: the stamp each of its files had and
 * the stamp of each directory its candidates were looked for in, with the
 * moment the check began.  A new process's first request then stats those
 * files and directories and compares, instead of reading the hashes of
 * every file the handle's store knows and listing each candidate's
 * directory.  The rule is the memo's (stamp.h): a stamp that holds and had
 * settled before the check began proves what the check saw, and a
 * directory's proves that no name came or went in it.  A note is written
 * only when all it holds has settled and every path is absolute; the entry
 * key, which covers the record's paths, hashes and candidates, names it.
 */
#define NOTE_VERSION 1
static const char note_magic[4] = { 'C', 'J', 'C', 'K' };

struct note {
	int64_t taken_ns;
	struct cjc_stamp *files; /* a record's files', in order; the source's all zero */
	bool dirs[SEEN_DIRS + 1]; /* the seen_dirs the candidates were looked for in */
	bool usable;
};

static char *note_name(const char *entry_key)
{
	return cjc_xasprintf("hashes/%.2s/%s.jit", entry_key, entry_key);
}

/* The seen directory of an absolute path's last name (set in *name), or
 * NULL for a path that is not /DIR/NAME. */
static const struct seen_dir *dir_of(struct seen_dirs *seen, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	if (!slash || !slash[1] || slash == path || path[0] != '/')
		return NULL;
	*name = slash + 1;
	return look_at_dir(seen, path, (size_t)(slash - path));
}

/* jit_deps_hash() of a record's file, through its directory's fd. */
static int dep_hash(struct cjc_jit *h, const struct cjc_dep *d, struct seen_dirs *seen,
		    uint64_t *size, unsigned char sha[CJC_DIGEST_LEN], struct note *note, size_t i)
{
	const char *name = NULL;
	const struct seen_dir *l = dir_of(seen, d->path, &name);
	if (!l || l->state)
		note->usable = false; /* file_holds could not stat it the same way */
	if (l && l->state > 0)
		return -1;
	return l && !l->state ? hash_at(h, l->fd, name, d->path, d->size, size, sha, &note->files[i])
			      : hash_at(h, AT_FDCWD, d->path, d->path, d->size, size, sha, &note->files[i]);
}

/* Whether nothing is at path now, as stat(2) would say (ENOENT, ENOTDIR),
 * through the listing of its directory. */
static bool absent(struct cjc_jit *h, const char *path, struct seen_dirs *seen, struct note *note)
{
	const char *name = NULL;
	const struct seen_dir *l = dir_of(seen, path, &name);
	struct stat s;
	if (!l) {
		note->usable = false;
		return stat(path, &s) && (errno == ENOENT || errno == ENOTDIR);
	}
	note->dirs[l - seen->d] = true;
	if (l->state)
		return l->state > 0;
	int in = listed(h, l->path, &l->st, name);
	return in < 0 ? !list_dir(h, l->path, &l->st, name) : !in;
}

/* Whether path is where the request's source is keyed: either of its two
 * paths (nvcc.c: the one of any name, and its own). */
static bool is_source(const char *path, const char *source, const char *named)
{
	return (source && !strcmp(path, source)) || (named && !strcmp(path, named));
}

struct check {
	const char *source, *named;
	const unsigned char *source_sha;
};

/* Every file as recorded (the source compared with the bytes in hand),
 * every candidate still absent. */
static bool files_unchanged(struct cjc_jit *h, const struct cjc_manifest_record *r,
			    const struct check *k, struct seen_dirs *seen, struct note *note)
{
	for (size_t i = 0; i < r->ndeps; i++) {
		const struct cjc_dep *d = &r->deps[i];
		uint64_t size;
		unsigned char sha[CJC_DIGEST_LEN];
		if (is_source(d->path, k->source, k->named)) {
			if (memcmp(d->sha, k->source_sha, CJC_DIGEST_LEN))
				return false;
		} else if (dep_hash(h, d, seen, &size, sha, note, i) || size != d->size ||
			   memcmp(sha, d->sha, CJC_DIGEST_LEN)) {
			return false;
		}
	}
	return true;
}

/* A note's stamps of the files, then of the directories; false when one has
 * not settled (the note would prove nothing). */
static bool note_encode(const struct cjc_manifest_record *r, const struct seen_dirs *seen,
			const struct note *note, struct cjc_buf *b)
{
	bool ok = true;
	uint32_t ndirs = 0;
	cjc_buf_add_u64(b, (uint64_t)note->taken_ns);
	cjc_buf_add_u32(b, (uint32_t)r->ndeps);
	for (size_t i = 0; i < r->ndeps; i++) {
		ok = ok && (!note->files[i].ino || cjc_stamp_settled(&note->files[i], note->taken_ns));
		cjc_stamp_encode(b, &note->files[i]);
	}
	for (size_t i = 0; i < seen->n; i++)
		ndirs += note->dirs[i];
	cjc_buf_add_u32(b, ndirs);
	for (size_t i = 0; i < seen->n; i++) {
		const struct seen_dir *l = &seen->d[i];
		if (!note->dirs[i])
			continue;
		ok = ok && l->state >= 0 && (l->state || cjc_stamp_settled(&l->st, note->taken_ns));
		cjc_buf_add_str(b, l->path);
		cjc_buf_add_u32(b, (uint32_t)l->state);
		cjc_stamp_encode(b, &l->st);
	}
	return ok;
}

/* Writes the note of a record just found unchanged, when it can prove
 * something later. */
static void note_write(struct cjc_jit *h, const char *entry_key,
		       const struct cjc_manifest_record *r, const struct seen_dirs *seen,
		       const struct note *note)
{
	struct cjc_buf b = CJC_BUF_INIT;
	char *sub = note_name(entry_key);
	if (note->usable && !seen->overflow && !note->dirs[SEEN_DIRS] && jit_store_open(h) &&
	    !h->cfg.readonly && note_encode(r, seen, note, &b) &&
	    cjc_blob_write_records(&h->store, sub, note_magic, NOTE_VERSION, 1, &b))
		jit_note(h, "cannot write %s: %s", sub, cjc_untrusted_error(errno));
	free(sub);
	cjc_buf_release(&b);
}

static bool unchanged(struct cjc_jit *h, const struct cjc_manifest_record *r,
		      const char *entry_key, const struct check *k)
{
	jit_deps_load(h);
	struct seen_dirs seen;
	seen_init(&seen);
	struct note note = { .taken_ns = cjc_wall_ns(), .usable = true,
			     .files = cjc_xcalloc(r->ndeps + 1, sizeof *note.files) };
	bool none = files_unchanged(h, r, k, &seen, &note);
	for (size_t i = 0; i < r->absent.n && none; i++)
		none = absent(h, r->absent.v[i], &seen, &note);
	if (none)
		note_write(h, entry_key, r, &seen, &note);
	seen_release(&seen);
	free(note.files);
	return none;
}

/* Whether a noted file's stamp still holds (the source: its bytes). */
static bool file_holds(const struct cjc_dep *d, const struct check *k, struct seen_dirs *seen,
		       const struct cjc_stamp *then, int64_t taken)
{
	if (is_source(d->path, k->source, k->named))
		return !memcmp(d->sha, k->source_sha, CJC_DIGEST_LEN);
	const char *name = NULL;
	const struct seen_dir *l = dir_of(seen, d->path, &name);
	struct stat s;
	struct cjc_stamp now;
	if (!l || l->state || fstatat(l->fd, name, &s, 0))
		return false;
	cjc_stamp_of(&s, &now);
	return cjc_stamp_holds(then, &now, taken);
}

static bool dirs_hold(struct cjc_cursor *c, struct seen_dirs *seen, int64_t taken)
{
	uint32_t n = cjc_cursor_u32(c);
	if (n > SEEN_DIRS)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		size_t len;
		const char *path = cjc_cursor_chars(c, PATH_MAX, &len);
		uint32_t state = cjc_cursor_u32(c);
		struct cjc_stamp then;
		cjc_stamp_decode(c, &then);
		if (c->bad || !len || path[0] != '/')
			return false;
		const struct seen_dir *l = look_at_dir(seen, path, len);
		if ((uint32_t)l->state != state || (!state && !cjc_stamp_holds(&then, &l->st, taken)))
			return false;
	}
	return !c->bad;
}

/* Whether the record's note (above) still proves it unchanged. */
static bool noted_unchanged(struct cjc_jit *h, const struct cjc_manifest_record *r,
			    const char *entry_key, const struct check *k)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	struct cjc_cursor c;
	uint32_t count;
	char *sub = note_name(entry_key);
	int rc = jit_store_ready(h) ? cjc_blob_read_records(&h->store, sub, note_magic, NOTE_VERSION,
							   &payload, &c, &count) : -1;
	free(sub);
	if (rc)
		return false;
	struct seen_dirs seen;
	seen_init(&seen);
	int64_t taken = (int64_t)cjc_cursor_u64(&c);
	bool holds = count == 1 && cjc_cursor_u32(&c) == r->ndeps;
	for (size_t i = 0; holds && i < r->ndeps; i++) {
		struct cjc_stamp then;
		cjc_stamp_decode(&c, &then);
		holds = !c.bad && file_holds(&r->deps[i], k, &seen, &then, taken);
	}
	holds = holds && dirs_hold(&c, &seen, taken);
	seen_release(&seen);
	cjc_buf_release(&payload);
	return holds;
}

long jit_deps_match(struct cjc_jit *h, const struct cjc_manifest *m, const char *direct_key,
		    const struct cjc_place *place, const char *source,
		    const unsigned char source_sha[CJC_DIGEST_LEN])
{
	return jit_deps_match_named(h, m, direct_key, place, source, NULL, source_sha);
}

struct held {
	struct cjc_jit *h;
	const struct check *k;
};

/* Whether r's files are unchanged, by its note or by hashing them; its
 * entry key is the one its files give (cjc_manifest_match_held). */
static bool record_held(void *ctx, const struct cjc_manifest_record *r)
{
	const struct held *d = ctx;
	return noted_unchanged(d->h, r, r->entry_key, d->k) ||
	       unchanged(d->h, r, r->entry_key, d->k);
}

long jit_deps_match_named(struct cjc_jit *h, const struct cjc_manifest *m, const char *direct_key,
			  const struct cjc_place *place, const char *source, const char *named,
			  const unsigned char source_sha[CJC_DIGEST_LEN])
{
	const struct check k = { source, named, source_sha };
	const struct held d = { h, &k };
	return cjc_manifest_match_held(m, direct_key, place, record_held, (void *)&d);
}

void jit_deps_release(struct jit_deps *d)
{
	for (size_t b = 0; d->buckets && b < BUCKETS; b++)
		while (d->buckets[b]) {
			struct dep_memo *m = d->buckets[b];
			d->buckets[b] = m->next;
			free(m->path);
			free(m);
		}
	free(d->buckets);
	for (size_t b = 0; d->dirs && b < BUCKETS; b++)
		while (d->dirs[b]) {
			struct dir_memo *m = d->dirs[b];
			d->dirs[b] = m->next;
			free(m->path);
			cjc_strvec_clear(&m->names);
			free(m);
		}
	free(d->dirs);
	memset(d, 0, sizeof *d);
}

/* Whether a file NVRTC read names a time macro (rules.h; NVRTC ignores
 * SOURCE_DATE_EPOCH), or cannot be read again to tell: why says so. */
static bool names_clock(const char *path, struct cjc_buf *why)
{
	struct cjc_buf text = CJC_BUF_INIT;
	const char *macro = NULL;
	bool unreadable = cjc_read_file(path, &text) != 0;
	if (unreadable)
		cjc_buf_addf(why, "cannot read %s: %s", path, strerror(errno));
	else if ((macro = cjc_rules_time_macro(text.data, text.len, false)))
		cjc_buf_addf(why, "%s in %s (NVRTC ignores SOURCE_DATE_EPOCH)", macro, path);
	cjc_buf_release(&text);
	return unreadable || macro;
}

int jit_deps_record(struct jit_job *j, size_t source_size, struct cjc_watch *w,
		    struct cjc_manifest_record *rec, struct cjc_buf *why)
{
	cjc_watch_settle(w);
	if (w->unkeyable)
		return cjc_buf_adds(why, w->unkeyable), -1;
	rec->deps = cjc_xcalloc(w->found.n + 1, sizeof *rec->deps);
	rec->deps[rec->ndeps++] = (struct cjc_dep){ cjc_xstrdup(j->source), source_size, { 0 } };
	memcpy(rec->deps[0].sha, j->code_sha, CJC_DIGEST_LEN);
	for (size_t i = 0; i < w->found.n; i++) {
		struct cjc_dep *d = &rec->deps[rec->ndeps];
		if (jit_deps_hash(j->h, w->found.v[i], JIT_ANY_SIZE, &d->size, d->sha))
			return cjc_buf_addf(why, "cannot read %s: %s", w->found.v[i],
					    strerror(errno)),
			       -1;
		d->path = cjc_xstrdup(w->found.v[i]);
		rec->ndeps++;
		if (names_clock(d->path, why))
			return -1;
	}
	cjc_strvec_pushv(&rec->absent, w->absent.v, w->absent.n);
	return 0;
}
