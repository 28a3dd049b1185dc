/*
 * oci_shelf.c - the OCI backend's shelf (oci_internal.h): values carried
 * in or named by another's manifest.
 *
 * An entry's manifest embeds its artifacts' bytes too (EMBED_WRITE_MAX
 * with the record, oci_manifest.c), and a direct-mode manifest the record of its newest
 * entry and that entry's artifacts, so that a hit on
 * an empty local store of a small entry is one request (the direct-mode
 * manifest), not three; those too large are named, and fetched at once
 * with the manifest's value (oci_blobs.c).  The bytes travel through this
 * process-wide shelf, bounded and short-lived: a blob or an entry's record
 * this process just wrote waits there for the manifest that embeds or
 * names it, and an embedded or fetched one checked against its layer's
 * digest waits for the get of that blob or
 * entry, which takes it.  Only bytes whose SHA-256 their layer names are
 * shelved, and a get still checks them (fetch.c: an artifact against the
 * entry's metadata, a record by its metadata naming the key asked for).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/oom.h"
#include "remote/oci_internal.h"

#define SHELF_SLOTS 64
#define SHELF_LIFE_MS 60000
#define SHELF_BYTES_MAX ((size_t)32 << 20) /* in all: the slots that end first make room */

static struct shelved {
	char name[CJC_HEX_LEN + 3]; /* a blob's hex, or "e:" and an entry key; "" when free */
	struct cjc_buf bytes;
	int64_t until_ms;
} shelf[SHELF_SLOTS];
static size_t shelf_bytes; /* what the slots hold */
static pthread_mutex_t shelf_lock = PTHREAD_MUTEX_INITIALIZER;

/* The shelf's name of a blob (entry_key NULL) or of an entry's record. */
void oci_shelf_name(const char *hex, const char *entry_key, char name[CJC_HEX_LEN + 3])
{
	snprintf(name, CJC_HEX_LEN + 3, "%s%s", entry_key ? "e:" : "", entry_key ? entry_key : hex);
}

static struct shelved *shelf_find(const char *name, int64_t now)
{
	for (size_t i = 0; i < SHELF_SLOTS; i++)
		if (shelf[i].name[0] && shelf[i].until_ms > now && !strcmp(shelf[i].name, name))
			return &shelf[i];
	return NULL;
}

static void shelf_clear(struct shelved *s)
{
	shelf_bytes -= s->bytes.len;
	cjc_buf_release(&s->bytes);
	s->name[0] = '\0';
}

/* A free slot for n bytes: name's own, those that ended and then those
 * that end first cleared as the bounds need. */
static struct shelved *shelf_slot(const char *name, size_t n, int64_t now)
{
	struct shelved *free_slot = NULL;
	for (size_t i = 0; i < SHELF_SLOTS; i++) {
		struct shelved *s = &shelf[i];
		if (s->name[0] && (s->until_ms <= now || !strcmp(s->name, name)))
			shelf_clear(s);
		if (!s->name[0] && !free_slot)
			free_slot = s;
	}
	while (!free_slot || shelf_bytes + n > SHELF_BYTES_MAX) {
		struct shelved *first = NULL;
		for (size_t i = 0; i < SHELF_SLOTS; i++)
			if (shelf[i].name[0] && (!first || shelf[i].until_ms < first->until_ms))
				first = &shelf[i];
		if (!first)
			break;
		shelf_clear(first);
		free_slot = free_slot ? free_slot : first;
	}
	return free_slot;
}

/* Keeps a copy of bytes (whose SHA-256 is hex), when small enough: a blob,
 * or the record of the entry entry_key. */
void oci_shelf_put(const char *hex, const char *entry_key, const void *p, size_t n)
{
	if (n > SHELF_ITEM_MAX)
		return;
	char name[CJC_HEX_LEN + 3];
	oci_shelf_name(hex, entry_key, name);
	int64_t now = cjc_now_ms();
	cjc_oom_lock(&shelf_lock);
	struct shelved *slot = shelf_slot(name, n, now);
	slot->bytes.data = cjc_xmalloc(n + 1); /* its size, not a power of two */
	memcpy(slot->bytes.data, p, n);
	slot->bytes.data[n] = '\0';
	slot->bytes.len = n;
	slot->bytes.cap = n + 1;
	shelf_bytes += n;
	memcpy(slot->name, name, sizeof slot->name);
	slot->until_ms = now + SHELF_LIFE_MS;
	cjc_oom_unlock(&shelf_lock);
}

/* A copy of the shelved bytes of name, at most max, into out: whether there. */
bool oci_shelf_copy(const char *name, uint64_t max, struct cjc_buf *out)
{
	cjc_oom_lock(&shelf_lock);
	struct shelved *s = shelf_find(name, cjc_now_ms());
	bool there = s && s->bytes.len <= max;
	if (there)
		cjc_buf_add(out, s->bytes.data, s->bytes.len);
	cjc_oom_unlock(&shelf_lock);
	return there;
}

bool oci_shelf_has(const char *name)
{
	cjc_oom_lock(&shelf_lock);
	bool there = shelf_find(name, cjc_now_ms()) != NULL;
	cjc_oom_unlock(&shelf_lock);
	return there;
}

/* The same, taking them off the shelf (a get serves them once). */
bool oci_shelf_take(const char *name, size_t max, struct cjc_buf *out)
{
	cjc_oom_lock(&shelf_lock);
	struct shelved *s = shelf_find(name, cjc_now_ms());
	bool there = s && s->bytes.len <= max;
	if (there) {
		cjc_buf_add(out, s->bytes.data, s->bytes.len);
		shelf_clear(s);
	}
	cjc_oom_unlock(&shelf_lock);
	return there;
}
