/*
 * remote_oci.c - the OCI registry backend (remote.h), through libcurl:
 * any registry of the OCI Distribution Spec (GHCR, GitLab's, Harbor,
 * Artifactory, ECR, ACR, a plain registry:2).  docs/remote.md#oci-registries.
 *
 *     oci://[USER[:PASSWORD]@]HOST[:PORT]/NAMESPACE/REPO        (https)
 *     oci+http://[USER[:PASSWORD]@]HOST[:PORT]/NAMESPACE/REPO   (plain http)
 *
 * The layout (remote.h) in the repository NAMESPACE/REPO:
 *   NS/c/<sha256>  the blob sha256:<hex>, which the registry keeps by its
 *                  digest; a get checks the bytes' SHA-256 against it.
 *   NS/e/<key>     an OCI image manifest tagged "<NS, '/' as '.'>.e.<key>",
 *   NS/m/<key>     and ".m.<key>": artifactType application/vnd.cudajitcache.
 *                  entry.v1 (manifest.v1), the OCI empty config, and layers:
 *                  first the value itself, as a blob and, when small,
 *                  embedded too (so a get is one request), deflated and
 *                  base64'd in the layer's annotation org.cudajitcache.
 *                  deflate (a reader takes OCI 1.1's `data` as well); then,
 *                  for an entry record, one layer per artifact its
 *                  metadata lists, so the registry keeps them with it and
 *                  shows them (small ones embedded: the shelf, below);
 *                  for a direct-mode manifest, the record of the
 *                  entry its newest record names, and that entry's
 *                  artifacts, when this process just wrote them (a layer
 *                  of the record's type, annotated with the entry key),
 *                  embedded when they fit, else named (a reader fetches
 *                  their blobs at once with the value's: get_at_once), so
 *                  that a hit on an empty local store is one request for
 *                  a small entry, two round trips for a large one.
 * A value's blob is uploaded (POST, then PUT to the Location with
 * ?digest=) only when a HEAD says it is not there.  A put-if-absent HEADs
 * the tag first; two writers racing past it may both write, each a valid
 * record of the key.  The m/ manifest is replaced on put (remote.c merges).
 * No leases: a registry has no atomic create (leases stay on a Redis or
 * HTTP store listed beside this one).
 *
 * Authentication as registries do it: anonymous first; a 401's
 * WWW-Authenticate says Basic (the credentials are sent from then on) or
 * Bearer realm=,service=,scope= (a token fetched from the realm, with the
 * basic credentials if any, cached for its expires_in per scope, pull or
 * push), and the request is sent again once.  Credentials: the URL's user
 * info, the store's credentials-file=F (one line USER:SECRET), or
 * bearer-token-file=F (a ready token, sent as it is).  A TLS store sends
 * credentials only over https (a realm or an upload Location on plain http
 * is refused).  They go to the registry and to the token server its own
 * 401 names (as every registry client does: a registry could as well ask
 * for them itself), never to a host a redirect leads to (libcurl drops
 * them, and a 401 from there is not answered: a storage host cannot name
 * a realm) nor to an upload Location elsewhere.  No message holds a
 * secret.  Every request, the token's included, ends at the deadline
 * remote.c set; every body is read up to its bound.
 */
#include "remote/curl.h"
#include "remote/oci.h"
#include "remote/layout.h"
#include "remote/remote_backend.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "base/fs.h"
#include "keys/manifest.h"
#include "keys/metadata.h"

#define MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_EMPTY "application/vnd.oci.empty.v1+json"
#define EMPTY_HEX "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
#define MT_ARTIFACT "application/vnd.cudajitcache.artifact.v1"
#define MT_RECORD "application/vnd.cudajitcache.record.v1"
#define ENTRY_ANNOTATION "org.cudajitcache.entry"
#define DEFLATE_ANNOTATION "org.cudajitcache.deflate"
#define TOKEN_REPLY_MAX (64 * 1024)
#define HEADER_MAX 4096
#define ERROR_BODY_MAX 512
#define EMBED_MAX CJC_OCI_EMBED_MAX
#define MANIFEST_READ_MAX ((size_t)512 << 10) /* EMBED_MAX base64'd, and the layers */
/* What a manifest written here embeds, deflated and base64'd, its value's
 * and the others' together: a registry parses a manifest on each GET, and
 * one of 400 KiB took it 21 ms against 11 ms for a blob of 500 KiB
 * (docker-registry 2.8), so large values go as blobs only.  Embedded
 * values are deflated because the GET costs with the manifest's size: one
 * of 114 KiB 8-13 ms, of 56 KiB 7.5-11, of 21 KiB 5-6 (htpasswd); a light
 * entry's hit, its direct-mode manifest (43 KiB), record (32 KiB) and
 * object (10 KiB) deflated to 33 KiB of text, is one small request. */
#define EMBED_WRITE_MAX ((size_t)128 << 10)
#define MAX_REDIRS 3L
#define FETCH_AT_ONCE 8 /* blobs fetched at once: a value's and its entry's */
#define MULTI_CONNECTIONS 4L /* the connections those keep open (a helper pools 64 backends) */

/* What a manifest of each kind says it is, and its value's layer. */
static const struct kind {
	char letter;
	const char *artifact_type, *layer_type;
} kinds[] = {
	{ 'e', "application/vnd.cudajitcache.entry.v1", MT_RECORD },
	{ 'm', "application/vnd.cudajitcache.manifest.v1", "application/vnd.cudajitcache.manifest.v1" },
};

static const struct kind *kind_of(char letter)
{
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		if (kinds[i].letter == letter)
			return &kinds[i];
	return NULL;
}

/* --- base64 ------------------------------------------------------------- */

/* OpenSSL's, made strict: EVP_DecodeBlock takes blanks at either end and
 * bits past the end, so what it decodes must encode back to the text. */
void cjc_base64_encode(const void *p, size_t n, struct cjc_buf *out)
{
	size_t len = (n + 2) / 3 * 4;
	cjc_buf_grow(out, len + 1);
	EVP_EncodeBlock((unsigned char *)out->data + out->len, p, (int)n);
	out->len += len;
	out->data[out->len] = '\0';
}

int cjc_base64_decode(const char *text, size_t len, struct cjc_buf *out)
{
	if (len % 4 || len > INT_MAX)
		return -1;
	size_t pad = len && text[len - 1] == '=' ? 1 + (text[len - 2] == '=') : 0;
	size_t n = len / 4 * 3 - pad, at = out->len;
	cjc_buf_grow(out, len / 4 * 3 + 1);
	if (EVP_DecodeBlock((unsigned char *)out->data + at, (const unsigned char *)text, (int)len) < 0)
		return -1;
	struct cjc_buf again = CJC_BUF_INIT;
	cjc_base64_encode(out->data + at, n, &again);
	bool same = again.len == len && !memcmp(again.data, text, len);
	cjc_buf_release(&again);
	if (!same)
		return -1;
	out->len = at + n;
	out->data[out->len] = '\0';
	return 0;
}

/* --- the manifests -------------------------------------------------------- */

/* A descriptor's digest "sha256:<hex>" and size (1 to max): 0, or -1. */
static int descriptor_of(json_t *d, size_t max, char hex[CJC_HEX_LEN + 1], uint64_t *size)
{
	const char *digest = json_string_value(json_object_get(d, "digest"));
	json_t *sz = json_object_get(d, "size");
	if (!digest || !cjc_starts_with(digest, "sha256:") || !cjc_is_hex64(digest + 7) ||
	    !json_is_integer(sz) || json_integer_value(sz) < 1 ||
	    (uint64_t)json_integer_value(sz) > max)
		return -1;
	memcpy(hex, digest + 7, CJC_HEX_LEN + 1);
	*size = (uint64_t)json_integer_value(sz);
	return 0;
}

static int not_ours(struct cjc_buf *why, const char *what)
{
	cjc_buf_addf(why, "not a manifest of ours: %s", what);
	return -1;
}

/* size bytes (1 to EMBED_MAX), deflated (zlib) and base64'd in text,
 * appended to out: 0, or -1 when text is not exactly that. */
static int inflate_into(const char *text, size_t len, uint64_t size, struct cjc_buf *out)
{
	struct cjc_buf z = CJC_BUF_INIT;
	int rc = -1;
	if (!cjc_base64_decode(text, len, &z)) {
		cjc_buf_grow(out, size);
		uLongf n = (uLongf)size;
		uLong used = (uLong)z.len;
		if (uncompress2((Bytef *)out->data + out->len, &n, (const Bytef *)z.data, &used) == Z_OK &&
		    n == size && used == z.len) {
			out->len += size;
			out->data[out->len] = '\0';
			rc = 0;
		}
	}
	cjc_buf_release(&z);
	return rc;
}

/* Whether a layer embeds bytes, right or not. */
static bool embeds(json_t *layer)
{
	return json_object_get(layer, "data") ||
	       json_object_get(json_object_get(layer, "annotations"), DEFLATE_ANNOTATION);
}

/* The bytes a layer embeds, size of them, appended to out: in its `data`
 * (OCI 1.1, base64), or as this writes them, deflated and base64'd in our
 * annotation.  1 when it embeds none; 0; -1 when what it embeds is not
 * size bytes (at most EMBED_MAX) in either form, or is in both. */
static int embedded(json_t *layer, uint64_t size, struct cjc_buf *out)
{
	json_t *data = json_object_get(layer, "data");
	json_t *z = json_object_get(json_object_get(layer, "annotations"), DEFLATE_ANNOTATION);
	if (!data && !z)
		return 1;
	if (size > EMBED_MAX || (data && z) || !json_is_string(data ? data : z))
		return -1;
	if (z)
		return inflate_into(json_string_value(z), json_string_length(z), size, out);
	size_t at = out->len;
	if (json_string_length(data) != (size + 2) / 3 * 4 ||
	    cjc_base64_decode(json_string_value(data), json_string_length(data), out))
		return -1;
	return out->len - at == size ? 0 : -1;
}

/* The bytes a layer embeds (appended to out) and their SHA-256 (hex), when
 * they are what it says, size of them at most max: 0; 1 when it embeds
 * none (size is then what it says); -1. */
static int layer_value(json_t *l, size_t max, char hex[CJC_HEX_LEN + 1], uint64_t *size,
		       struct cjc_buf *out)
{
	char got[CJC_HEX_LEN + 1];
	size_t at = out->len;
	if (descriptor_of(l, max, hex, size))
		return -1;
	int rc = embedded(l, *size, out);
	if (!rc && (cjc_hash_buf_hex(out->data + at, out->len - at, got), strcmp(got, hex)))
		rc = -1;
	if (rc < 0 && out->data) {
		out->len = at;
		out->data[at] = '\0';
	}
	return rc;
}

/* Each layer after the first that is an artifact or (in a direct-mode
 * manifest) an entry's record and the key it is annotated with, to each:
 * with its bytes when it embeds them and they are what the layer says,
 * else (embedding none) its digest and size alone.  At most EMBED_MAX
 * embedded in all, total of it taken by the first layer: every layer that
 * embeds bytes is charged its size, whether they then prove right or not,
 * so a manifest makes no more than that inflated. */
static void layers_after(json_t *layers, char kind, size_t total, cjc_oci_layer_fn each, void *ctx)
{
	for (size_t i = 1; each && i < json_array_size(layers); i++) {
		json_t *l = json_array_get(layers, i);
		const char *lt = json_string_value(json_object_get(l, "mediaType"));
		const char *key = json_string_value(
			json_object_get(json_object_get(l, "annotations"), ENTRY_ANNOTATION));
		bool record = kind == 'm' && lt && !strcmp(lt, MT_RECORD) && key && cjc_is_hex64(key);
		char hex[CJC_HEX_LEN + 1];
		uint64_t size = 0;
		if (!lt || (!record && strcmp(lt, MT_ARTIFACT)))
			continue;
		if (!embeds(l)) {
			if (!descriptor_of(l, SIZE_MAX, hex, &size))
				each(hex, record ? key : NULL, NULL, size, ctx);
			continue;
		}
		struct cjc_buf bytes = CJC_BUF_INIT;
		int rc = layer_value(l, EMBED_MAX - total, hex, &size, &bytes);
		total += size; /* what it made inflate counts, refused or not */
		if (!rc)
			each(hex, record ? key : NULL, bytes.data, bytes.len, ctx);
		cjc_buf_release(&bytes);
	}
}

int cjc_oci_manifest_value(const char *text, size_t len, char kind, size_t max,
			   struct cjc_buf *out, char hex[CJC_HEX_LEN + 1], uint64_t *size,
			   cjc_oci_layer_fn each, void *ctx, struct cjc_buf *why)
{
	const struct kind *k = kind_of(kind);
	json_t *root = k ? json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *layers = json_object_get(root, "layers");
	json_t *first = json_array_get(layers, 0);
	json_t *sv = json_object_get(root, "schemaVersion");
	const char *mt = json_string_value(json_object_get(root, "mediaType"));
	const char *at = json_string_value(json_object_get(root, "artifactType"));
	const char *lt = json_string_value(json_object_get(first, "mediaType"));
	int rc;
	if (!json_is_object(root))
		rc = not_ours(why, "not a JSON object");
	else if (!json_is_integer(sv) || json_integer_value(sv) != 2 || !mt || strcmp(mt, MT_MANIFEST))
		rc = not_ours(why, "not an OCI image manifest");
	else if (!at || strcmp(at, k->artifact_type) || !lt || strcmp(lt, k->layer_type))
		rc = not_ours(why, "another artifactType or layer");
	else if (descriptor_of(first, max, hex, size))
		rc = not_ours(why, "a bad layer digest or size");
	else if ((rc = layer_value(first, max, hex, size, out)) < 0)
		cjc_buf_adds(why, "a layer's embedded data differs from its digest or size");
	if (rc >= 0)
		layers_after(layers, kind, rc ? 0 : *size, each, ctx);
	json_decref(root);
	return rc;
}

/* --- the shelf: values carried in or named by another's manifest --------
 *
 * An entry's manifest embeds its artifacts' bytes too (EMBED_WRITE_MAX
 * with the record), and a direct-mode manifest the record of its newest
 * entry and that entry's artifacts, so that a hit on
 * an empty local store of a small entry is one request (the direct-mode
 * manifest), not three; those too large are named, and fetched at once
 * with the manifest's value (get_at_once).  The bytes travel through this
 * process-wide shelf, bounded and short-lived: a blob or an entry's record
 * this process just wrote waits there for the manifest that embeds or
 * names it, and an embedded or fetched one checked against its layer's
 * digest waits for the get of that blob or
 * entry, which takes it.  Only bytes whose SHA-256 their layer names are
 * shelved, and a get still checks them (remote.c: an artifact against the
 * entry's metadata, a record by its metadata naming the key asked for). */
#define SHELF_SLOTS 64
#define SHELF_LIFE_MS 60000
#define SHELF_ITEM_MAX ((size_t)1 << 20)
#define SHELF_BYTES_MAX ((size_t)32 << 20) /* in all: the slots that end first make room */

static struct shelved {
	char name[CJC_HEX_LEN + 3]; /* a blob's hex, or "e:" and an entry key; "" when free */
	struct cjc_buf bytes;
	int64_t until_ms;
} shelf[SHELF_SLOTS];
static size_t shelf_bytes; /* what the slots hold */
static pthread_mutex_t shelf_lock = PTHREAD_MUTEX_INITIALIZER;

/* The shelf's name of a blob (entry_key NULL) or of an entry's record. */
static void shelf_name(const char *hex, const char *entry_key, char name[CJC_HEX_LEN + 3])
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
static void shelf_put(const char *hex, const char *entry_key, const void *p, size_t n)
{
	if (n > SHELF_ITEM_MAX)
		return;
	char name[CJC_HEX_LEN + 3];
	shelf_name(hex, entry_key, name);
	int64_t now = cjc_now_ms();
	pthread_mutex_lock(&shelf_lock);
	struct shelved *slot = shelf_slot(name, n, now);
	slot->bytes.data = cjc_xmalloc(n + 1); /* its size, not a power of two */
	memcpy(slot->bytes.data, p, n);
	slot->bytes.data[n] = '\0';
	slot->bytes.len = n;
	slot->bytes.cap = n + 1;
	shelf_bytes += n;
	memcpy(slot->name, name, sizeof slot->name);
	slot->until_ms = now + SHELF_LIFE_MS;
	pthread_mutex_unlock(&shelf_lock);
}

/* A copy of the shelved bytes of name, at most max, into out: whether there. */
static bool shelf_copy(const char *name, uint64_t max, struct cjc_buf *out)
{
	pthread_mutex_lock(&shelf_lock);
	struct shelved *s = shelf_find(name, cjc_now_ms());
	bool there = s && s->bytes.len <= max;
	if (there)
		cjc_buf_add(out, s->bytes.data, s->bytes.len);
	pthread_mutex_unlock(&shelf_lock);
	return there;
}

static bool shelf_has(const char *name)
{
	pthread_mutex_lock(&shelf_lock);
	bool there = shelf_find(name, cjc_now_ms()) != NULL;
	pthread_mutex_unlock(&shelf_lock);
	return there;
}

/* The same, taking them off the shelf (a get serves them once). */
static bool shelf_take(const char *name, size_t max, struct cjc_buf *out)
{
	pthread_mutex_lock(&shelf_lock);
	struct shelved *s = shelf_find(name, cjc_now_ms());
	bool there = s && s->bytes.len <= max;
	if (there) {
		cjc_buf_add(out, s->bytes.data, s->bytes.len);
		shelf_clear(s);
	}
	pthread_mutex_unlock(&shelf_lock);
	return there;
}

static json_t *descriptor(const char *media_type, const char *hex, uint64_t size)
{
	char digest[8 + CJC_HEX_LEN];
	snprintf(digest, sizeof digest, "sha256:%s", hex);
	return json_pack("{s:s, s:s, s:I}", "mediaType", media_type, "digest", digest, "size",
			 (json_int_t)size);
}

/* What a manifest written here may still embed: its text (deflated and
 * base64'd), and the bytes once inflated (what a reader takes). */
struct budget {
	size_t text, bytes;
};

/* Embeds p's n bytes in layer, deflated and base64'd in our annotation,
 * when they fit b (NULL: nothing fits): whether it did. */
static bool embed(json_t *layer, const void *p, size_t n, struct budget *b)
{
	if (!b || n > b->bytes)
		return false;
	uLongf zn = compressBound((uLong)n);
	unsigned char *z = cjc_xmalloc(zn);
	bool fits = compress2(z, &zn, p, (uLong)n, Z_DEFAULT_COMPRESSION) == Z_OK &&
		    (zn + 2) / 3 * 4 <= b->text;
	if (fits) {
		struct cjc_buf text = CJC_BUF_INIT;
		cjc_base64_encode(z, zn, &text);
		json_t *notes = json_object_get(layer, "annotations");
		if (!notes)
			json_object_set_new(layer, "annotations", notes = json_object());
		json_object_set_new(notes, DEFLATE_ANNOTATION, json_stringn(text.data, text.len));
		b->text -= text.len;
		b->bytes -= n;
		cjc_buf_release(&text);
	}
	free(z);
	return fits;
}

/* A layer per artifact the entry record (of key) lists, embedding those on
 * the shelf that fit b (NULL: none). */
static void add_artifacts(json_t *layers, const void *record, size_t n, const char *key,
			  struct budget *b)
{
	struct cjc_buf meta = CJC_BUF_INIT, sig = CJC_BUF_INIT, why = CJC_BUF_INIT;
	json_t *doc = !cjc_remote_decode_record(record, n, &meta, &sig)
			      ? cjc_metadata_parse(meta.data, meta.len, key, &why) : NULL;
	size_t nfiles = 0;
	struct cjc_artifact *files = doc ? cjc_metadata_artifacts(doc, &nfiles) : NULL;
	for (size_t i = 0; i < nfiles; i++) {
		struct cjc_buf bytes = CJC_BUF_INIT;
		json_t *layer = descriptor(MT_ARTIFACT, files[i].sha256, files[i].size);
		if (b && files[i].size <= b->bytes &&
		    shelf_copy(files[i].sha256, files[i].size, &bytes) && bytes.len == files[i].size)
			embed(layer, bytes.data, bytes.len, b);
		json_array_append_new(layers, layer);
		cjc_buf_release(&bytes);
	}
	cjc_artifacts_free(files, nfiles);
	json_decref(doc);
	cjc_buf_release(&meta);
	cjc_buf_release(&sig);
	cjc_buf_release(&why);
}

/* For a direct-mode manifest (its value p): the record of the entry its
 * newest record names, and that entry's artifacts, when this process just
 * wrote them (the shelf): named, so that a reader fetches them with the
 * value (get_at_once), and embedded as b still allows (NULL: none). */
static void add_entry(json_t *layers, const void *p, size_t n, struct budget *b)
{
	const void *file, *sig;
	size_t file_len, sig_len;
	struct cjc_manifest m = { 0 };
	if (cjc_remote_decode_manifest(p, n, &file, &file_len, &sig, &sig_len) ||
	    cjc_manifest_decode_file(file, file_len, &m) || !m.n)
		return cjc_manifest_release(&m);
	char name[CJC_HEX_LEN + 3], hex[CJC_HEX_LEN + 1];
	struct cjc_buf record = CJC_BUF_INIT;
	shelf_name(NULL, m.recs[0].entry_key, name);
	if (shelf_copy(name, SHELF_ITEM_MAX, &record) && record.len) {
		cjc_hash_buf_hex(record.data, record.len, hex);
		json_t *layer = descriptor(MT_RECORD, hex, record.len);
		json_object_set_new(layer, "annotations",
				    json_pack("{s:s}", ENTRY_ANNOTATION, m.recs[0].entry_key));
		bool with = embed(layer, record.data, record.len, b);
		json_array_append_new(layers, layer);
		add_artifacts(layers, record.data, record.len, m.recs[0].entry_key, with ? b : NULL);
	}
	cjc_buf_release(&record);
	cjc_manifest_release(&m);
}

/* The manifest carrying value (of the given SHA-256) for kind: for an
 * entry record, a layer per artifact its metadata lists (key: the entry
 * key); for a direct-mode manifest, its newest entry (add_entry).  What
 * fits is embedded, the value first; the others only when it was. */
static char *manifest_for(const struct kind *k, const char *key, const void *p, size_t n,
			  const char *hex)
{
	json_t *config = descriptor(MT_EMPTY, EMPTY_HEX, 2);
	json_object_set_new(config, "data", json_string("e30="));
	json_t *layers = json_array(), *value = descriptor(k->layer_type, hex, n);
	struct budget b = { EMBED_WRITE_MAX, EMBED_MAX };
	bool with = embed(value, p, n, &b);
	json_array_append_new(layers, value);
	if (k->letter == 'e')
		add_artifacts(layers, p, n, key, with ? &b : NULL);
	else
		add_entry(layers, p, n, with ? &b : NULL);
	json_t *m = json_pack("{s:i, s:s, s:s, s:o, s:o}", "schemaVersion", 2, "mediaType",
			      MT_MANIFEST, "artifactType", k->artifact_type, "config", config,
			      "layers", layers);
	char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	return text;
}

/* --- libcurl ---------------------------------------------------------------- */

/* --- the backend ------------------------------------------------------------ */

enum scope { PULL, PUSH, NSCOPES };
static const char *const scope_actions[NSCOPES] = { "pull", "pull,push" };

struct token {
	char *value;
	int64_t expires_ms;
};

/* What a registry asked for, kept for the process across the store's
 * backends: remote.c closes a backend before nvcc runs (cjc_remote_hang_up)
 * and opens another after it, and a helper keeps a pool of them.  Keyed
 * by a hash of the registry, the repository and the credentials; read and
 * written under auth_lock. */
struct auth {
	char key[CJC_HEX_LEN + 1]; /* "" when free */
	bool basic;                /* the registry asked for basic credentials */
	char *realm, *service;     /* the token server it named, once it did */
	struct token tokens[NSCOPES];
};
#define NAUTH 8
static struct auth auths[NAUTH];
static pthread_mutex_t auth_lock = PTHREAD_MUTEX_INITIALIZER;

static void auth_free(struct auth *a)
{
	free(a->realm);
	free(a->service);
	for (int s = 0; s < NSCOPES; s++)
		cjc_curl_free_secret(a->tokens[s].value);
	free(a);
}

struct cjc_remote_backend {
	CURL *curl;
	char *origin; /* http(s)://HOST[:PORT] */
	char *repo;
	char *user, *password; /* basic credentials, or NULL */
	char *bearer;          /* bearer-token-file's ready token, or NULL */
	char *ca_file;
	bool tls;
	struct auth *auth;        /* in auths, or own when they are all taken */
	struct auth *own;
	char absent[CJC_HEX_LEN + 1]; /* the blob the last exists found absent */
	bool empty_there;         /* the empty config blob is in the repository */
	bool merging;             /* an entry record was just put: the next get of a
				   * direct-mode manifest is its writer's, to merge */
	const struct cjc_remote_url *u;
	char error[CURL_ERROR_SIZE];
	CURLM *multi;                /* blobs fetched at once (get_at_once), */
	CURL *side[FETCH_AT_ONCE];   /* on handles of their own */
};

static void backend_free(struct cjc_remote_backend *b)
{
	if (b->curl)
		cjc_curl.easy_cleanup(b->curl);
	for (size_t i = 0; i < FETCH_AT_ONCE; i++)
		if (b->side[i])
			cjc_curl.easy_cleanup(b->side[i]);
	if (b->multi)
		cjc_curl.multi_cleanup(b->multi);
	free(b->origin);
	free(b->repo);
	free(b->user);
	cjc_curl_free_secret(b->password);
	cjc_curl_free_secret(b->bearer);
	free(b->ca_file);
	if (b->own)
		auth_free(b->own);
	free(b);
}

static bool repo_ok(const char *repo)
{
	return *repo && strspn(repo, "abcdefghijklmnopqrstuvwxyz0123456789._-/") == strlen(repo) &&
	       isalnum((unsigned char)repo[0]) && !strstr(repo, "//");
}

/* oci[+http]://[USER[:PASSWORD]@]HOST[:PORT]/REPO: the user info runs to
 * the URL's last '@', as cjc_remote_redact takes it. */
static int parse_url(struct cjc_remote_backend *b, const char *url, struct cjc_buf *why)
{
	b->tls = cjc_starts_with(url, "oci://");
	const char *host = strstr(url, "://") + 3;
	const char *at = strrchr(host, '@');
	if (at) {
		const char *colon = memchr(host, ':', (size_t)(at - host));
		b->user = cjc_xstrndup(host, (size_t)((colon ? colon : at) - host));
		b->password = colon ? cjc_xstrndup(colon + 1, (size_t)(at - colon - 1)) : cjc_xstrdup("");
		host = at + 1;
	}
	const char *slash = strchr(host, '/');
	size_t len = slash ? strlen(slash + 1) : 0;
	while (len && slash[len] == '/')
		len--;
	b->repo = slash ? cjc_xstrndup(slash + 1, len) : cjc_xstrdup("");
	if (!slash || slash == host || !repo_ok(b->repo)) {
		cjc_buf_adds(why, "setting: an oci:// URL is oci://HOST[:PORT]/NAMESPACE/REPO, the "
			     "repository in lower case (a-z, 0-9, '.', '_', '-', '/')");
		return -1;
	}
	b->origin = cjc_xasprintf("%s://%.*s", b->tls ? "https" : "http", (int)(slash - host), host);
	return 0;
}

/* credentials-file: USER:SECRET (a CI token as SECRET). */
static int read_credentials(struct cjc_remote_backend *b, const char *file, struct cjc_buf *why)
{
	char *line = cjc_curl_read_secret(file, "credentials-file", why);
	if (!line)
		return -1;
	char *colon = strchr(line, ':');
	if (!colon || colon == line) {
		cjc_buf_addf(why, "setting: credentials-file %s is not USER:SECRET", file);
		free(line);
		return -1;
	}
	free(b->user);
	cjc_curl_free_secret(b->password);
	b->user = cjc_xstrndup(line, (size_t)(colon - line));
	b->password = cjc_xstrdup(colon + 1);
	cjc_curl_free_secret(line);
	return 0;
}

static void add_part(struct cjc_hash *h, const char *s)
{
	cjc_hash_update(h, s ? s : "", s ? strlen(s) + 1 : 0);
	cjc_hash_update(h, s ? "+" : "-", 1);
}

/* The process's memory of what this registry asks for, with these credentials. */
static void find_auth(struct cjc_remote_backend *b)
{
	struct cjc_hash h;
	char key[CJC_HEX_LEN + 1];
	cjc_hash_init(&h);
	add_part(&h, b->origin);
	add_part(&h, b->repo);
	add_part(&h, b->user);
	add_part(&h, b->password);
	add_part(&h, b->bearer);
	cjc_hash_final_hex(&h, key);
	pthread_mutex_lock(&auth_lock);
	for (int i = 0; i < NAUTH && !b->auth; i++)
		if (!auths[i].key[0] || !strcmp(auths[i].key, key)) {
			b->auth = &auths[i];
			memcpy(auths[i].key, key, sizeof key);
		}
	pthread_mutex_unlock(&auth_lock);
	if (!b->auth)
		b->auth = b->own = cjc_xcalloc(1, sizeof *b->own);
}

static struct cjc_remote_backend *oci_open(const struct cjc_remote_url *u, struct cjc_buf *why)
{
	const char *load_error = cjc_curl_load();
	if (load_error) {
		cjc_buf_addf(why, "setting: %s", load_error);
		errno = ENOSYS;
		return NULL;
	}
	struct cjc_remote_backend *b = cjc_xcalloc(1, sizeof *b);
	b->u = u;
	int rc = parse_url(b, u->url, why);
	if (!rc && u->credentials_file)
		rc = read_credentials(b, u->credentials_file, why);
	if (!rc && u->bearer_token_file && !(b->bearer = cjc_curl_read_secret(u->bearer_token_file,
								     "bearer-token-file", why)))
		rc = -1;
	if (!rc && u->ca_file)
		b->ca_file = cjc_xstrdup(u->ca_file);
	if (!rc)
		find_auth(b);
	if (!rc && !(b->curl = cjc_curl.easy_init()))
		rc = -1, cjc_buf_adds(why, "cannot start libcurl");
	if (rc) {
		backend_free(b);
		errno = EINVAL;
		return NULL;
	}
	return b;
}

/* --- one request --------------------------------------------------------- */

struct request {
	const char *method; /* GET, HEAD, PUT, POST */
	char *url;          /* absolute */
	enum scope scope;
	const char *accept, *content_type;
	const void *body;
	size_t n;
	struct cjc_buf *out; /* a 2xx reply's body, at most max bytes */
	size_t max;
	bool follow; /* redirects (a blob's GET: registries send them to storage) */
};

struct reply {
	CURL *curl;
	const struct request *rq;
	long status;
	bool too_large;
	bool elsewhere;             /* answered by another host than the one asked (a redirect) */
	char *challenge, *location; /* the last response's */
	struct cjc_buf error;       /* a non-2xx body's start */
};

static bool is_2xx(CURL *c)
{
	long status = 0;
	cjc_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	return status >= 200 && status < 300;
}

static size_t take_body(char *p, size_t size, size_t n, void *ctx)
{
	struct reply *r = ctx;
	size_t len = size * n;
	if (!is_2xx(r->curl)) {
		if (r->error.len < ERROR_BODY_MAX)
			cjc_buf_add(&r->error, p, len < ERROR_BODY_MAX ? len : ERROR_BODY_MAX);
		return r->error.len < 64 * 1024 ? len : 0;
	}
	if (!r->rq->out)
		return len;
	if (r->rq->out->len + len > r->rq->max) {
		r->too_large = true;
		return 0;
	}
	cjc_buf_add(r->rq->out, p, len);
	return len;
}

/* A header's value when line is that header (case-insensitive), else NULL. */
static char *header_value(const char *line, size_t len, const char *name)
{
	size_t nl = strlen(name);
	if (len <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return NULL;
	const char *v = line + nl + 1;
	const char *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	return cjc_xstrndup(v, (size_t)(end - v));
}

static size_t take_header(char *p, size_t size, size_t n, void *ctx)
{
	struct reply *r = ctx;
	size_t len = size * n;
	char *v;
	if (len > HEADER_MAX)
		return len; /* not one of those read here */
	if (len > 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a redirect) */
		free(r->challenge);
		free(r->location);
		r->challenge = r->location = NULL;
	} else if ((v = header_value(p, len, "www-authenticate"))) {
		free(r->challenge);
		r->challenge = v;
	} else if ((v = header_value(p, len, "location"))) {
		free(r->location);
		r->location = v;
	} else if ((v = header_value(p, len, "content-length"))) {
		bool over = r->rq->out && is_2xx(r->curl) && strtoull(v, NULL, 10) > r->rq->max;
		free(v);
		if (over) {
			r->too_large = true; /* refused before any of the body is read */
			return 0;
		}
	}
	return len;
}

/* The length of url's scheme, host and port ("https://host:443"). */
static size_t origin_len(const char *url)
{
	const char *host = strstr(url, "://");
	return host ? (size_t)(host + 3 - url) + strcspn(host + 3, "/?#") : 0;
}

/* Whether two URLs are of one origin: a reply from b's when a is asked. */
static bool same_origin(const char *a, const char *b)
{
	size_t n = origin_len(a);
	return n && n == origin_len(b) && !strncasecmp(a, b, n);
}

/* Whether url is on the registry itself (credentials may go there). */
static bool on_registry(const struct cjc_remote_backend *b, const char *url)
{
	size_t n = strlen(b->origin);
	return !strncmp(url, b->origin, n) && (url[n] == '/' || !url[n]);
}

/* A copy of the token of scope when one is cached and fresh, else NULL. */
static char *token_for(const struct cjc_remote_backend *b, enum scope s)
{
	pthread_mutex_lock(&auth_lock);
	const struct token *t = &b->auth->tokens[s];
	char *v = t->value && cjc_now_ms() < t->expires_ms ? cjc_xstrdup(t->value) : NULL;
	pthread_mutex_unlock(&auth_lock);
	return v;
}

/* Whether the registry asked for basic credentials.  Not before it asks,
 * as every registry client does: a registry's answer to credentials it did
 * not ask for is its own (a token registry may refuse them). */
static bool asked_basic(const struct cjc_remote_backend *b)
{
	pthread_mutex_lock(&auth_lock);
	bool basic = b->auth->basic;
	pthread_mutex_unlock(&auth_lock);
	return basic;
}

/* c carries the basic credentials, when there are any. */
static void send_basic(const struct cjc_remote_backend *b, CURL *c)
{
	if (!b->user)
		return;
	cjc_curl.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
	cjc_curl.easy_setopt(c, CURLOPT_USERNAME, b->user);
	cjc_curl.easy_setopt(c, CURLOPT_PASSWORD, b->password);
}

/* What the request carries on c: a ready token, a fetched one, the basic
 * credentials once the registry asked for them, or nothing. */
static void authorize(struct cjc_remote_backend *b, CURL *c, const struct request *rq)
{
	if (!on_registry(b, rq->url))
		return;
	char *token = b->bearer ? cjc_xstrdup(b->bearer) : token_for(b, rq->scope);
	if (token) { /* libcurl copies it */
		cjc_curl.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		cjc_curl.easy_setopt(c, CURLOPT_XOAUTH2_BEARER, token);
		cjc_curl_free_secret(token);
	} else if (asked_basic(b)) {
		send_basic(b, c);
	}
}

static struct curl_slist *add_header(struct curl_slist *headers, const char *name, const char *value)
{
	char *h = cjc_xasprintf("%s: %s", name, value);
	headers = cjc_curl.slist_append(headers, h);
	free(h);
	return headers;
}

/* Sets c up to send rq as authorized now (only_basic: as to the token
 * server, the basic credentials or none), its reply into r, within left
 * ms; error (or NULL) takes curl's message.  The headers it carries, to
 * be freed once it was sent. */
static struct curl_slist *prepare(struct cjc_remote_backend *b, CURL *c, const struct request *rq,
				  struct reply *r, bool only_basic, long left, char *error)
{
	struct curl_slist *headers = NULL;
	cjc_curl.easy_reset(c);
	cjc_curl.easy_setopt(c, CURLOPT_URL, rq->url);
	cjc_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (error)
		cjc_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, error), error[0] = '\0';
	cjc_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, take_body);
	cjc_curl.easy_setopt(c, CURLOPT_WRITEDATA, r);
	cjc_curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, take_header);
	cjc_curl.easy_setopt(c, CURLOPT_HEADERDATA, r);
	cjc_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, b->tls ? "https" : "http,https");
	cjc_curl.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, b->tls ? "https" : "http,https");
	cjc_curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, rq->follow ? 1L : 0L);
	cjc_curl.easy_setopt(c, CURLOPT_MAXREDIRS, MAX_REDIRS);
	cjc_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, left < b->u->connect_ms ? left : b->u->connect_ms);
	cjc_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
	if (b->ca_file)
		cjc_curl.easy_setopt(c, CURLOPT_CAINFO, b->ca_file);
	if (only_basic)
		send_basic(b, c);
	else
		authorize(b, c, rq);
	if (!strcmp(rq->method, "HEAD"))
		cjc_curl.easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (!strcmp(rq->method, "GET"))
		cjc_curl.easy_setopt(c, CURLOPT_HTTPGET, 1L);
	else {
		cjc_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
		cjc_curl.easy_setopt(c, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		cjc_curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->n);
		headers = cjc_curl.slist_append(headers, "Expect:");
	}
	if (rq->accept)
		headers = add_header(headers, "Accept", rq->accept);
	if (rq->content_type)
		headers = add_header(headers, "Content-Type", rq->content_type);
	if (headers)
		cjc_curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	r->curl = c;
	r->rq = rq;
	r->status = 0;
	r->too_large = false;
	cjc_buf_reset(&r->error);
	if (rq->out)
		cjc_buf_reset(rq->out);
	return headers;
}

/* What the request sent on c came to: its status, and whether another
 * host answered. */
static void answered(CURL *c, struct reply *r)
{
	char *url = NULL;
	cjc_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	cjc_curl.easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &url);
	r->elsewhere = !url || !same_origin(url, r->rq->url);
}

/* Sends rq once, as authorized now; curl's result. */
static CURLcode send_once(struct cjc_remote_backend *b, const struct request *rq, struct reply *r,
			  bool only_basic, long left)
{
	struct curl_slist *headers = prepare(b, b->curl, rq, r, only_basic, left, b->error);
	CURLcode code = cjc_curl.easy_perform(b->curl);
	cjc_curl.slist_free_all(headers);
	answered(b->curl, r);
	return code;
}

/* The result of a request that was sent, by curl's code and the status. */
static int result_of(struct cjc_remote_backend *b, CURLcode code, struct reply *r, struct cjc_buf *why)
{
	if (r->too_large) {
		cjc_buf_addf(why, "the reply is larger than %zu bytes", r->rq->max);
		return CJC_REMOTE_ERROR;
	}
	if (code == CURLE_OPERATION_TIMEDOUT) {
		cjc_buf_addf(why, "timed out: %s", b->error);
		errno = ETIMEDOUT;
		return CJC_REMOTE_TIMEOUT;
	}
	if (code != CURLE_OK) {
		/* the store's own URL, not one a server gave (a redirect, a realm,
		 * an upload Location): a server cannot pass for a setting's mistake */
		bool setting = !r->elsewhere && on_registry(b, r->rq->url) &&
			       (code == CURLE_URL_MALFORMAT || code == CURLE_SSL_CACERT_BADFILE ||
				code == CURLE_PEER_FAILED_VERIFICATION ||
				code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_UNSUPPORTED_PROTOCOL);
		cjc_buf_addf(why, "%s%s", setting ? "setting: " : "",
			     b->error[0] ? b->error : cjc_curl.easy_strerror(code));
		return CJC_REMOTE_ERROR;
	}
	if (r->status >= 200 && r->status < 300)
		return CJC_REMOTE_OK;
	if (r->status == 404)
		return CJC_REMOTE_ABSENT;
	json_t *doc = json_loadb(r->error.data ? r->error.data : "", r->error.len, 0, NULL);
	const char *ecode = json_string_value(
		json_object_get(json_array_get(json_object_get(doc, "errors"), 0), "code"));
	if ((r->status == 401 || r->status == 403) && !r->elsewhere)
		cjc_buf_addf(why, "setting: authentication failed (HTTP %ld%s%s): check the store's "
			     "credentials", r->status, ecode ? " " : "", ecode ? ecode : "");
	else
		cjc_buf_addf(why, "HTTP status %ld%s%s", r->status, ecode ? " " : "", ecode ? ecode : "");
	json_decref(doc);
	return CJC_REMOTE_ERROR;
}

char *cjc_oci_challenge_param(const char *challenge, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = challenge; (p = strcasestr(p, name)); p += n) {
		bool starts = p == challenge || p[-1] == ' ' || p[-1] == ',';
		if (!starts || p[n] != '=')
			continue;
		const char *v = p + n + 1;
		size_t token = strcspn(v, ", \t"); /* RFC 7235's token form: up to a comma or a blank */
		if (*v != '"')
			return token ? cjc_xstrndup(v, token) : NULL;
		const char *end = strchr(v + 1, '"');
		return end ? cjc_xstrndup(v + 1, (size_t)(end - v - 1)) : NULL;
	}
	return NULL;
}

/* Percent-encodes s (RFC 3986 unreserved kept) onto out. */
static void add_escaped(struct cjc_buf *out, const char *s)
{
	for (; *s; s++)
		if (isalnum((unsigned char)*s) || strchr("-._~", *s))
			cjc_buf_add(out, s, 1);
		else
			cjc_buf_addf(out, "%%%02X", (unsigned char)*s);
}

/* Fetches a token of scope s from the realm the registry named (with the
 * basic credentials if any), cached for its lifetime. */
static int fetch_token(struct cjc_remote_backend *b, enum scope s, const char *scope,
		       struct cjc_buf *why)
{
	long left = cjc_remote_time_left(b->u);
	if (left <= 0) {
		cjc_buf_adds(why, "timed out: the operation-timeout is spent");
		errno = ETIMEDOUT;
		return CJC_REMOTE_TIMEOUT;
	}
	pthread_mutex_lock(&auth_lock);
	char *realm = b->auth->realm ? cjc_xstrdup(b->auth->realm) : cjc_xstrdup("");
	char *service = b->auth->service ? cjc_xstrdup(b->auth->service) : NULL;
	pthread_mutex_unlock(&auth_lock);
	if (!cjc_starts_with(realm, "https://") && (b->tls || !cjc_starts_with(realm, "http://"))) {
		cjc_buf_adds(why, "setting: the registry names a token server that is not https; "
			     "no credentials are sent there");
		free(realm);
		free(service);
		return CJC_REMOTE_ERROR;
	}
	struct cjc_buf url = CJC_BUF_INIT, body = CJC_BUF_INIT;
	cjc_buf_addf(&url, "%s%c", realm, strchr(realm, '?') ? '&' : '?');
	if (service) {
		cjc_buf_adds(&url, "service=");
		add_escaped(&url, service);
		cjc_buf_adds(&url, "&");
	}
	free(realm);
	free(service);
	cjc_buf_adds(&url, "scope=");
	add_escaped(&url, scope);
	struct request rq = { .method = "GET", .url = url.data, .out = &body, .max = TOKEN_REPLY_MAX };
	struct reply r = { 0 };
	CURLcode code = send_once(b, &rq, &r, true, left);
	int rc = result_of(b, code, &r, why);
	if (rc == CJC_REMOTE_ABSENT)
		rc = CJC_REMOTE_ERROR, cjc_buf_adds(why, "setting: the token server answers 404");
	json_t *doc = rc == CJC_REMOTE_OK ? json_loadb(body.data, body.len, 0, NULL) : NULL;
	json_t *t = json_object_get(doc, "token");
	t = json_is_string(t) ? t : json_object_get(doc, "access_token");
	json_t *expires = json_object_get(doc, "expires_in");
	if (rc == CJC_REMOTE_OK && (!json_is_string(t) || !json_string_length(t) ||
				    strpbrk(json_string_value(t), "\r\n"))) {
		cjc_buf_adds(why, "the token server's answer holds no token");
		rc = CJC_REMOTE_ERROR;
	}
	if (rc == CJC_REMOTE_OK) {
		json_int_t secs = json_is_integer(expires) && json_integer_value(expires) > 0
					  ? json_integer_value(expires) : 60;
		if (secs > 86400)
			secs = 86400;
		pthread_mutex_lock(&auth_lock);
		struct token *k = &b->auth->tokens[s];
		free(k->value);
		k->value = cjc_xstrdup(json_string_value(t));
		/* a little before it ends, so that it does not end in flight */
		k->expires_ms = cjc_now_ms() + secs * 1000 - (secs > 20 ? 10000 : secs * 250);
		pthread_mutex_unlock(&auth_lock);
	}
	json_decref(doc);
	free(r.challenge);
	free(r.location);
	cjc_buf_release(&r.error);
	cjc_buf_release(&url);
	if (body.data)
		explicit_bzero(body.data, body.len);
	cjc_buf_release(&body);
	return rc;
}

/* What a 401's challenge asks for, taken: 0 when the request is worth
 * sending again with what it asked for, else -1 with why. */
static int answer_challenge(struct cjc_remote_backend *b, const struct request *rq,
			    const char *challenge, struct cjc_buf *why, int *rc)
{
	*rc = CJC_REMOTE_ERROR;
	if (b->bearer)
		return -1; /* the ready token was refused: result_of says so */
	if (challenge && !strncasecmp(challenge, "basic", 5)) {
		if (!b->user) {
			cjc_buf_adds(why, "setting: authentication failed: the registry asks for "
				     "credentials (give them in the URL or a credentials-file)");
			return 1;
		}
		pthread_mutex_lock(&auth_lock);
		bool sent = b->auth->basic;
		b->auth->basic = true;
		pthread_mutex_unlock(&auth_lock);
		return sent ? -1 : 0;
	}
	if (!challenge || strncasecmp(challenge, "bearer ", 7))
		return -1;
	char *realm = cjc_oci_challenge_param(challenge, "realm");
	char *service = cjc_oci_challenge_param(challenge, "service");
	char *scope = cjc_oci_challenge_param(challenge, "scope");
	if (!realm) {
		free(service);
		free(scope);
		return -1;
	}
	pthread_mutex_lock(&auth_lock);
	free(b->auth->realm);
	free(b->auth->service);
	b->auth->realm = realm;
	b->auth->service = service;
	pthread_mutex_unlock(&auth_lock);
	char *mine = cjc_xasprintf("repository:%s:%s", b->repo, scope_actions[rq->scope]);
	*rc = fetch_token(b, rq->scope, scope ? scope : mine, why);
	free(scope);
	free(mine);
	return *rc == CJC_REMOTE_OK ? 0 : 1;
}

/* Sends rq, answering one 401 (anonymous first, then what the registry
 * asks for; a token for a server already named is fetched up front). */
static int perform(struct cjc_remote_backend *b, const struct request *rq, struct reply *r,
		   struct cjc_buf *why)
{
	int rc = CJC_REMOTE_OK;
	pthread_mutex_lock(&auth_lock);
	bool named = b->auth->realm != NULL;
	pthread_mutex_unlock(&auth_lock);
	char *token = named && !b->bearer ? token_for(b, rq->scope) : NULL;
	bool fetch = named && !b->bearer && !token && on_registry(b, rq->url);
	cjc_curl_free_secret(token);
	if (fetch) {
		char *scope = cjc_xasprintf("repository:%s:%s", b->repo, scope_actions[rq->scope]);
		rc = fetch_token(b, rq->scope, scope, why);
		free(scope);
		if (rc != CJC_REMOTE_OK)
			return rc;
	}
	for (int attempt = 0;; attempt++) {
		long left = cjc_remote_time_left(b->u);
		if (left <= 0) {
			cjc_buf_adds(why, "timed out: the operation-timeout is spent");
			errno = ETIMEDOUT;
			return CJC_REMOTE_TIMEOUT;
		}
		CURLcode code = send_once(b, rq, r, false, left);
		/* only the registry's own 401 is answered: a host a redirect led to
		 * (its storage) gets no credentials, nor a say in where they go */
		if (code != CURLE_OK || r->status != 401 || attempt || r->elsewhere)
			return result_of(b, code, r, why);
		char *challenge = r->challenge ? cjc_xstrdup(r->challenge) : NULL;
		int said = answer_challenge(b, rq, challenge, why, &rc);
		free(challenge);
		if (said > 0)
			return rc;
		if (said < 0)
			return result_of(b, code, r, why);
	}
}

/* One request; its reply's headers released. */
static int ask(struct cjc_remote_backend *b, const struct request *rq, char **location,
	       struct cjc_buf *why)
{
	struct reply r = { 0 };
	int rc = perform(b, rq, &r, why);
	if (location)
		*location = r.location, r.location = NULL;
	free(r.challenge);
	free(r.location);
	cjc_buf_release(&r.error);
	return rc;
}

/* --- the layout ----------------------------------------------------------- */

struct target {
	char kind;
	char hex[CJC_HEX_LEN + 1];
	char tag[129];
};

/* NS/c/<hex>, NS/e/<key>, NS/m/<key> (remote.h): what it is in the registry. */
static int parse_name(const char *name, struct target *t, struct cjc_buf *why)
{
	const char *slash = strrchr(name, '/');
	size_t ns = slash && slash - name >= 2 && slash[-2] == '/' ? (size_t)(slash - name - 2) : 0;
	t->kind = ns ? slash[-1] : 0;
	if (!ns || (t->kind != 'c' && !kind_of(t->kind)) || !cjc_is_hex64(slash + 1)) {
		cjc_buf_addf(why, "no place in a registry for %s", name);
		return -1;
	}
	memcpy(t->hex, slash + 1, CJC_HEX_LEN + 1);
	int n = snprintf(t->tag, sizeof t->tag, "%.*s.%c.%s", (int)ns, name, t->kind, t->hex);
	for (char *p = t->tag; *p; p++)
		*p = *p == '/' ? '.' : *p;
	if (t->kind != 'c' && (n >= (int)sizeof t->tag || !isalnum((unsigned char)t->tag[0]) ||
			       strspn(t->tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					      "0123456789._-") != (size_t)n)) {
		cjc_buf_addf(why, "no OCI tag can name %s", name);
		return -1;
	}
	return 0;
}

static char *blob_url(const struct cjc_remote_backend *b, const char *hex)
{
	return cjc_xasprintf("%s/v2/%s/blobs/sha256:%s", b->origin, b->repo, hex);
}

static char *manifest_url(const struct cjc_remote_backend *b, const char *tag)
{
	return cjc_xasprintf("%s/v2/%s/manifests/%s", b->origin, b->repo, tag);
}

/* A blob, at most max bytes, checked against its digest. */
static int blob_get(struct cjc_remote_backend *b, const char *hex, size_t max, struct cjc_buf *out,
		    struct cjc_buf *why)
{
	struct request rq = { .method = "GET", .url = blob_url(b, hex), .scope = PULL, .out = out,
			      .max = max, .follow = true };
	int rc = ask(b, &rq, NULL, why);
	free(rq.url);
	char got[CJC_HEX_LEN + 1];
	if (rc == CJC_REMOTE_OK && (cjc_hash_buf_hex(out->data ? out->data : "", out->len, got),
				    strcmp(got, hex))) {
		cjc_buf_addf(why, "blob sha256:%.16s... differs from its digest", hex);
		rc = CJC_REMOTE_ERROR;
	}
	return rc;
}

static int head_url(struct cjc_remote_backend *b, char *url, bool manifest, struct cjc_buf *why)
{
	struct request rq = { .method = "HEAD", .url = url, .scope = PULL,
			      .accept = manifest ? MT_MANIFEST : NULL, .follow = !manifest };
	int rc = ask(b, &rq, NULL, why);
	free(url);
	return rc;
}

/* The upload URL: the registry's Location, made absolute, with the digest. */
static char *upload_url(const struct cjc_remote_backend *b, const char *location, const char *hex,
			struct cjc_buf *why)
{
	char *url = NULL;
	if (location && location[0] == '/')
		url = cjc_xasprintf("%s%s", b->origin, location);
	else if (location && (cjc_starts_with(location, "https://") ||
			      (!b->tls && cjc_starts_with(location, "http://"))))
		url = cjc_xstrdup(location);
	if (!url) {
		cjc_buf_adds(why, location ? "the registry's upload Location is not https"
					   : "the registry gave no upload Location");
		return NULL;
	}
	char *with = cjc_xasprintf("%s%cdigest=sha256:%s", url, strchr(url, '?') ? '&' : '?', hex);
	free(url);
	return with;
}

/* Uploads a blob: POST, then PUT to the Location with its digest. */
static int upload(struct cjc_remote_backend *b, const char *hex, const void *p, size_t n,
		  struct cjc_buf *why)
{
	int rc;
	char *start = cjc_xasprintf("%s/v2/%s/blobs/uploads/", b->origin, b->repo), *location = NULL;
	struct request post = { .method = "POST", .url = start, .scope = PUSH };
	rc = ask(b, &post, &location, why);
	free(start);
	char *url = rc == CJC_REMOTE_OK ? upload_url(b, location, hex, why) : NULL;
	if (rc == CJC_REMOTE_OK && url) {
		struct request put = { .method = "PUT", .url = url, .scope = PUSH, .body = p, .n = n,
				       .content_type = "application/octet-stream" };
		rc = ask(b, &put, NULL, why);
	} else if (rc == CJC_REMOTE_OK) {
		rc = CJC_REMOTE_ERROR;
	}
	free(url);
	free(location);
	return rc == CJC_REMOTE_ABSENT ? (cjc_buf_adds(why, "HTTP status 404 on upload"), CJC_REMOTE_ERROR)
				       : rc;
}

/* Uploads a blob unless a HEAD finds it there. */
static int blob_put(struct cjc_remote_backend *b, const char *hex, const void *p, size_t n,
		    struct cjc_buf *why)
{
	int rc = head_url(b, blob_url(b, hex), false, why);
	return rc == CJC_REMOTE_ABSENT ? upload(b, hex, p, n, why) : rc;
}

/* --- blobs at once ----------------------------------------------------------
 *
 * A manifest's value, when it is in a blob, and the blobs of the entry the
 * manifest names (the record and artifact layers it does not embed) are
 * fetched at once, each on a handle of its own (libcurl's multi interface),
 * so that a hit on a large entry is two round trips, its direct-mode
 * manifest and then its blobs, as on Redis, not one after another.  What
 * comes back whole (2xx, its digest) is the value or goes on the shelf;
 * anything else is asked for again when it is needed, the ordinary way (a
 * 401 answered, the error reported).  At most FETCH_AT_ONCE blobs, each
 * other than the value at most SHELF_ITEM_MAX, all within the deadline.
 */
struct wanted {
	char hex[CJC_HEX_LEN + 1];
	char key[CJC_HEX_LEN + 1]; /* a record's entry (on the shelf as "e:KEY"), or "" */
	uint64_t size;
	struct cjc_buf bytes; /* once fetched whole */
	bool whole;
};

struct batch {
	struct wanted w[FETCH_AT_ONCE];
	size_t n;
};

/* Adds a blob the manifest names (not embedded) to the batch, unless it is
 * already in it or on the shelf, too large, or the batch is full (its last
 * place is kept for the manifest's value). */
static void want(struct batch *bt, const char *hex, const char *entry_key, uint64_t size)
{
	char name[CJC_HEX_LEN + 3];
	shelf_name(hex, entry_key, name);
	if (bt->n == FETCH_AT_ONCE - 1 || size > SHELF_ITEM_MAX || shelf_has(name) ||
	    !strcmp(hex, bt->w[FETCH_AT_ONCE - 1].hex)) /* the value's own digest */
		return;
	for (size_t i = 0; i < bt->n; i++)
		if (!strcmp(bt->w[i].hex, hex) && !strcmp(bt->w[i].key, entry_key ? entry_key : ""))
			return;
	struct wanted *w = &bt->w[bt->n++];
	memcpy(w->hex, hex, sizeof w->hex);
	if (entry_key)
		memcpy(w->key, entry_key, sizeof w->key);
	w->size = size;
}

/* One of the GETs at once. */
struct transfer {
	struct request rq;
	struct reply r;
	struct curl_slist *headers;
	CURLcode code;
};

/* Starts w's GET on side handle i, within left ms: whether it did. */
static bool start_get(struct cjc_remote_backend *b, size_t i, struct wanted *w, struct transfer *t,
		      long left)
{
	if (!b->side[i] && !(b->side[i] = cjc_curl.easy_init()))
		return false;
	t->rq = (struct request){ .method = "GET", .url = blob_url(b, w->hex), .scope = PULL,
				  .out = &w->bytes, .max = w->size, .follow = true };
	t->headers = prepare(b, b->side[i], &t->rq, &t->r, false, left, NULL);
	t->code = CURLE_FAILED_INIT;
	if (b->tls) /* HTTP/2: one connection for them all */
		cjc_curl.easy_setopt(b->side[i], CURLOPT_PIPEWAIT, 1L);
	if (cjc_curl.multi_add_handle(b->multi, b->side[i]) == CURLM_OK)
		return true;
	cjc_curl.slist_free_all(t->headers);
	free(t->rq.url);
	return false;
}

/* Ends the GET on side handle i: whether w came whole (2xx, its size and
 * its digest). */
static bool end_get(struct cjc_remote_backend *b, size_t i, struct wanted *w, struct transfer *t)
{
	char got[CJC_HEX_LEN + 1];
	cjc_curl.multi_remove_handle(b->multi, b->side[i]);
	cjc_curl.slist_free_all(t->headers);
	answered(b->side[i], &t->r);
	bool whole = t->code == CURLE_OK && !t->r.too_large && t->r.status >= 200 &&
		     t->r.status < 300 && w->bytes.len == w->size &&
		     (cjc_hash_buf_hex(w->bytes.data, w->bytes.len, got), !strcmp(got, w->hex));
	free(t->rq.url);
	free(t->r.challenge);
	free(t->r.location);
	cjc_buf_release(&t->r.error);
	return whole;
}

/* GETs the blobs of bt at once, until the deadline; each whole one is
 * marked so. */
static void get_at_once(struct cjc_remote_backend *b, struct batch *bt)
{
	struct transfer t[FETCH_AT_ONCE] = { 0 };
	size_t n = 0;
	long left = cjc_remote_time_left(b->u);
	if (left > 0 && !b->multi && (b->multi = cjc_curl.multi_init()))
		cjc_curl.multi_setopt(b->multi, CURLMOPT_MAXCONNECTS, MULTI_CONNECTIONS);
	while (left > 0 && b->multi && n < bt->n && start_get(b, n, &bt->w[n], &t[n], left))
		n++;
	if (!n)
		return;
	int running = 1;
	while (running && !cjc_curl.multi_perform(b->multi, &running) && running &&
	       cjc_remote_time_left(b->u) > 0)
		cjc_curl.multi_poll(b->multi, NULL, 0, 100, NULL);
	CURLMsg *msg;
	int queued;
	while ((msg = cjc_curl.multi_info_read(b->multi, &queued)))
		for (size_t i = 0; i < n; i++)
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == b->side[i])
				t[i].code = msg->data.result;
	for (size_t i = 0; i < n; i++)
		bt->w[i].whole = end_get(b, i, &bt->w[i], &t[i]);
}

/* --- the seam --------------------------------------------------------------- */

/* What a manifest's layers give beside its value: the bytes it embeds,
 * checked, to the shelf; the blobs it only names, to the batch (if any). */
static void found(const char *hex, const char *entry_key, const void *p, size_t n, void *ctx)
{
	if (p)
		shelf_put(hex, entry_key, p, n);
	else if (ctx)
		want(ctx, hex, entry_key, n);
}

/* The blobs of bt at once: the last one, with value, is the manifest's
 * value, into out (asked for again alone when it did not come whole); the
 * others go on the shelf. */
static int get_blobs(struct cjc_remote_backend *b, struct batch *bt, bool value, struct cjc_buf *out,
		     struct cjc_buf *why)
{
	get_at_once(b, bt);
	int rc = CJC_REMOTE_OK;
	for (size_t i = 0; i < bt->n; i++) {
		struct wanted *w = &bt->w[i];
		if (value && i == bt->n - 1 && w->whole) {
			cjc_buf_release(out);
			*out = w->bytes, w->bytes = (struct cjc_buf)CJC_BUF_INIT;
		} else if (value && i == bt->n - 1) {
			rc = blob_get(b, w->hex, w->size, out, why);
		} else if (w->whole) {
			shelf_put(w->hex, w->key[0] ? w->key : NULL, w->bytes.data, w->bytes.len);
		}
		cjc_buf_release(&w->bytes);
	}
	return rc;
}

static int oci_get(struct cjc_remote_backend *b, const char *name, size_t max, struct cjc_buf *out,
		   struct cjc_buf *why)
{
	struct target t;
	bool merging = b->merging;
	b->absent[0] = 0;
	b->merging = false;
	if (parse_name(name, &t, why))
		return CJC_REMOTE_ERROR;
	char shelved[CJC_HEX_LEN + 3];
	shelf_name(t.hex, t.kind == 'e' ? t.hex : NULL, shelved);
	if (t.kind != 'm' && shelf_take(shelved, max, out))
		return CJC_REMOTE_OK;
	if (t.kind == 'c')
		return blob_get(b, t.hex, max, out, why);
	struct cjc_buf text = CJC_BUF_INIT;
	/* what a manifest of ours can be (the embedded bytes base64'd, a layer
	 * per artifact), far below the value's own bound: a larger value is a
	 * blob, and JSON takes tens of bytes of memory per byte parsed */
	size_t cap = MANIFEST_READ_MAX;
	struct request rq = { .method = "GET", .url = manifest_url(b, t.tag), .scope = PULL,
			      .accept = MT_MANIFEST, .out = &text, .max = cap };
	int rc = ask(b, &rq, NULL, why);
	free(rq.url);
	struct batch bt = { .n = 0 };
	struct wanted *value = &bt.w[FETCH_AT_ONCE - 1];
	bool named = t.kind != 'm' || !merging; /* a writer merging wants no entry */
	int has = rc == CJC_REMOTE_OK ? cjc_oci_manifest_value(text.data, text.len, t.kind, max, out,
							       value->hex, &value->size, found,
							       named ? &bt : NULL, why)
				      : 0;
	cjc_buf_release(&text);
	if (has < 0)
		return CJC_REMOTE_ERROR;
	if (has == 1 && !bt.n)
		return blob_get(b, value->hex, value->size, out, why);
	if (has == 1) /* the batch's last */
		memmove(&bt.w[bt.n++], value, sizeof *value);
	return bt.n ? get_blobs(b, &bt, has == 1, out, why) : rc;
}

static int oci_put(struct cjc_remote_backend *b, const char *name, const void *p, size_t n,
		   bool only_if_absent, struct cjc_buf *why)
{
	struct target t;
	char hex[CJC_HEX_LEN + 1];
	if (parse_name(name, &t, why))
		return CJC_REMOTE_ERROR;
	b->merging = t.kind == 'e';
	cjc_hash_buf_hex(p, n, hex);
	if (t.kind == 'c' && strcmp(hex, t.hex)) {
		cjc_buf_adds(why, "a blob's bytes are not its name's SHA-256");
		return CJC_REMOTE_ERROR;
	}
	bool absent = t.kind == 'c' && !strcmp(b->absent, hex); /* exists just said so (remote.c) */
	b->absent[0] = 0;
	if (t.kind == 'c') {
		int rc = absent ? upload(b, hex, p, n, why) : blob_put(b, hex, p, n, why);
		if (rc == CJC_REMOTE_OK) /* for the entry's manifest that follows */
			shelf_put(hex, NULL, p, n);
		return rc;
	}
	int rc = only_if_absent ? head_url(b, manifest_url(b, t.tag), true, why) : CJC_REMOTE_ABSENT;
	if (rc != CJC_REMOTE_ABSENT)
		return rc; /* there (first writer wins), or the error */
	rc = blob_put(b, hex, p, n, why);
	if (rc == CJC_REMOTE_OK && !b->empty_there && (rc = blob_put(b, EMPTY_HEX, "{}", 2, why)) == CJC_REMOTE_OK)
		b->empty_there = true;
	char *text = rc == CJC_REMOTE_OK ? manifest_for(kind_of(t.kind), t.hex, p, n, hex) : NULL;
	if (rc == CJC_REMOTE_OK && !text)
		rc = CJC_REMOTE_ERROR, cjc_buf_adds(why, "cannot make the manifest");
	if (text) {
		struct request rq = { .method = "PUT", .url = manifest_url(b, t.tag), .scope = PUSH,
				      .body = text, .n = strlen(text), .content_type = MT_MANIFEST };
		rc = ask(b, &rq, NULL, why);
		free(rq.url);
	}
	if (rc == CJC_REMOTE_OK && t.kind == 'e') /* for the direct-mode manifest that follows */
		shelf_put(hex, t.hex, p, n);
	free(text);
	return rc == CJC_REMOTE_ABSENT ? (cjc_buf_adds(why, "HTTP status 404 on a manifest's put"),
					  CJC_REMOTE_ERROR)
				       : rc;
}

static int oci_exists(struct cjc_remote_backend *b, const char *name, struct cjc_buf *why)
{
	struct target t;
	b->absent[0] = 0;
	if (parse_name(name, &t, why))
		return CJC_REMOTE_ERROR;
	int rc = t.kind == 'c' ? head_url(b, blob_url(b, t.hex), false, why)
			       : head_url(b, manifest_url(b, t.tag), true, why);
	if (t.kind == 'c' && rc == CJC_REMOTE_ABSENT)
		memcpy(b->absent, t.hex, sizeof b->absent); /* the put that follows need not ask again */
	return rc;
}

static void oci_close(struct cjc_remote_backend *b)
{
	backend_free(b);
}

const struct cjc_remote_ops cjc_remote_oci_ops = {
	oci_open, oci_get, oci_put, oci_exists, oci_close, NULL, NULL, /* no leases: see above */
};
