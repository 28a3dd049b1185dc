#include "base/stamp.h"

#include <string.h>

void cjc_stamp_of(const struct stat *st, struct cjc_stamp *out)
{
	out->dev = (uint64_t)st->st_dev;
	out->ino = (uint64_t)st->st_ino;
	out->size = (uint64_t)st->st_size;
	out->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
	out->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
}

int cjc_stamp_path(const char *path, struct cjc_stamp *out)
{
	struct stat st;
	memset(out, 0, sizeof *out);
	if (stat(path, &st))
		return -1;
	cjc_stamp_of(&st, out);
	return 0;
}

bool cjc_stamp_settled(const struct cjc_stamp *s, int64_t taken_ns)
{
	return s->mtime_ns + CJC_STAMP_RACY_NS < taken_ns && s->ctime_ns + CJC_STAMP_RACY_NS < taken_ns;
}

bool cjc_stamp_holds(const struct cjc_stamp *then, const struct cjc_stamp *now, int64_t taken_ns)
{
	return then->dev == now->dev && then->ino == now->ino && then->size == now->size &&
	       then->mtime_ns == now->mtime_ns && then->ctime_ns == now->ctime_ns &&
	       cjc_stamp_settled(now, taken_ns);
}

void cjc_stamp_encode(struct cjc_buf *b, const struct cjc_stamp *s)
{
	uint64_t v[] = { s->dev, s->ino, s->size, (uint64_t)s->mtime_ns, (uint64_t)s->ctime_ns };
	for (size_t i = 0; i < sizeof v / sizeof *v; i++)
		cjc_buf_add_u64(b, v[i]);
}

void cjc_stamp_decode(struct cjc_cursor *c, struct cjc_stamp *s)
{
	s->dev = cjc_cursor_u64(c);
	s->ino = cjc_cursor_u64(c);
	s->size = cjc_cursor_u64(c);
	s->mtime_ns = (int64_t)cjc_cursor_u64(c);
	s->ctime_ns = (int64_t)cjc_cursor_u64(c);
}
