/*
 * stamp.h - what says a file has not changed since it was read: its device,
 * inode, size, mtime and ctime, and when that was noted.
 *
 * The racy-clean rule (git's): a stamp is proof only when the file's last
 * change (mtime and ctime) is more than CJC_STAMP_RACY_NS older than the
 * moment the stamp was taken.  A file changed again within the clock's
 * granularity after being read could keep its old stamp; a file older than
 * that margin cannot.  A missing file has the all-zero stamp.
 *
 * In the cache files a stamp is five little-endian u64 (dev, ino, size,
 * mtime ns, ctime ns).
 */
#ifndef CJC_STAMP_H
#define CJC_STAMP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/util.h"

#define CJC_STAMP_RACY_NS 2000000000LL

struct cjc_stamp {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
};

void cjc_stamp_of(const struct stat *st, struct cjc_stamp *out);
/* The stamp of a path (following links); all-zero and -1 when it is missing. */
int cjc_stamp_path(const char *path, struct cjc_stamp *out);
/* Whether a stamp taken at taken_ns is older than the racy-clean margin. */
bool cjc_stamp_settled(const struct cjc_stamp *s, int64_t taken_ns);
/* Whether `then`, taken at taken_ns, proves the file unchanged now. */
bool cjc_stamp_holds(const struct cjc_stamp *then, const struct cjc_stamp *now, int64_t taken_ns);
void cjc_stamp_encode(struct cjc_buf *b, const struct cjc_stamp *s);
void cjc_stamp_decode(struct cjc_cursor *c, struct cjc_stamp *s);

#endif
