#include "compile/publish.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/evict.h"
#include "store/index.h"
#include "store/records.h"
#include "store/sign.h"

/* Says a line through to (the caller's note or warn). */
static void say(const struct cjc_publish *p, void (*to)(void *, const char *), const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(const struct cjc_publish *p, void (*to)(void *, const char *), const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *line = cjc_xvasprintf(fmt, ap);
	va_end(ap);
	to(p->ctx, line);
	free(line);
}

/* Stages the artifact and what came with it; 0 or -1 (errno, or why). */
static int stage(const struct cjc_publish *p, struct cjc_staging *st, struct cjc_buf *why)
{
	int rc = p->artifact_path ? cjc_staging_add_file(st, p->artifact, p->artifact_path)
				  : cjc_staging_add_data(st, p->artifact, p->artifact_data,
							 p->artifact_size);
	if (!rc && p->out && p->out->len)
		rc = cjc_staging_add_data(st, "stdout", p->out->data, p->out->len);
	if (!rc && p->err && p->err->len)
		rc = cjc_staging_add_data(st, "stderr", p->err->data, p->err->len);
	for (size_t i = 0; !rc && i < p->nextra; i++)
		rc = cjc_staging_add_data(st, p->extra[i].name, p->extra[i].data, p->extra[i].size);
	if (!rc && p->diag && cjc_diagnostics_stage(p->diag, p->keep_dir, p->output, p->ext, st, why))
		rc = -1;
	return rc;
}

/* metadata.json of the staged files (st->index_doc: the caller releases it). */
static int format_metadata(const struct cjc_publish *p, struct cjc_staging *st,
			   struct cjc_buf *meta)
{
	struct cjc_metadata md = *p->md;
	md.key = p->key;
	md.files = st->files;
	md.nfiles = st->nfiles;
	return cjc_metadata_format(&md, meta, &st->index_doc);
}

/* With sign_key, the entry's signature (sign.h); a key that cannot sign is
 * said, and the entry goes unsigned. */
static void sign(const struct cjc_publish *p, const struct cjc_buf *meta, struct cjc_buf *sig)
{
	struct cjc_buf why = CJC_BUF_INIT;
	if (p->sign_key && cjc_sign(p->sign_key, meta->data, meta->len, sig, &why)) {
		say(p, p->warn, "sign_key (%s): %s; the entry is published unsigned", p->sign_setting,
			why.data);
		cjc_buf_reset(sig);
	}
	cjc_buf_release(&why);
}

/* The artifacts' bytes as stored (metadata.json's: st->metadata_size, once written). */
static uint64_t staged_bytes(const struct cjc_staging *st)
{
	uint64_t n = 0;
	for (size_t i = 0; i < st->nfiles; i++)
		n += cjc_artifact_stored_size(&st->files[i]);
	return n;
}

void cjc_publish_keep_within_limit(const struct cjc_publish *p, uint64_t bytes)
{
	struct cjc_evict_report r;
	if (cjc_evict_published(p->store, p->key, bytes, p->max_size, &r))
		say(p, p->note, "eviction failed: %s", strerror(errno));
	else if (r.evicted)
		say(p, p->note, "evicted %llu entries (%llu bytes) to stay under max_size",
			(unsigned long long)r.evicted, (unsigned long long)r.evicted_bytes);
}

/* Records the entry in its direct key's manifest; 0 or -1 (noted). */
static int record(const struct cjc_publish *p)
{
	if (!p->direct_key || !p->rec)
		return 0;
	char *name = cjc_store_manifest_name(p->direct_key);
	int rc = cjc_manifest_add(p->store, name, p->rec);
	if (rc)
		say(p, p->note, "cannot update manifest %s: %s", name, cjc_untrusted_error(errno));
	free(name);
	return rc;
}

enum cjc_published cjc_publish(const struct cjc_publish *p, bool *won)
{
	struct cjc_staging st;
	struct cjc_buf meta = CJC_BUF_INIT, sig = CJC_BUF_INIT, why = CJC_BUF_INIT;
	*won = false;
	int rc = cjc_staging_begin_as(p->store, &st, p->unpublished != NULL);
	st.published = cjc_index_published; /* the store's index, told here (index.h) */
	if (!rc)
		rc = stage(p, &st, &why);
	if (!rc)
		rc = format_metadata(p, &st, &meta);
	if (!rc)
		sign(p, &meta, &sig);
	uint64_t bytes = staged_bytes(&st);
	json_t *doc = st.index_doc;
	if (!rc && p->unpublished)
		rc = cjc_staging_finish(&st, &meta, &sig);
	else if (!rc)
		rc = cjc_staging_publish(p->store, &st, p->key, &meta, &sig, won);
	json_decref(doc);
	enum cjc_published result = CJC_PUBLISH_FAILED;
	if (!rc && p->unpublished) {
		*p->unpublished = st;
		p->unpublished->index_doc = NULL;
		result = CJC_STAGED;
	} else if (rc) {
		say(p, p->note, "cannot publish %s: %s", p->key, why.len ? why.data : strerror(errno));
		cjc_staging_abort(&st);
	} else {
		say(p, p->note, "%s %s for %s", *won ? "published" : "already published", p->key, p->what);
		if (*won)
			cjc_publish_keep_within_limit(p, bytes + st.metadata_size);
		result = record(p) ? CJC_PUBLISHED_NO_MANIFEST : CJC_PUBLISHED;
	}
	cjc_buf_release(&meta);
	cjc_buf_release(&sig);
	cjc_buf_release(&why);
	return result;
}
