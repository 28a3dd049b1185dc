#include "store/evict.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/oom.h"
#include "base/thread.h"
#include "store/stats.h"

#define REMOVERS 8 /* threads removing entries at once: see remove_all() */

void cjc_evict_touch(const struct cjc_entry *e)
{
	(void)futimens(e->dfd, NULL);
}

static int shard_of(const char *key)
{
	char c = key[0];
	return c >= 'a' ? c - 'a' + 10 : c - '0';
}

/* Adds bytes and entries (two's complement for a removal) to a key's shard,
 * and counts the entries evicted, in the same update. */
static int account_evicted(const struct cjc_store *s, int shard, uint64_t bytes, uint64_t entries,
			   uint64_t evicted, uint64_t evicted_bytes)
{
	uint64_t delta[CJC_STAT_COUNT] = { 0 };
	delta[CJC_STAT_BYTES] = bytes;
	delta[CJC_STAT_ENTRIES] = entries;
	delta[CJC_STAT_EVICTED] = evicted;
	delta[CJC_STAT_EVICTED_BYTES] = evicted_bytes;
	return cjc_stats_add_shard(s, shard, delta);
}

static int account(const struct cjc_store *s, int shard, uint64_t bytes, uint64_t entries)
{
	return account_evicted(s, shard, bytes, entries, 0, 0);
}

int cjc_evict_account(const struct cjc_store *s, const char *key, uint64_t bytes)
{
	return account(s, shard_of(key), bytes, 1);
}

/* Bytes of the regular files in the directory open at fd, which it closes. */
static uint64_t dir_bytes(int fd)
{
	uint64_t total = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d))) {
		struct stat st;
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue; /* ".", "..", and nothing an entry holds */
		if (!fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
			total += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	return total;
}

/* Opens an entry's directory by its key, as every directory of the store is
 * opened (store.h); st: its status.  -1 when it is not a directory. */
static int open_entry_dir(const struct cjc_store *s, const char *key, struct stat *st)
{
	char *name = cjc_store_entry_name(key);
	int fd = cjc_store_openat(s, name, O_RDONLY | O_DIRECTORY, 0);
	free(name);
	if (fd >= 0 && fstat(fd, st)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int cjc_evict_remove(const struct cjc_store *s, const char *key, const char *dest)
{
	struct stat st;
	/* an entry never changes once visible: its bytes now are its bytes */
	uint64_t bytes = dir_bytes(open_entry_dir(s, key, &st));
	char *name = cjc_store_entry_name(key);
	int rc = dest ? cjc_store_rename(s, name, dest) : cjc_store_discard(s, name);
	int e = errno;
	free(name);
	if (!rc)
		account(s, shard_of(key), -bytes, (uint64_t)-1);
	errno = e;
	return rc;
}

struct candidate {
	char *key;
	struct timespec used;
	uint64_t bytes;
};

struct candidates {
	const struct cjc_store *s;
	struct candidate *v;
	size_t n, alloc;
	uint64_t bytes[16], entries[16];
};

static int collect(const char *key, const char *dir, void *ctx)
{
	struct candidates *c = ctx;
	struct stat st;
	(void)dir; /* opened by its key, as the store's own */
	int fd = open_entry_dir(c->s, key, &st);
	if (fd < 0)
		return 0;
	if (c->n == c->alloc) {
		c->alloc = c->alloc ? 2 * c->alloc : 256;
		c->v = cjc_xrealloc(c->v, c->alloc * sizeof *c->v);
	}
	struct candidate *e = &c->v[c->n++];
	e->key = cjc_xstrdup(key);
	e->used = st.st_mtim;
	e->bytes = dir_bytes(fd);
	c->bytes[shard_of(key)] += e->bytes;
	c->entries[shard_of(key)]++;
	return 0;
}

static int older_first(const void *a, const void *b)
{
	const struct timespec *x = &((const struct candidate *)a)->used;
	const struct timespec *y = &((const struct candidate *)b)->used;
	if (x->tv_sec != y->tv_sec)
		return x->tv_sec < y->tv_sec ? -1 : 1;
	return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

static void candidates_release(struct candidates *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].key);
	free(c->v);
}

/* Entries to remove, shared by the threads removing them. */
struct removal {
	const struct cjc_store *s;
	struct candidate *v;
	bool *removed;
	size_t n;
	atomic_size_t next;
};

static void *remove_some(void *arg)
{
	struct removal *r = arg;
	char *bin = cjc_store_bin(r->s); /* this thread's own: no lock shared with the others */
	for (size_t i; (i = atomic_fetch_add(&r->next, 1)) < r->n;) {
		char *name = cjc_store_entry_name(r->v[i].key);
		r->removed[i] = !cjc_store_discard_into(r->s, name, bin);
		free(name);
	}
	if (bin)
		(void)cjc_store_remove(r->s, bin); /* with what a failed deletion left */
	free(bin);
	return NULL;
}

/*
 * Removes n entries, on REMOVERS threads: removing an entry is mostly
 * waiting, not work.  A file system mounted with `discard` (as here) waits
 * for the device to trim each freed block inside unlink(2), 0.23 ms an
 * entry one at a time, which the threads overlap.  removed[i]: whether v[i]
 * went (a racing evictor may have taken it first).
 */
static void remove_all(const struct cjc_store *s, struct candidate *v, size_t n, bool *removed)
{
	struct removal r = { s, v, removed, n, 0 };
	pthread_t t[REMOVERS];
	size_t started = 0;
	while (started + 1 < REMOVERS && started + 1 < n &&
	       !cjc_thread_start(&t[started], remove_some, &r))
		started++;
	remove_some(&r); /* this thread is one of them; with no other, it does them all */
	for (size_t i = 0; i < started; i++)
		cjc_thread_join(t[i]);
}

/* How many of the oldest candidates, from first on, must go while they are
 * older than the cutoff (seconds since the epoch; 0: none) or the total
 * exceeds the limit. */
static size_t victims(const struct candidates *c, size_t first, uint64_t total, uint64_t limit,
		      time_t cutoff)
{
	size_t i = first;
	for (; i < c->n; i++) {
		bool too_old = cutoff && c->v[i].used.tv_sec < cutoff;
		if (!too_old && !(limit && total > limit))
			break;
		total -= c->v[i].bytes;
	}
	return i - first;
}

/* Removes the oldest candidates while they are older than the cutoff or the
 * total exceeds the limit, a batch at a time (another one when an entry of
 * the batch was gone already); counts what went once per shard, not once
 * per entry (a locked update each). */
static void evict_oldest(const struct cjc_store *s, struct candidates *c, uint64_t total,
			 uint64_t limit, time_t cutoff, struct cjc_evict_report *r)
{
	uint64_t gone_bytes[16] = { 0 }, gone[16] = { 0 };
	if (c->n)
		qsort(c->v, c->n, sizeof *c->v, older_first);
	bool *removed = cjc_xcalloc(c->n + 1, sizeof *removed);
	size_t n;
	for (size_t first = 0; (n = victims(c, first, total, limit, cutoff)); first += n) {
		remove_all(s, c->v + first, n, removed + first);
		for (size_t i = first; i < first + n; i++) {
			struct candidate *e = &c->v[i];
			if (!removed[i]) /* its bytes were measured by collect() */
				continue;
			int shard = shard_of(e->key);
			total -= e->bytes;
			c->bytes[shard] -= e->bytes;
			c->entries[shard]--;
			gone_bytes[shard] += e->bytes;
			gone[shard]++;
			r->evicted++;
			r->evicted_bytes += e->bytes;
		}
	}
	for (size_t i = 0; i < c->n; i++)
		if (!removed[i]) { /* sorted: the first left is the oldest */
			r->oldest_left = c->v[i].used;
			break;
		}
	free(removed);
	for (int i = 0; i < 16; i++)
		if (gone[i])
			account_evicted(s, i, -gone_bytes[i], -gone[i], gone[i], gone_bytes[i]);
}

/* Makes a shard's size counters say what was measured. */
static void recount(const struct cjc_store *s, int shard, uint64_t bytes, uint64_t entries)
{
	uint64_t now[CJC_STAT_COUNT];
	cjc_stats_read_shard(s, shard, now);
	account(s, shard, bytes - now[CJC_STAT_BYTES], entries - now[CJC_STAT_ENTRIES]);
}

int cjc_evict_store(const struct cjc_store *s, uint64_t max_size, int64_t older_than,
		    struct cjc_evict_report *r)
{
	struct candidates c = { .s = s };
	memset(r, 0, sizeof *r);
	int rc = cjc_store_foreach_entry(s, collect, &c);
	for (int i = 0; i < 16; i++)
		r->bytes += c.bytes[i], r->entries += c.entries[i];
	time_t cutoff = older_than >= 0 ? time(NULL) - older_than + 1 : 0;
	if (!rc)
		evict_oldest(s, &c, r->bytes, max_size, cutoff, r);
	else
		r->oldest_left.tv_nsec = 1; /* not known: no hash cache can be said to serve nothing */
	for (int i = 0; !rc && i < 16; i++)
		recount(s, i, c.bytes[i], c.entries[i]);
	candidates_release(&c);
	return rc;
}

/*
 * The lock that keeps to one evictor per shard at a time.  A lock file that
 * every user of a group store shares could be held, forever, by anyone who
 * can open it (a member, or a user who may only read the store), and a FIFO
 * or a directory planted at its name would make it unusable: either way
 * eviction would be switched off for everyone.  So each user has their own,
 * stats/evict.<n>.<uid>, mode 0600 and one link: no one else can open it,
 * so no one else can hold it.  It is opened without following a link and
 * without blocking; anything at its name that is not a regular file of ours
 * alone is replaced by a fresh one, renamed over it relative to stats/'s fd.
 *
 * Where even that fails (a directory at the name, a sticky stats/ with the
 * file someone else's), eviction goes on without the lock.  That is safe:
 * the lock only saves duplicated work, correctness never depends on it.  A
 * removal is one rename of the entry into staging, so a reader sees the
 * whole entry or none of it, and two evictors racing for one entry are
 * harmless (one rename wins, the other gets ENOENT and takes the next
 * oldest); at worst the shard goes a little below its share.
 *
 * Returns the locked descriptor; EVICT_BUSY when one of this user's own
 * processes holds the lock (it is evicting this shard: go on with the build);
 * EVICT_UNLOCKED when no lock can be had: evict without one.
 */
enum { EVICT_BUSY = -1, EVICT_UNLOCKED = -2 };

static int take_evict_lock(const struct cjc_store *s, int shard)
{
	char name[64];
	snprintf(name, sizeof name, "evict.%d.%lu", shard, (unsigned long)geteuid());
	int fd = cjc_store_own_file(s, "stats", name);
	if (fd < 0)
		return EVICT_UNLOCKED;
	if (!flock(fd, LOCK_EX | LOCK_NB)) /* never waits: the holder is evicting */
		return fd;
	int e = errno;
	close(fd);
	return e == EWOULDBLOCK ? EVICT_BUSY : EVICT_UNLOCKED;
}

int cjc_evict_published(const struct cjc_store *s, const char *key, uint64_t bytes,
			uint64_t max_size, struct cjc_evict_report *r)
{
	int shard = shard_of(key);
	uint64_t v[CJC_STAT_COUNT];
	memset(r, 0, sizeof *r);
	/* A count that could not be made or read (someone holds the shard's
	 * lock, or planted something at its name) is not trusted: the shard is
	 * measured instead, so no one can switch eviction off that way either. */
	bool known = !cjc_evict_account(s, key, bytes) && !cjc_stats_read_shard(s, shard, v);
	if (!max_size || (known && v[CJC_STAT_BYTES] <= max_size / 16))
		return 0;
	int lock = take_evict_lock(s, shard);
	if (lock == EVICT_BUSY)
		return 0;
	if (lock >= 0)
		cjc_oom_fd_held(lock);
	struct candidates c = { .s = s };
	char prefix[2] = { key[0], '\0' };
	int rc = cjc_store_foreach_entry_in(s, prefix, collect, &c);
	r->bytes = c.bytes[shard];
	r->entries = c.entries[shard];
	/* The counter may have drifted (a crash between rename and count): correct it. */
	if (known)
		account(s, shard, r->bytes - v[CJC_STAT_BYTES], r->entries - v[CJC_STAT_ENTRIES]);
	if (!rc && r->bytes > max_size / 16)
		evict_oldest(s, &c, r->bytes, max_size / 16 / 10 * 9, 0, r);
	candidates_release(&c);
	if (lock >= 0) {
		cjc_oom_fd_let_go(lock);
		close(lock);
	}
	return rc;
}
