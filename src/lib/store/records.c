#include "store/records.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "keys/filehash.h"
#include "keys/metamemo.h"

/* Frames the payload and has replace write it whole at sub. */
static int write_framed(const struct cjc_store *s, const char *sub, const char magic[4],
			const struct cjc_buf *payload,
			int (*replace)(const struct cjc_store *, const char *, const void *, size_t))
{
	struct cjc_buf framed = CJC_BUF_INIT;
	cjc_blob_encode(&framed, magic, payload->data, payload->len);
	int rc = replace(s, sub, framed.data, framed.len);
	int e = errno;
	cjc_buf_release(&framed);
	errno = e;
	return rc;
}

int cjc_blob_write(const struct cjc_store *s, const char *sub, const char magic[4],
		   const struct cjc_buf *payload)
{
	return write_framed(s, sub, magic, payload, cjc_store_replace);
}

/* The payload of what fd holds (closed; -1 passes its errno through). */
static int read_framed(int fd, const char magic[4], struct cjc_buf *payload)
{
	struct cjc_buf raw = CJC_BUF_INIT;
	int rc = cjc_read_regular_and_close(fd, CJC_STORE_MAX_FILE, &raw);
	const void *p;
	size_t n;
	if (!rc)
		rc = cjc_blob_decode(raw.data, raw.len, magic, &p, &n);
	if (!rc) { /* the payload moved to the front in place: no second copy */
		memmove(raw.data, p, n);
		raw.data[n] = '\0';
		raw.len = n;
		cjc_buf_release(payload);
		*payload = raw;
		raw = (struct cjc_buf)CJC_BUF_INIT;
	}
	int e = errno;
	cjc_buf_release(&raw);
	errno = e;
	return rc;
}

int cjc_blob_read(const struct cjc_store *s, const char *sub, const char magic[4],
		  struct cjc_buf *payload)
{
	return read_framed(cjc_store_openat(s, sub, O_RDONLY | O_NONBLOCK, 0), magic, payload);
}

/* The effective user (a memo is used a few times a compile: no cache). */
static uid_t user(void)
{
	return geteuid();
}

/* Whether fd's file is this user's own: a regular file with one name,
 * owned by the effective user and writable by no one else (fs.h). */
static bool own_file(int fd)
{
	struct stat st;
	return !fstat(fd, &st) && cjc_stat_trusted(&st) && st.st_uid == user();
}

/* "<sub>.<uid>", in a new allocation. */
static char *per_user_name(const char *sub)
{
	return cjc_xasprintf("%s.%lu", sub, (unsigned long)user());
}

int cjc_blob_memo_open(const struct cjc_store *s, const char *sub)
{
	/* not a regular file: read_framed refuses it (cjc_read_regular_fd) */
	int fd = cjc_store_openat(s, sub, O_RDONLY | O_NONBLOCK, 0);
	if (fd >= 0 && own_file(fd))
		return fd; /* a store of one user, or root's: one open, one fstat */
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return -1;
	if (user() != 0) {
		char *name = per_user_name(sub);
		int own = cjc_store_openat(s, name, O_RDONLY | O_NONBLOCK, 0);
		free(name);
		if (own >= 0 && own_file(own)) {
			if (fd >= 0)
				close(fd);
			return own;
		}
		if (own >= 0)
			close(own);
	}
	if (fd >= 0 && cjc_fd_trusted(fd))
		return fd; /* root's */
	if (fd >= 0)
		close(fd);
	errno = EPERM;
	return -1;
}

char *cjc_blob_memo_name(const struct cjc_store *s, const char *sub)
{
	if (user() == 0)
		return cjc_xstrdup(sub);
	/* O_PATH with O_NOFOLLOW: a link at sub is looked at, not followed */
	int fd = cjc_store_openat(s, sub, O_PATH, 0);
	struct stat st;
	bool theirs = fd >= 0 ? fstat(fd, &st) || st.st_uid != user() || !S_ISREG(st.st_mode)
			      : errno != ENOENT && errno != ENOTDIR;
	if (fd >= 0)
		close(fd);
	return theirs ? per_user_name(sub) : cjc_xstrdup(sub);
}

int cjc_blob_memo_replace(const struct cjc_store *s, const char *sub, const void *p, size_t n)
{
	char *name = cjc_blob_memo_name(s, sub);
	char *slash = strrchr(name, '/');
	int rc = -1, e = EINVAL;
	if (slash) { /* every memo is in a directory of the namespace */
		*slash = '\0';
		int dfd = cjc_store_make_dirs(s, name) ? -1
			  : cjc_store_openat(s, name, O_PATH | O_DIRECTORY, 0);
		/* never group-writable (0644, less the umask): a memo others
		 * could write is no memo of yours */
		rc = dfd < 0 ? -1 : cjc_replace_file_at(dfd, slash + 1, p, n, 0644);
		e = errno;
		if (dfd >= 0)
			close(dfd);
	}
	free(name);
	errno = e;
	return rc;
}

int cjc_blob_read_memo(const struct cjc_store *s, const char *sub, const char magic[4],
		       struct cjc_buf *payload)
{
	return read_framed(cjc_blob_memo_open(s, sub), magic, payload);
}

int cjc_blob_write_memo(const struct cjc_store *s, const char *sub, const char magic[4],
			const struct cjc_buf *payload)
{
	return write_framed(s, sub, magic, payload, cjc_blob_memo_replace);
}

/* A payload read whole, unpacked in place when it is packed (blob.h). */
static int unpack(struct cjc_buf *payload)
{
	struct cjc_buf plain = CJC_BUF_INIT;
	int rc = cjc_blob_unpack(payload->data, payload->len, CJC_STORE_MAX_FILE, &plain);
	if (rc < 0) { /* plain may hold what a frame that went bad had grown */
		cjc_buf_release(&plain);
		cjc_buf_release(payload);
	}
	if (!rc) {
		cjc_buf_release(payload);
		*payload = plain;
	}
	return rc < 0 ? -1 : 0;
}

int cjc_blob_read_records(const struct cjc_store *s, const char *sub, const char magic[4],
			  uint32_t version, struct cjc_buf *payload, struct cjc_cursor *c,
			  uint32_t *count)
{
	if (cjc_blob_read_memo(s, sub, magic, payload) || unpack(payload))
		return -1;
	cjc_cursor_init(c, payload->data, payload->len);
	uint32_t v = cjc_cursor_u32(c);
	*count = cjc_cursor_u32(c);
	if (c->bad || v != version) {
		cjc_buf_release(payload);
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

/* A file of records, framed in place (blob.h): records_open() starts it
 * (magic, version, a count to be set), the caller appends the records,
 * records_write() sets the count, closes the frame and writes the memo. */
#define RECORDS_COUNT_AT 8 /* after the magic and the version */

static size_t records_open(struct cjc_buf *framed, const char magic[4], uint32_t version)
{
	size_t start = cjc_blob_open(framed, magic);
	cjc_buf_add_u32(framed, version);
	cjc_buf_add_u32(framed, 0);
	return start;
}

static int records_write(const struct cjc_store *s, const char *sub, struct cjc_buf *framed,
			 size_t start, uint32_t count)
{
	cjc_buf_set_u32(framed, start + RECORDS_COUNT_AT, count);
	cjc_blob_close_packed(framed, start, s->compression_level);
	int rc = cjc_blob_memo_replace(s, sub, framed->data, framed->len);
	int e = errno;
	cjc_buf_release(framed);
	errno = e;
	return rc;
}

int cjc_blob_write_records(const struct cjc_store *s, const char *sub, const char magic[4],
			   uint32_t version, uint32_t count, const struct cjc_buf *records)
{
	struct cjc_buf framed = CJC_BUF_INIT;
	size_t start = records_open(&framed, magic, version);
	cjc_buf_add(&framed, records->data, records->len);
	return records_write(s, sub, &framed, start, count);
}

int cjc_manifest_read(const struct cjc_store *s, const char *sub, struct cjc_manifest *m)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	memset(m, 0, sizeof *m);
	int rc = cjc_blob_read(s, sub, CJC_MANIFEST_MAGIC, &payload);
	if (!rc)
		rc = unpack(&payload);
	if (!rc)
		rc = cjc_manifest_decode(payload.data, payload.len, m);
	int e = errno;
	cjc_buf_release(&payload);
	errno = e;
	return rc;
}

int cjc_manifest_add(const struct cjc_store *s, const char *sub,
		     const struct cjc_manifest_record *rec)
{
	struct cjc_manifest old;
	if (cjc_manifest_read(s, sub, &old))
		memset(&old, 0, sizeof old);
	struct cjc_buf framed = CJC_BUF_INIT;
	size_t start = cjc_blob_open(&framed, CJC_MANIFEST_MAGIC);
	cjc_manifest_encode_with(&old, rec, &framed);
	cjc_blob_close_packed(&framed, start, s->compression_level);
	int rc = cjc_store_replace(s, sub, framed.data, framed.len);
	int e = errno;
	cjc_buf_release(&framed);
	cjc_manifest_release(&old);
	errno = e;
	return rc;
}

/* Reads a file of records and has decode take them. */
static int load_records(const struct cjc_store *s, const char *sub, const char magic[4],
			uint32_t version, void (*decode)(struct cjc_cursor *, uint32_t))
{
	struct cjc_buf payload = CJC_BUF_INIT;
	struct cjc_cursor c;
	uint32_t count;
	if (cjc_blob_read_records(s, sub, magic, version, &payload, &c, &count))
		return -1;
	decode(&c, count);
	cjc_buf_release(&payload);
	return 0;
}

/* Writes a file of the records encode gives, when it gives any. */
static int save_records(const struct cjc_store *s, const char *sub, const char magic[4],
			uint32_t version, bool (*encode)(struct cjc_buf *, uint32_t *))
{
	struct cjc_buf framed = CJC_BUF_INIT;
	size_t start = records_open(&framed, magic, version);
	uint32_t count = 0;
	if (encode(&framed, &count))
		return records_write(s, sub, &framed, start, count);
	cjc_buf_release(&framed);
	return 0;
}

int cjc_filehash_load(const struct cjc_store *s, const char *sub)
{
	return load_records(s, sub, CJC_FILEHASH_MAGIC, CJC_FILEHASH_VERSION, cjc_filehash_decode);
}

int cjc_filehash_save(const struct cjc_store *s, const char *sub)
{
	return save_records(s, sub, CJC_FILEHASH_MAGIC, CJC_FILEHASH_VERSION, cjc_filehash_encode);
}

int cjc_filehash_load_shared(const struct cjc_store *s, const char *sub)
{
	return load_records(s, sub, CJC_FILEHASH_MAGIC, CJC_FILEHASH_VERSION,
			    cjc_filehash_decode_shared);
}

int cjc_filehash_save_shared(const struct cjc_store *s, const char *sub)
{
	return save_records(s, sub, CJC_FILEHASH_MAGIC, CJC_FILEHASH_VERSION,
			    cjc_filehash_encode_shared);
}

int cjc_metamemo_load(const struct cjc_store *s, const char *sub)
{
	return load_records(s, sub, CJC_METAMEMO_MAGIC, CJC_METAMEMO_VERSION, cjc_metamemo_decode);
}

int cjc_metamemo_save(const struct cjc_store *s, const char *sub)
{
	return save_records(s, sub, CJC_METAMEMO_MAGIC, CJC_METAMEMO_VERSION, cjc_metamemo_encode);
}
