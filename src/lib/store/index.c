#include "store/index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "keys/metadata.h"
#include "store/records.h"

static const char magic[4] = { 'C', 'J', 'C', 'Y' };

#define TEXT_MAX 4096   /* a kind, target, created or file name in a row */
#define FILES_MAX 64

/* A row with the stamp of the metadata.json it was made from. */
struct stamped {
	struct cjc_index_row row;
	uint64_t ino, msize;
	int64_t mtime_ns;
	bool used;
};

static void row_release(struct cjc_index_row *r)
{
	free(r->kind);
	json_decref(r->target);
	json_decref(r->created);
	cjc_strvec_clear(&r->files);
	free(r->damaged);
	memset(r, 0, sizeof *r);
}

static void row_from(const char *key, json_t *doc, const struct cjc_artifact *files, size_t n,
		     struct cjc_index_row *r)
{
	json_t *kind = json_object_get(json_object_get(doc, "options"), "kind");
	json_t *target = json_object_get(doc, "target");
	json_t *created = json_object_get(doc, "created");
	memset(r, 0, sizeof *r);
	snprintf(r->key, sizeof r->key, "%s", key);
	r->kind = cjc_xstrdup(json_is_string(kind) ? json_string_value(kind) : "unknown");
	r->target = target ? json_incref(target) : json_null();
	r->created = created ? json_incref(created) : json_null();
	for (size_t i = 0; i < n; i++) {
		r->size += files[i].size;
		r->stored += cjc_artifact_stored_size(&files[i]);
		cjc_strvec_push(&r->files, files[i].name);
	}
}

static void add_json(struct cjc_buf *b, json_t *v)
{
	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	cjc_buf_add_str(b, text ? text : "null");
	free(text);
}

static void encode(const struct stamped *s, struct cjc_buf *out)
{
	struct cjc_buf p = CJC_BUF_INIT, framed = CJC_BUF_INIT;
	cjc_buf_add(&p, s->row.key, CJC_HEX_LEN);
	cjc_buf_add_u64(&p, s->ino);
	cjc_buf_add_u64(&p, (uint64_t)s->mtime_ns);
	cjc_buf_add_u64(&p, s->msize);
	cjc_buf_add_str(&p, s->row.kind);
	add_json(&p, s->row.target);
	add_json(&p, s->row.created);
	cjc_buf_add_u64(&p, s->row.size);
	cjc_buf_add_u64(&p, s->row.stored);
	cjc_buf_add_u32(&p, (uint32_t)s->row.files.n);
	for (size_t i = 0; i < s->row.files.n; i++)
		cjc_buf_add_str(&p, s->row.files.v[i]);
	cjc_blob_encode(&framed, magic, p.data, p.len);
	cjc_buf_add_u32(out, (uint32_t)framed.len);
	cjc_buf_add(out, framed.data, framed.len);
	cjc_buf_release(&p);
	cjc_buf_release(&framed);
}

static json_t *cursor_json(struct cjc_cursor *c)
{
	char *text = cjc_cursor_str(c, TEXT_MAX);
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	free(text);
	if (!v)
		c->bad = true;
	return v;
}

/* One row's payload; -1 when it is not one. */
static int decode(const void *p, size_t n, struct stamped *s)
{
	struct cjc_cursor c;
	memset(s, 0, sizeof *s);
	cjc_cursor_init(&c, p, n);
	const char *key = cjc_cursor_bytes(&c, CJC_HEX_LEN);
	if (key)
		memcpy(s->row.key, key, CJC_HEX_LEN);
	s->ino = cjc_cursor_u64(&c);
	s->mtime_ns = (int64_t)cjc_cursor_u64(&c);
	s->msize = cjc_cursor_u64(&c);
	s->row.kind = cjc_cursor_str(&c, TEXT_MAX);
	s->row.target = c.bad ? NULL : cursor_json(&c);
	s->row.created = c.bad ? NULL : cursor_json(&c);
	s->row.size = cjc_cursor_u64(&c);
	s->row.stored = cjc_cursor_u64(&c);
	uint32_t nfiles = cjc_cursor_u32(&c);
	for (uint32_t i = 0; i < nfiles && i < FILES_MAX && !c.bad; i++) {
		char *name = cjc_cursor_str(&c, TEXT_MAX);
		if (name)
			cjc_strvec_push(&s->row.files, name);
		free(name);
	}
	if (c.bad || c.left || nfiles > FILES_MAX || !key || strspn(s->row.key, "0123456789abcdef") != CJC_HEX_LEN) {
		row_release(&s->row);
		return -1;
	}
	return 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct stamped *)a)->row.key, ((const struct stamped *)b)->row.key);
}

/* The rows of a shard's file, sorted by key; a damaged row ends the file.
 * Only a file of yours or root's that no one else can write (blob.h, memos). */
static struct stamped *read_rows(const struct cjc_store *s, const char *sub, size_t *n)
{
	struct cjc_buf raw = CJC_BUF_INIT;
	struct stamped *rows = NULL;
	*n = 0;
	if (!cjc_read_regular_and_close(cjc_blob_memo_open(s, sub), CJC_STORE_MAX_FILE, &raw)) {
		struct cjc_cursor c;
		cjc_cursor_init(&c, raw.data, raw.len);
		while (c.left) {
			uint32_t len = cjc_cursor_u32(&c);
			const void *framed = cjc_cursor_bytes(&c, len);
			const void *p;
			size_t plen;
			struct stamped row;
			if (!framed || cjc_blob_decode(framed, len, magic, &p, &plen) || decode(p, plen, &row))
				break;
			rows = cjc_xrealloc(rows, (*n + 1) * sizeof *rows);
			rows[(*n)++] = row;
		}
	}
	cjc_buf_release(&raw);
	if (*n)
		qsort(rows, *n, sizeof *rows, by_key);
	return rows;
}

static void rows_free(struct stamped *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		row_release(&rows[i].row);
	free(rows);
}

/* The stamp of an entry's metadata.json, through its shard directory. */
static int metadata_stamp(int shard_fd, const char *key, struct stamped *s)
{
	char sub[CJC_HEX_LEN + 16];
	struct stat st;
	snprintf(sub, sizeof sub, "%s/metadata.json", key);
	if (shard_fd < 0 || fstatat(shard_fd, sub, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
		return -1;
	s->ino = (uint64_t)st.st_ino;
	s->msize = (uint64_t)st.st_size;
	s->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	return 0;
}

static bool same_document(const struct stamped *a, const struct stamped *b)
{
	return a->ino == b->ino && a->msize == b->msize && a->mtime_ns == b->mtime_ns;
}

/* One shard's entries and its index file, as the caller goes through them. */
struct shard {
	const struct cjc_store *s;
	char name[3];
	struct stamped *rows;
	size_t nrows;
	struct cjc_buf fresh; /* the file as it should be */
	bool stale;
};

/* A row's key from a name, cut to the key's length (a name is no longer). */
static void set_key(char dst[CJC_HEX_LEN + 1], const char *key)
{
	size_t n = strnlen(key, CJC_HEX_LEN);
	memcpy(dst, key, n);
	dst[n] = '\0';
}

/* The row for one entry: from the index when it still holds, else read. */
static int one_entry(struct shard *sh, int dfd, const char *key, const char *dir,
		     int (*fn)(const struct cjc_index_row *, const char *, void *), void *ctx)
{
	struct stamped now = { .row = { .kind = NULL } }, probe;
	set_key(probe.row.key, key);
	bool stamped = !metadata_stamp(dfd, key, &now);
	struct stamped *hit = sh->nrows ? bsearch(&probe, sh->rows, sh->nrows, sizeof *sh->rows, by_key) : NULL;
	if (stamped && hit && same_document(hit, &now)) {
		hit->used = true;
		encode(hit, &sh->fresh);
		return fn(&hit->row, dir, ctx);
	}
	sh->stale = true;
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	int rc;
	if (cjc_entry_open_dir(dir, key, &e, &why) == CJC_ENTRY_FOUND) {
		row_from(key, e.meta, e.files, e.nfiles, &now.row);
		if (stamped)
			encode(&now, &sh->fresh);
		cjc_entry_release(&e);
	} else {
		set_key(now.row.key, key);
		now.row.damaged = cjc_xstrdup(why.data ? why.data : "unreadable");
	}
	rc = fn(&now.row, dir, ctx);
	row_release(&now.row);
	cjc_buf_release(&why);
	return rc;
}

/* Whether name in dfd is a directory itself, not a link to one. */
static bool is_dir(int dfd, const char *name)
{
	struct stat st;
	return !fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
}

static int foreach_in_shard(struct shard *sh, int (*fn)(const struct cjc_index_row *, const char *, void *),
			    void *ctx)
{
	char sub[16];
	snprintf(sub, sizeof sub, "entries/%s", sh->name);
	int dfd = cjc_store_openat(sh->s, sub, O_RDONLY | O_DIRECTORY, 0);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	char *root = cjc_store_path(sh->s, sub);
	struct dirent *de;
	int rc = 0;
	while (!rc && (de = readdir(d))) {
		if (strlen(de->d_name) != CJC_HEX_LEN || strncmp(de->d_name, sh->name, 2) ||
		    strspn(de->d_name, "0123456789abcdef") != CJC_HEX_LEN)
			continue;
		char *dir = cjc_path_join(root, de->d_name);
		/* a row only for a real directory: a link planted as an entry is read
		 * (and refused) the slow way, as every read of the store would */
		bool plain = de->d_type == DT_DIR ||
			     (de->d_type == DT_UNKNOWN && is_dir(dirfd(d), de->d_name));
		rc = one_entry(sh, plain ? dirfd(d) : -1, de->d_name, dir, fn, ctx);
		free(dir);
	}
	closedir(d);
	free(root);
	return rc;
}

int cjc_index_foreach(const struct cjc_store *s,
		      int (*fn)(const struct cjc_index_row *row, const char *dir, void *ctx),
		      void *ctx)
{
	bool writable = !access(s->dir, W_OK);
	int rc = 0;
	for (int k = 0; k < 256 && !rc; k++) {
		struct shard sh = { .s = s };
		char sub[16];
		snprintf(sh.name, sizeof sh.name, "%02x", k);
		snprintf(sub, sizeof sub, "index/%s", sh.name);
		sh.rows = read_rows(s, sub, &sh.nrows);
		rc = foreach_in_shard(&sh, fn, ctx);
		for (size_t i = 0; i < sh.nrows; i++)
			sh.stale = sh.stale || !sh.rows[i].used; /* rows of entries gone */
		if (!rc && sh.stale && writable && (sh.fresh.len || sh.nrows))
			(void)cjc_blob_memo_replace(s, sub, sh.fresh.data ? sh.fresh.data : "", sh.fresh.len);
		rows_free(sh.rows, sh.nrows);
		cjc_buf_release(&sh.fresh);
	}
	return rc;
}

void cjc_index_published(const struct cjc_store *s, const struct cjc_staging *st, const char *key)
{
	if (st->index_doc)
		cjc_index_add(s, key, st->index_doc, st->files, st->nfiles);
}

void cjc_index_add(const struct cjc_store *s, const char *key, json_t *doc,
		   const struct cjc_artifact *files, size_t nfiles)
{
	char sub[CJC_HEX_LEN + 32];
	struct stamped row = { .row = { .kind = NULL } };
	snprintf(sub, sizeof sub, "entries/%.2s", key);
	int dfd = cjc_store_openat(s, sub, O_RDONLY | O_DIRECTORY, 0);
	int rc = dfd < 0 ? -1 : metadata_stamp(dfd, key, &row);
	if (dfd >= 0)
		close(dfd);
	snprintf(sub, sizeof sub, "index/%.2s", key);
	if (rc || cjc_store_make_dirs(s, "index"))
		return;
	struct cjc_buf out = CJC_BUF_INIT;
	row_from(key, doc, files, nfiles, &row.row);
	encode(&row, &out);
	char *own = cjc_blob_memo_name(s, sub); /* yours, never group-writable (blob.h) */
	int fd = cjc_store_open_regular(s, own, O_WRONLY | O_APPEND | O_CREAT, 0644);
	free(own);
	if (fd >= 0 && !cjc_fd_trusted(fd)) {
		close(fd); /* another's put there since, or a hard link: ls rebuilds it */
		fd = -1;
	}
	if (fd >= 0) {
		(void)cjc_write_all(fd, out.data, out.len); /* one write: appends do not interleave */
		close(fd);
	}
	row_release(&row.row);
	cjc_buf_release(&out);
}
