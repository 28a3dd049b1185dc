/*
 * The handle's part of the one lookup (compile/lookup.h), for the
 * compilers' paths and the NVRTC shim: the request's store, settings,
 * counters and notes; a hit journaled.
 */
#include "compile/lookup.h"
#include "jit_internal.h"

static void lookup_count(void *events, enum cjc_counter what, uint64_t saved_ms)
{
	jit_count(events, (int)what, saved_ms);
}

static void lookup_note(void *events, const char *line)
{
	const struct jit_job *j = events;
	jit_note(j->h, "%s", line);
}

struct cjc_lookup_request jit_lookup_request(struct jit_job *j, const char *direct_key)
{
	struct cjc_jit *h = j->h;
	jit_deps_load_meta(h);
	return (struct cjc_lookup_request){
		.store = &h->store, .direct_key = direct_key, .trusted_keys = h->cfg.trusted_keys,
		.touch = !h->cfg.readonly, .max_size = h->cfg.max_size,
		.count = lookup_count, .note = lookup_note, .events = j,
	};
}

bool jit_lookup_served(struct jit_job *j, const struct cjc_lookup_result *r)
{
	if (r->status != CJC_LOOKUP_HIT)
		return false;
	jit_journal_hit(j, r->entry_key, r->duration_ms);
	return true;
}
