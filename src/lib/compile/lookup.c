#include "compile/lookup.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/publish.h"
#include "store/evict.h"
#include "store/maintain.h"
#include "store/records.h"
#include "store/sign.h"

static void note(const struct cjc_lookup_request *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(const struct cjc_lookup_request *q, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = cjc_xvasprintf(fmt, ap);
	va_end(ap);
	q->note(q->events, line);
	free(line);
}

static void set_why(struct cjc_lookup_result *out, char *why)
{
	free(out->why);
	out->why = why;
}

/* Why an entry was not served: said, counted, and kept for the journal. */
static void not_served(const struct cjc_lookup_request *q, enum cjc_lookup_status st,
		       const char *key, const char *why, struct cjc_lookup_result *out)
{
	switch (st) {
	case CJC_LOOKUP_UNTRUSTED:
		set_why(out, cjc_xasprintf("entry %.12s is not trusted: %s", key, why));
		note(q, "entry %s not served: %s", key, why);
		q->count(q->events, CJC_STAT_UNTRUSTED, 0);
		break;
	case CJC_LOOKUP_NOT_WRITTEN:
		set_why(out, cjc_xasprintf("entry %.12s could not be served: %s", key, why));
		note(q, "cannot serve %s: %s; compiling instead", key, why);
		break;
	case CJC_LOOKUP_EVICTED:
		set_why(out, cjc_xasprintf("entry %.12s was evicted while being read", key));
		note(q, "entry %s was evicted while being read; compiling instead", key);
		break;
	case CJC_LOOKUP_UNSOUND:
		set_why(out, cjc_xasprintf("entry %.12s did not reproduce when it was compiled again "
					   "(verify_rate): never served again", key));
		note(q, "entry %s is marked unsound (verify_rate); compiling instead", key);
		break;
	case CJC_LOOKUP_ABSENT:
		set_why(out, cjc_xasprintf("entry %.12s is no longer in the store (evicted or "
					   "cleaned)", key));
		break;
	default: /* a staging is removed after the read: nothing to fix */
		set_why(out, cjc_xasprintf("entry %.12s was damaged: %s", key, why));
		note(q, "damaged entry %s: %s; compiling instead%s", key, why,
		     q->remote_only ? "" : " (run `cjc verify --fix`)");
		q->count(q->events, CJC_STAT_DAMAGED, 0);
	}
}

/* What deliver's answer means for an entry that was opened. */
static enum cjc_lookup_status delivered(const struct cjc_lookup_request *q,
					const struct cjc_entry *e,
					const struct cjc_manifest_record *rec, struct cjc_buf *why)
{
	if (cjc_sign_check_local_entry(e, q->trusted_keys, why))
		return CJC_LOOKUP_UNTRUSTED;
	int rc = q->deliver(q->ctx, e, rec, why);
	if (!rc)
		return CJC_LOOKUP_HIT;
	if (rc == CJC_LOOKUP_UNWRITTEN)
		return CJC_LOOKUP_NOT_WRITTEN;
	return access(e->dir, F_OK) && errno == ENOENT ? CJC_LOOKUP_EVICTED : CJC_LOOKUP_DAMAGED;
}

/* Serves the entry rec names, from the store or (staged) a staging. */
static enum cjc_lookup_status serve(const struct cjc_lookup_request *q,
				    const struct cjc_manifest_record *rec,
				    struct cjc_staging *staged, struct cjc_lookup_result *out)
{
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	const char *key = rec->entry_key;
	if (q->store && cjc_store_is_unsound(q->store, key)) {
		not_served(q, CJC_LOOKUP_UNSOUND, key, "", out);
		return out->status = CJC_LOOKUP_UNSOUND;
	}
	enum cjc_lookup found = staged ? cjc_staging_open_entry(staged, key, &e, &why)
				       : cjc_store_open_entry(q->store, key, &e, &why);
	enum cjc_lookup_status st = found == CJC_ENTRY_ABSENT ? CJC_LOOKUP_ABSENT
		: found == CJC_ENTRY_DAMAGED ? CJC_LOOKUP_DAMAGED : delivered(q, &e, rec, &why);
	if (st == CJC_LOOKUP_HIT) {
		if (q->touch && !staged)
			cjc_evict_touch(&e);
		q->count(q->events, CJC_STAT_HITS, (uint64_t)e.duration_ms);
		out->duration_ms = e.duration_ms;
		memcpy(out->entry_key, key, CJC_HEX_LEN + 1);
	} else {
		not_served(q, st, key, why.data ? why.data : "", out);
	}
	if (found == CJC_ENTRY_FOUND)
		cjc_entry_release(&e);
	cjc_buf_release(&why);
	return out->status = st;
}

enum cjc_lookup_status cjc_lookup_entry(const struct cjc_lookup_request *q,
					const struct cjc_manifest_record *rec,
					struct cjc_lookup_result *out)
{
	return serve(q, rec, NULL, out);
}

/* A hit keeps the record served: moved out of m, which the caller releases. */
static void keep_record(struct cjc_manifest *m, long i, struct cjc_lookup_result *out)
{
	out->rec = m->recs[i];
	memset(&m->recs[i], 0, sizeof m->recs[i]);
}

enum cjc_lookup_status cjc_lookup_local(const struct cjc_lookup_request *q,
					struct cjc_lookup_result *out)
{
	struct cjc_manifest m;
	char *name = cjc_store_manifest_name(q->direct_key);
	int unread = cjc_manifest_read(q->store, name, &m);
	if (unread && errno != ENOENT)
		note(q, "unusable manifest %s: %s; ignored", name,
		     errno == EBADMSG ? "damaged" : cjc_untrusted_error(errno));
	free(name);
	if (unread) {
		set_why(out, cjc_xstrdup("nothing was cached with these arguments, source, compiler "
					 "and environment"));
		return out->status = CJC_LOOKUP_NO_MANIFEST;
	}
	set_why(out, cjc_xstrdup("no entry matches the current dependencies"));
	long i = q->match(q->ctx, &m);
	enum cjc_lookup_status st = i >= 0 ? serve(q, &m.recs[i], NULL, out) : CJC_LOOKUP_NO_MATCH;
	if (st == CJC_LOOKUP_HIT)
		keep_record(&m, i, out);
	cjc_manifest_release(&m);
	return out->status = st;
}

/* remote_only: the entry fetched into a staging, served from it, removed. */
static enum cjc_lookup_status remote_staged(const struct cjc_lookup_request *q,
					    struct cjc_lookup_result *out)
{
	struct cjc_manifest_record rec = { 0 };
	struct cjc_staging staged = { 0 };
	if (cjc_remote_fetch_unpublished(q->remotes, q->direct_key, q->match, q->ctx, &rec,
					 &staged))
		return out->status = CJC_LOOKUP_NO_REMOTE;
	enum cjc_lookup_status st = serve(q, &rec, &staged, out);
	cjc_staging_abort(&staged);
	if (st == CJC_LOOKUP_HIT)
		out->rec = rec;
	else
		cjc_manifest_record_release(&rec);
	return st;
}

enum cjc_lookup_status cjc_lookup_remote(const struct cjc_lookup_request *q,
					 struct cjc_lookup_result *out)
{
	if (!q->remotes)
		return out->status = CJC_LOOKUP_NO_REMOTE;
	if (q->remote_only)
		return remote_staged(q, out);
	struct cjc_manifest_record rec = { 0 };
	uint64_t bytes = 0;
	if (cjc_remote_fetch(q->remotes, q->direct_key, q->match, q->ctx, &rec, &bytes))
		return out->status = CJC_LOOKUP_NO_REMOTE;
	struct cjc_publish p = { .store = q->store, .key = rec.entry_key, .max_size = q->max_size,
				 .note = q->note, .ctx = q->events };
	if (bytes)
		cjc_publish_keep_within_limit(&p, bytes);
	enum cjc_lookup_status st = serve(q, &rec, NULL, out);
	if (st == CJC_LOOKUP_HIT)
		out->rec = rec;
	else
		cjc_manifest_record_release(&rec);
	return st;
}

void cjc_lookup_result_release(struct cjc_lookup_result *r)
{
	cjc_manifest_record_release(&r->rec);
	free(r->why);
	memset(r, 0, sizeof *r);
}
