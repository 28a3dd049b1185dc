#include "store/maintain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fs.h"
#include "store/evict.h"

/* A part of the store gone (store.h's discard); missing already is fine. */
static int remove_aside(const struct cjc_store *s, const char *sub)
{
	return cjc_store_discard(s, sub) && errno != ENOENT ? -1 : 0;
}

struct cleaning {
	const struct cjc_store *s;
	struct cjc_clean_report *r;
};

static int remove_entry(const char *key, const char *dir, void *ctx)
{
	struct cleaning *c = ctx;
	(void)dir; /* removed by its key, relative to the store's fds */
	if (cjc_evict_remove(c->s, key, NULL))
		c->r->failed++;
	else
		c->r->removed++;
	return 0;
}

int cjc_store_clean(const struct cjc_store *s, struct cjc_clean_report *r)
{
	struct cleaning c = { s, r };
	memset(r, 0, sizeof *r);
	int rc = cjc_store_foreach_entry(s, remove_entry, &c);
	int e = errno;
	static const char *const parts[] = { "manifests", "hashes" };
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
		if (remove_aside(s, parts[i]) && !rc)
			rc = -1, e = errno;
		if (cjc_store_make_dirs(s, parts[i]) && !rc)
			rc = -1, e = errno;
	}
	if (r->failed && !rc)
		rc = -1, e = EACCES;
	errno = e;
	return rc;
}

int cjc_store_quarantine(const struct cjc_store *s, const char *key, char **dest)
{
	char *base = cjc_path_join("quarantine", key);
	char *sub = cjc_unique_name(base);
	*dest = cjc_store_path(s, sub); /* to show: every access is through fds */
	int rc = cjc_store_make_dirs(s, "quarantine");
	if (!rc)
		rc = cjc_evict_remove(s, key, sub);
	int e = errno;
	free(base);
	free(sub);
	errno = e;
	return rc;
}

/* What to do with one name in a directory of the store. */
enum keep { KEEP, REMOVE_ORPHAN, REMOVE_OLD_CACHE };

static enum keep judge(const char *name, const struct stat *st, int64_t age, bool cache_dir)
{
	if (cjc_name_orphaned(name, st->st_mtime, age))
		return REMOVE_ORPHAN;
	if (cache_dir && S_ISREG(st->st_mode) && time(NULL) - st->st_mtime >= age)
		return REMOVE_OLD_CACHE;
	return KEEP;
}

/* Reclaims in one directory of the store (sub); counts into r. */
static int reclaim_dir(const struct cjc_store *s, const char *sub, int64_t age, bool cache_dir,
		       bool staging, struct cjc_reclaim_report *r)
{
	/* opened as every store directory is: a planted link sends no removal elsewhere */
	int fd = cjc_store_openat(s, sub, O_RDONLY | O_DIRECTORY, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	int rc = d || errno == ENOENT ? 0 : -1;
	struct dirent *de;
	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		enum keep k = judge(de->d_name, &st, age, cache_dir);
		if (k != KEEP && cjc_remove_tree_at(dirfd(d), de->d_name))
			rc = -1;
		else if (k == REMOVE_ORPHAN)
			staging ? r->staging++ : r->temporaries++;
		else if (k == REMOVE_OLD_CACHE)
			r->hash_caches++;
		else if (staging)
			r->staging_kept++;
		else if (cache_dir)
			r->hash_bytes += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	return rc;
}

/* Each <kk>/ shard of manifests/ or hashes/. */
static int reclaim_shards(const struct cjc_store *s, const char *top, int64_t age, bool cache_dir,
			  struct cjc_reclaim_report *r)
{
	int rc = 0;
	for (int i = 0; i < 256; i++) {
		char sub[32];
		snprintf(sub, sizeof sub, "%s/%02x", top, i);
		if (reclaim_dir(s, sub, age, cache_dir, false, r))
			rc = -1;
	}
	return rc;
}

int cjc_store_reclaim(const struct cjc_store *s, int64_t age, struct cjc_reclaim_report *r)
{
	memset(r, 0, sizeof *r);
	int rc = reclaim_dir(s, "staging", age, false, true, r);
	rc |= reclaim_dir(s, "ids", age, false, false, r);
	rc |= reclaim_shards(s, "manifests", age, false, r);
	rc |= reclaim_shards(s, "hashes", age, true, r);
	return rc ? -1 : 0;
}
