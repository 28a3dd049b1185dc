#include "store/maintain.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fs.h"
#include "keys/manifest.h"
#include "store/evict.h"
#include "store/records.h"

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
	/* a marker of an entry removed marks nothing; made again when one is */
	if (remove_aside(s, "unsound") && !rc)
		rc = -1, e = errno;
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

static char *unsound_name(const char *key)
{
	return cjc_xasprintf("unsound/%.2s/%s", key, key);
}

int cjc_store_mark_unsound(const struct cjc_store *s, const char *key)
{
	char *sub = unsound_name(key);
	int rc = cjc_store_replace(s, sub, "", 0);
	free(sub);
	return rc;
}

bool cjc_store_is_unsound(const struct cjc_store *s, const char *key)
{
	char *sub = unsound_name(key);
	/* no link followed at any step (store.h): one openat2, which fails
	 * with ENOENT for an unmarked key; anything else is a marker */
	int fd = cjc_store_openat(s, sub, O_PATH, 0);
	bool marked = fd >= 0 || errno != ENOENT;
	if (fd >= 0)
		close(fd);
	free(sub);
	return marked;
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

/* Whether any record of a manifest names an entry that is in the store. */
static bool serves_an_entry(const struct cjc_store *s, const struct cjc_manifest *m)
{
	for (size_t i = 0; i < m->n; i++) {
		char *name = cjc_store_entry_name(m->recs[i].entry_key);
		int fd = cjc_store_openat(s, name, O_PATH | O_DIRECTORY, 0);
		free(name);
		if (fd >= 0)
			return close(fd), true;
	}
	return false;
}

/* A manifest of shard dir, named name, whose entries are all gone. */
static bool manifest_useless(const struct cjc_store *s, const char *dir, const char *name)
{
	struct cjc_manifest m;
	char *sub = cjc_path_join(dir, name);
	bool useless = !cjc_manifest_read(s, sub, &m) && !serves_an_entry(s, &m);
	cjc_manifest_release(&m); /* zeroed by a failed read */
	free(sub);
	return useless;
}

/* One shard of manifests/ or hashes/: removes what serves no entry left, and
 * counts the bytes of what stays. */
static bool earlier(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec < b->tv_sec : a->tv_nsec < b->tv_nsec;
}

static int prune_dir(const struct cjc_store *s, const char *sub, bool manifests,
		     const struct timespec *before, struct cjc_bookkeeping_report *r)
{
	int fd = cjc_store_openat(s, sub, O_RDONLY | O_DIRECTORY, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	int rc = d || errno == ENOENT ? 0 : -1;
	struct dirent *de;
	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d))) {
		struct stat st;
		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		/* written since gc began: a compile of now, kept */
		bool prune = earlier(&st.st_mtim, before) &&
			     (manifests ? manifest_useless(s, sub, de->d_name) : true);
		if (prune && !unlinkat(dirfd(d), de->d_name, 0))
			manifests ? r->manifests++ : r->hash_caches++;
		else if (prune && errno != ENOENT)
			rc = -1;
		else
			r->bytes += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	return rc;
}

int cjc_store_reclaim_bookkeeping(const struct cjc_store *s, const struct timespec *hashes_before,
				  struct cjc_bookkeeping_report *r)
{
	int rc = 0;
	struct timespec began; /* the clock file times are set from */
	clock_gettime(CLOCK_REALTIME_COARSE, &began);
	memset(r, 0, sizeof *r);
	if (!hashes_before || earlier(&began, hashes_before))
		hashes_before = &began;
	for (int i = 0; i < 256; i++) {
		char sub[32];
		snprintf(sub, sizeof sub, "manifests/%02x", i);
		rc |= prune_dir(s, sub, true, &began, r);
		snprintf(sub, sizeof sub, "hashes/%02x", i);
		rc |= prune_dir(s, sub, false, hashes_before, r);
	}
	return rc ? -1 : 0;
}

uint64_t cjc_store_bookkeeping_bytes(const struct cjc_store *s)
{
	struct cjc_bookkeeping_report r = { 0 };
	const struct timespec never = { 0, 0 };
	for (int i = 0; i < 256; i++) {
		char sub[32];
		snprintf(sub, sizeof sub, "manifests/%02x", i);
		(void)prune_dir(s, sub, false, &never, &r); /* measures, removes nothing */
		snprintf(sub, sizeof sub, "hashes/%02x", i);
		(void)prune_dir(s, sub, false, &never, &r);
	}
	return r.bytes;
}
