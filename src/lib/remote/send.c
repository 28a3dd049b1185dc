/*
 * send.c - publishing a local entry to the remote stores (remote.h): its
 * artifacts that a store lacks, then its record (first writer wins, but
 * for a record whose artifact was found evicted), then the manifest
 * record naming it, merged into the store's manifest and signed as
 * remote.h says.
 */
#include "remote/remote.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/log.h"
#include "remote/layout.h"
#include "remote/remote_internal.h"
#include "store/sign.h"

/* A local entry as it is sent: its record and its artifacts' bytes. */
struct outgoing {
	struct cjc_entry e;
	struct cjc_buf record;
	struct cjc_buf combined; /* the combined value (layout.h), made when first needed */
	struct cjc_buf *data;    /* per artifact, read when first needed */
	bool vouched;         /* sign_key may sign the manifest record naming it */
};

static void outgoing_release(struct outgoing *o)
{
	for (size_t i = 0; o->data && i < o->e.nfiles; i++)
		cjc_buf_release(&o->data[i]);
	free(o->data);
	cjc_buf_release(&o->record);
	cjc_buf_release(&o->combined);
	cjc_entry_release(&o->e);
}

/* Reads a local entry (or one finished in st) and the signature it has, if any. */
static int outgoing_open(struct cjc_remotes *r, const char *key, const struct cjc_staging *st,
			 struct outgoing *o)
{
	struct cjc_buf meta = CJC_BUF_INIT, sig = CJC_BUF_INIT, why = CJC_BUF_INIT;
	memset(o, 0, sizeof *o);
	enum cjc_lookup found = st ? cjc_staging_open_entry(st, key, &o->e, &why)
				   : cjc_store_read_entry(r->local, key, &o->e, &why);
	int rc = found == CJC_ENTRY_FOUND ? 0 : -1;
	if (!rc)
		rc = cjc_entry_metadata_text(o->e.dfd, &meta, &why);
	/* the signature the entry has, if any: only the writer that made the
	 * metadata signs it (launcher.c), never a process that merely read it */
	if (!rc && cjc_read_bounded(o->e.dfd, CJC_SIGN_FILE, O_NOFOLLOW, CJC_SIGN_MAX, &sig))
		cjc_buf_reset(&sig);
	/* A record is as good as the entry it names, whose key is the hash of
	 * the record's files (key.h): so sign_key signs a record when its entry
	 * bears this writer's signature or a trusted key's (the writer's own
	 * compile; an upload of what it or a trusted writer made), and vouches
	 * for no file list someone else wrote into a shared store. */
	if (!rc && r->sign_key && sig.len) {
		struct cjc_buf unsigned_why = CJC_BUF_INIT;
		o->vouched = !cjc_sign_verify_writer(r->trusted_keys, r->sign_key, meta.data, meta.len,
						    sig.data, sig.len, &unsigned_why);
		cjc_buf_release(&unsigned_why);
	}
	if (!rc) {
		cjc_remote_encode_record(&meta, &sig, &o->record);
		o->data = cjc_xcalloc(o->e.nfiles, sizeof *o->data);
	} else {
		cjc_log("cannot send entry %s: %s", key, why.len ? why.data : strerror(errno));
	}
	cjc_buf_release(&meta);
	cjc_buf_release(&sig);
	cjc_buf_release(&why);
	return rc;
}

/* Artifact i's stored bytes, read once: 0, or -1 (logged). */
static int read_stored(struct outgoing *o, size_t i, const char *key)
{
	struct cjc_buf why = CJC_BUF_INIT;
	int rc = o->data[i].len
			 ? 0
			 : cjc_entry_read_stored(&o->e, o->e.files[i].name, &o->data[i], &why);
	if (rc)
		cjc_log("cannot send entry %s: %s", key, why.data);
	cjc_buf_release(&why);
	return rc;
}

/* The entry's combined value (layout.h): its record, and inline as many of
 * its artifacts as fit the bounds, in order (a reader fetches the others
 * by their hash, as it fetches all of an entry an older cjc sent). */
static struct cjc_buf *combined_value(struct outgoing *o, const char *key)
{
	struct cjc_remote_combined c = { .record = o->record.data, .record_len = o->record.len };
	size_t total = 0;
	if (o->combined.len)
		return &o->combined;
	for (size_t i = 0; i < o->e.nfiles; i++) {
		const struct cjc_artifact *a = &o->e.files[i];
		const char *sha = cjc_artifact_stored_sha(a);
		if (c.nfiles == CJC_REMOTE_INLINE_FILES ||
		    cjc_artifact_stored_size(a) > CJC_REMOTE_INLINE_MAX - total ||
		    cjc_remote_inline_find(&c, sha) || read_stored(o, i, key))
			continue;
		struct cjc_remote_inline *f = &c.files[c.nfiles++];
		snprintf(f->sha, sizeof f->sha, "%s", sha);
		f->p = o->data[i].data;
		f->n = o->data[i].len;
		total += f->n;
	}
	cjc_remote_encode_combined(&c, &o->combined);
	return &o->combined;
}

/* Sends the artifacts the store lacks, then the record, then (where the
 * store keeps them) the combined value: first writer wins.  But a record
 * whose artifact this compile found evicted is replaced by ours (nvcc's
 * bytes differ from run to run, so the lost artifact cannot be sent
 * again): else the entry would stay a miss for everyone.  The record is
 * still sent beside the combined value, for an older cjc. */
static int send_entry(struct cjc_remotes *r, struct remote_group *g, const char *key, struct outgoing *o)
{
	bool repair = !strcmp(g->broken, key);
	int rc = repair ? CJC_REMOTE_ABSENT : remote_exists(r, g, 'e', key);
	if (rc != CJC_REMOTE_ABSENT)
		return rc == CJC_REMOTE_OK ? 0 : -1;
	for (size_t i = 0; i < o->e.nfiles; i++) { /* every artifact, each on its own */
		const char *address = cjc_artifact_stored_sha(&o->e.files[i]); /* kept as stored */
		int there = remote_exists(r, g, 'c', address);
		if (there == CJC_REMOTE_OK)
			continue;
		if (there != CJC_REMOTE_ABSENT)
			return -1;
		there = read_stored(o, i, key) ? CJC_REMOTE_ERROR
					       : remote_put(r, g, 'c', address, true, &o->data[i]);
		if (there != CJC_REMOTE_OK)
			return -1; /* no record naming an artifact that is not there */
	}
	rc = remote_put(r, g, 'e', key, !repair, &o->record);
	if (rc == CJC_REMOTE_OK && g->combined)
		rc = remote_put(r, g, 'x', key, !repair, combined_value(o, key));
	return rc == CJC_REMOTE_OK ? 0 : -1;
}

/* The manifest value for direct_key: old's records with rec first, signed
 * when sign is set and the key can sign (else unsigned, as remote.h lays
 * out). */
static void encode_manifest(struct cjc_remotes *r, const char *direct_key,
			    const struct cjc_manifest *old, const struct cjc_manifest_record *rec,
			    bool sign, struct cjc_buf *out)
{
	struct cjc_buf file = CJC_BUF_INIT, sig = CJC_BUF_INIT, why = CJC_BUF_INIT;
	cjc_manifest_encode_file_with(old, rec, &file);
	if (sign && cjc_remote_manifest_sign(r->sign_key, direct_key, file.data, file.len, &sig, &why))
		cjc_log("manifest %s sent unsigned: %s", direct_key, why.data);
	cjc_remote_encode_manifest(file.data, file.len, sig.data, sig.len, out);
	cjc_buf_release(&file);
	cjc_buf_release(&sig);
	cjc_buf_release(&why);
}

static bool names_entry(const struct cjc_manifest *m, const char *entry_key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->recs[i].entry_key, entry_key))
			return true;
	return false;
}

/*
 * Merges rec into the store's manifest (a hint: a lost race costs a miss).
 * A writer that signs keeps the old records only when it may sign them
 * again (a trusted key or its own signed them), else replaces them.  One
 * that does not sign leaves a signed manifest as it is: an unsigned one in
 * its place would be of no use to any reader with trusted_keys.  Neither
 * writes a manifest that already names rec's entry (the entry key is the
 * hash of the record's files, so it is the same record) and is as it would
 * make it.
 */
static int send_manifest(struct cjc_remotes *r, struct remote_group *g, const char *direct_key,
			 const struct cjc_manifest_record *rec, bool sign)
{
	struct cjc_buf raw = CJC_BUF_INIT, out = CJC_BUF_INIT, why = CJC_BUF_INIT;
	struct cjc_manifest old = { 0 };
	const void *file = NULL, *sig = NULL;
	size_t file_len = 0, sig_len = 0;
	int rc = remote_get(r, g, 'm', direct_key, CJC_REMOTE_MANIFEST_MAX, &raw);
	bool damaged = rc == CJC_REMOTE_OK &&
		       (cjc_remote_decode_manifest(raw.data, raw.len, &file, &file_len, &sig, &sig_len) ||
			cjc_manifest_decode_file(file, file_len, &old));
	bool is_signed = rc == CJC_REMOTE_OK && !damaged && sig_len;
	bool vouched = is_signed && sign &&
		       !cjc_remote_manifest_verify(r->trusted_keys, r->sign_key, direct_key, file, file_len, sig,
					sig_len, &why);
	if (damaged || (sign && !vouched))
		cjc_manifest_release(&old); /* replaced */
	bool keep = sign ? vouched && names_entry(&old, rec->entry_key)
			 : is_signed || names_entry(&old, rec->entry_key);
	if ((rc == CJC_REMOTE_OK || rc == CJC_REMOTE_ABSENT) && !keep) {
		encode_manifest(r, direct_key, &old, rec, sign, &out);
		rc = remote_put(r, g, 'm', direct_key, false, &out);
	}
	cjc_manifest_release(&old);
	cjc_buf_release(&raw);
	cjc_buf_release(&out);
	cjc_buf_release(&why);
	return rc == CJC_REMOTE_OK ? 0 : -1;
}

static int send_everywhere(struct cjc_remotes *r, const char *entry_key, const char *direct_key,
			   const struct cjc_manifest_record *rec, const struct cjc_staging *st)
{
	struct outgoing o;
	int sent = 0;
	if (!r || outgoing_open(r, entry_key, st, &o))
		return 0;
	for (size_t i = 0; i < r->n; i++) {
		struct remote_group *g = &r->groups[i];
		if (g->read_only || send_entry(r, g, entry_key, &o))
			continue;
		bool sign = o.vouched && rec && !strcmp(rec->entry_key, entry_key);
		if (!rec || !send_manifest(r, g, direct_key, rec, sign))
			sent++;
	}
	outgoing_release(&o);
	return sent;
}

int cjc_remote_publish(struct cjc_remotes *r, const char *entry_key, const char *direct_key,
		       const struct cjc_manifest_record *rec)
{
	return send_everywhere(r, entry_key, direct_key, rec, NULL);
}

int cjc_remote_publish_staged(struct cjc_remotes *r, const struct cjc_staging *st,
			      const char *entry_key, const char *direct_key,
			      const struct cjc_manifest_record *rec)
{
	return send_everywhere(r, entry_key, direct_key, rec, st);
}
