/*
 * The memory tier: the requests a handle served, kept in memory, so that a
 * repeated request reads nothing from the store.
 *
 * An item holds an entry's bytes (the artifact and the compiler's log)
 * under a lookup key, the direct key, with the manifest record that named
 * the entry, whose files the caller checks again (deps.c) before it uses
 * the item: a header edited since is a miss here as it is in the store;
 * or, for nvcc, where the kernel says nothing they are read through
 * changed since they were last checked (changes.c), not again.
 * Items never change once added, but for that mark.  A lookup takes a
 * reference, which the caller gives back once it has copied what it needs,
 * so no lock is held while files are checked; a forgotten item (a drop) is
 * freed by its last holder.
 *
 * Bounded: at most MEMORY_ITEMS items and MEMORY_BYTES bytes; past either,
 * a new item is not kept.  A memory hit counts as a hit; its counts reach
 * the store's counters in batches (every FLUSH_HITS hits or FLUSH_MS
 * milliseconds, and when the handle closes), and it does not refresh the
 * entry's recency (evict.h): an entry evicted from the store is still
 * served from here, with the bytes it had, which were right for the request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jit_internal.h"
#include "store/stats.h"

#define MEMORY_BUCKETS 256
#define MEMORY_ITEMS 4096
#define MEMORY_BYTES ((size_t)256 << 20)
#define FLUSH_HITS 64
#define FLUSH_MS 1000

struct jit_memory_item {
	struct jit_memory_item *next;
	unsigned refs; /* the table's, while in it, and each holder's */
	char lookup[CJC_HEX_LEN + 1];
	char key[CJC_HEX_LEN + 1];
	struct cjc_manifest_record rec; /* what named the entry */
	struct cjc_buf data;
	char *log;
	int64_t duration_ms;
	uint64_t checked; /* the change generation its files were found unchanged in (changes.c) */
};

struct jit_memory {
	struct jit_memory_item *buckets[MEMORY_BUCKETS];
	size_t items, bytes;
	uint64_t hits, saved_ms; /* not yet in the store's counters */
	int64_t flushed_ms;
};

static unsigned bucket_of(const char *lookup)
{
	return cjc_table_hash(lookup, CJC_HEX_LEN) % MEMORY_BUCKETS;
}

static void item_free(struct jit_memory_item *it)
{
	cjc_manifest_record_release(&it->rec);
	cjc_buf_release(&it->data);
	free(it->log);
	free(it);
}

/* Drops a reference; the caller holds the lock. */
static void unref_locked(struct jit_memory_item *it)
{
	if (--it->refs == 0)
		item_free(it);
}

struct jit_memory_item *jit_memory_find(struct cjc_jit *h, const char *lookup)
{
	jit_lock(h);
	struct jit_memory_item *it = h->memory ? h->memory->buckets[bucket_of(lookup)] : NULL;
	for (; it && strcmp(it->lookup, lookup); it = it->next)
		;
	if (it)
		it->refs++;
	jit_unlock(h);
	return it;
}

void jit_memory_release(struct cjc_jit *h, struct jit_memory_item *it)
{
	if (!it)
		return;
	jit_lock(h);
	unref_locked(it);
	jit_unlock(h);
}

bool jit_memory_checked(struct cjc_jit *h, const struct jit_memory_item *it, uint64_t gen)
{
	jit_lock(h);
	bool checked = gen && it->checked == gen;
	jit_unlock(h);
	return checked;
}

void jit_memory_mark_checked(struct cjc_jit *h, struct jit_memory_item *it, uint64_t gen)
{
	jit_lock(h);
	it->checked = gen;
	jit_unlock(h);
}

const struct cjc_manifest_record *jit_memory_record(const struct jit_memory_item *it)
{
	return &it->rec;
}

bool jit_memory_holds(struct cjc_jit *h, struct jit_memory_item *it, uint64_t gen,
		      const struct jit_memory_check *c)
{
	if (jit_memory_checked(h, it, gen))
		return true;
	uint64_t watched = c->watch(c->ctx, &it->rec);
	struct cjc_manifest one = { &it->rec, 1 };
	if (c->match(c->ctx, &one) != 0)
		return false;
	if (watched)
		jit_memory_mark_checked(h, it, watched);
	return true;
}

/* Takes an item out of the table; the caller holds the lock. */
static void unlink_locked(struct jit_memory *m, struct jit_memory_item **p)
{
	struct jit_memory_item *it = *p;
	*p = it->next;
	m->items--;
	m->bytes -= it->data.len + (it->log ? strlen(it->log) : 0);
	unref_locked(it);
}

void jit_memory_put(struct cjc_jit *h, const char *lookup, const char *key,
		    struct cjc_manifest_record *rec, const void *data, size_t size, const char *log,
		    int64_t duration_ms)
{
	size_t bytes = size + (log ? strlen(log) : 0);
	struct jit_memory_item *it = cjc_xcalloc(1, sizeof *it);
	memcpy(it->lookup, lookup, CJC_HEX_LEN + 1);
	memcpy(it->key, key, CJC_HEX_LEN + 1);
	if (rec) { /* moved in: the caller's record is left empty */
		it->rec = *rec;
		memset(rec, 0, sizeof *rec);
	}
	cjc_buf_add(&it->data, data, size);
	it->log = log ? cjc_xstrdup(log) : NULL;
	it->duration_ms = duration_ms;
	it->refs = 1;
	jit_lock(h);
	if (!h->memory) {
		h->memory = cjc_xcalloc(1, sizeof *h->memory);
		h->memory->flushed_ms = cjc_now_ms();
	}
	struct jit_memory *m = h->memory;
	struct jit_memory_item **slot = &m->buckets[bucket_of(lookup)];
	for (struct jit_memory_item **p = slot; *p; p = &(*p)->next)
		if (!strcmp((*p)->lookup, lookup)) { /* an older record of the same request */
			unlink_locked(m, p);
			break;
		}
	bool kept = m->items < MEMORY_ITEMS && m->bytes + bytes <= MEMORY_BYTES;
	if (kept) {
		it->next = *slot;
		*slot = it;
		m->items++;
		m->bytes += bytes;
	}
	jit_unlock(h);
	if (!kept)
		item_free(it);
}

/* Adds the pending memory hits to the store's counters; outside the lock. */
static void flush(struct cjc_jit *h, uint64_t hits, uint64_t saved_ms)
{
	uint64_t delta[CJC_STAT_COUNT] = { 0 };
	delta[CJC_STAT_HITS] = hits;
	delta[CJC_STAT_SAVED_MS] = saved_ms;
	if (hits && jit_store_ready(h) && cjc_stats_add(&h->store, delta))
		jit_note(h, "cannot update the counters: %s", strerror(errno));
}

/* Counts a memory hit, and hands the batch to the store when it is due. */
static void count_hit(struct cjc_jit *h, int64_t saved_ms)
{
	int64_t now = cjc_now_ms();
	uint64_t hits = 0, saved = 0;
	jit_lock(h);
	struct jit_memory *m = h->memory;
	m->hits++;
	m->saved_ms += (uint64_t)saved_ms;
	if (m->hits >= FLUSH_HITS || now - m->flushed_ms >= FLUSH_MS) {
		hits = m->hits, saved = m->saved_ms;
		m->hits = m->saved_ms = 0;
		m->flushed_ms = now;
	}
	jit_unlock(h);
	flush(h, hits, saved);
}

void jit_memory_serve(struct jit_job *j, const struct jit_memory_item *it)
{
	struct cjc_jit_result *out = j->out;
	out->data = cjc_xmalloc(it->data.len ? it->data.len : 1);
	memcpy(out->data, it->data.data, it->data.len);
	out->size = it->data.len;
	out->log = it->log ? cjc_xstrdup(it->log) : NULL;
	memcpy(out->key, it->key, CJC_HEX_LEN + 1);
	out->hit = 1;
	count_hit(j->h, it->duration_ms);
}

void jit_memory_forget(struct cjc_jit *h, const char *key)
{
	jit_lock(h);
	for (size_t b = 0; h->memory && b < MEMORY_BUCKETS; b++)
		for (struct jit_memory_item **p = &h->memory->buckets[b]; *p;) {
			if (strcmp((*p)->key, key))
				p = &(*p)->next;
			else
				unlink_locked(h->memory, p);
		}
	jit_unlock(h);
}

void jit_memory_release_all(struct cjc_jit *h)
{
	struct jit_memory *m = h->memory;
	if (!m)
		return;
	flush(h, m->hits, m->saved_ms);
	for (size_t b = 0; b < MEMORY_BUCKETS; b++)
		while (m->buckets[b]) {
			struct jit_memory_item *it = m->buckets[b];
			m->buckets[b] = it->next;
			unref_locked(it);
		}
	free(m);
	h->memory = NULL;
}
