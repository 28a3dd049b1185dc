/*
 * oci_manifest.c - the OCI image manifests of ours (remote_oci.c's head
 * comment lays them out): read, each layer's embedded bytes checked
 * against its digest and bounded (oci.h), and written, embedding what
 * fits and naming the rest; and the base64 they embed it in.
 */
#include "remote/oci.h"

#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "keys/manifest.h"
#include "keys/metadata.h"
#include "remote/layout.h"
#include "remote/oci_internal.h"

#define MT_ARTIFACT "application/vnd.cudajitcache.artifact.v1"
#define MT_RECORD "application/vnd.cudajitcache.record.v1"
#define ENTRY_ANNOTATION "org.cudajitcache.entry"
#define DEFLATE_ANNOTATION "org.cudajitcache.deflate"
#define EMBED_MAX CJC_OCI_EMBED_MAX
/* What a manifest written here embeds, deflated and base64'd, its value's
 * and the others' together: a registry parses a manifest on each GET, and
 * one of 400 KiB took it 21 ms against 11 ms for a blob of 500 KiB
 * (docker-registry 2.8), so large values go as blobs only.  Embedded
 * values are deflated because the GET costs with the manifest's size: one
 * of 114 KiB 8-13 ms, of 56 KiB 7.5-11, of 21 KiB 5-6 (htpasswd); a light
 * entry's hit, its direct-mode manifest (43 KiB), record (32 KiB) and
 * object (10 KiB) deflated to 33 KiB of text, is one small request. */
#define EMBED_WRITE_MAX ((size_t)128 << 10)

/* What a manifest of each kind says it is, and its value's layer. */
static const struct oci_kind kinds[] = {
	{ 'e', "application/vnd.cudajitcache.entry.v1", MT_RECORD },
	{ 'm', "application/vnd.cudajitcache.manifest.v1", "application/vnd.cudajitcache.manifest.v1" },
};

const struct oci_kind *oci_kind_of(char letter)
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
	const struct oci_kind *k = oci_kind_of(kind);
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

/* --- writing them ------------------------------------------------------- */

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
		/* kept as stored (send.c) */
		const char *sha = cjc_artifact_stored_sha(&files[i]);
		uint64_t size = cjc_artifact_stored_size(&files[i]);
		json_t *layer = descriptor(MT_ARTIFACT, sha, size);
		if (b && size <= b->bytes && oci_shelf_copy(sha, size, &bytes) && bytes.len == size)
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
	oci_shelf_name(NULL, m.recs[0].entry_key, name);
	if (oci_shelf_copy(name, SHELF_ITEM_MAX, &record) && record.len) {
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
char *oci_manifest_for(const struct oci_kind *k, const char *key, const void *p, size_t n,
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
