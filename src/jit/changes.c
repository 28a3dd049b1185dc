/*
 * changes.c - a handle's change signal (base/watch.h): whether anything a
 * remembered request read from disk may have changed since its files were
 * last checked, without a stat per file.
 *
 * The handle's own part: its lock around the signal; a first request opens
 * none (nothing it serves is remembered as checked, and a handle may make
 * no other: opening the mount table was 2 % of a new process's first
 * request on the nvcc path), the next opens it, before the check it
 * vouches for; and a fork (the child shares the parent's queue) starts a
 * signal of the child's own, at a generation past every one the parent's
 * items were checked in.
 */
#include <stdlib.h>
#include <string.h>

#include "base/watch.h"
#include "jit_internal.h"

struct jit_changes {
	struct cjc_watch *w; /* NULL until the handle's second request */
	bool later;          /* not opened yet */
	unsigned forks;      /* the fork generation w was made in */
	uint64_t last;       /* the last generation w gave */
};

static struct jit_changes *changes_of(struct cjc_jit *h)
{
	struct jit_changes *c = h->changes;
	if (!c) {
		c = h->changes = cjc_xcalloc(1, sizeof *c);
		c->later = true;
		return c;
	}
	if (c->later || c->forks != jit_fork_generation()) {
		cjc_watch_close(c->w);
		c->w = cjc_watch_open(c->last + 1);
		c->later = false;
		c->forks = jit_fork_generation();
	}
	return c;
}

static uint64_t generation_of(struct jit_changes *c, uint64_t g)
{
	if (g > c->last)
		c->last = g;
	return g;
}

uint64_t jit_changes_generation(struct cjc_jit *h)
{
	jit_lock(h);
	struct jit_changes *c = changes_of(h);
	uint64_t g = c->w ? generation_of(c, cjc_watch_generation(c->w)) : 0;
	jit_unlock(h);
	return g;
}

static uint64_t watch_locked(struct cjc_jit *h, const char *const *paths, size_t n)
{
	jit_lock(h);
	struct jit_changes *c = changes_of(h);
	uint64_t g = c->w ? generation_of(c, cjc_watch_paths(c->w, paths, n)) : 0;
	jit_unlock(h);
	return g;
}

uint64_t jit_changes_watch(struct cjc_jit *h, const struct cjc_manifest_record *r,
			   const char *source, const char *named)
{
	const char **paths = cjc_xcalloc(r->ndeps + r->absent.n + 1, sizeof *paths);
	size_t n = 0;
	for (size_t i = 0; i < r->ndeps; i++) {
		const char *p = r->deps[i].path;
		bool keyed_by_content = (source && !strcmp(p, source)) || (named && !strcmp(p, named));
		if (!keyed_by_content)
			paths[n++] = p;
	}
	for (size_t i = 0; i < r->absent.n; i++)
		paths[n++] = r->absent.v[i];
	uint64_t g = watch_locked(h, paths, n);
	free(paths);
	return g;
}

uint64_t jit_changes_watch_paths(struct cjc_jit *h, const struct cjc_strvec *paths)
{
	return watch_locked(h, (const char *const *)paths->v, paths->n);
}

void jit_changes_release(struct cjc_jit *h)
{
	struct jit_changes *c = h->changes;
	if (!c)
		return;
	cjc_watch_close(c->w);
	free(c);
	h->changes = NULL;
}
