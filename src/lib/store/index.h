/*
 * index.h - what `cjc ls` shows of each entry, kept beside the entries, so
 * that listing 100,000 entries reads 256 small files and stats each
 * metadata.json instead of parsing 100,000 documents.
 *
 * index/<kk> (kk: the keys' first two hex digits) holds rows: a publisher
 * appends the row of the entry it made (cjc_index_add, from the metadata it
 * wrote), and cjc_index_foreach rewrites a shard's file whole when it finds
 * rows missing or stale.  Each row names the entry's metadata.json by its
 * inode, mtime and size.  A row is used only when the entry's metadata.json,
 * stat'ed now, has exactly those; entries never change once visible, so the
 * row was made from that very document.  Any other entry is read from its
 * metadata as before.  So a missing, damaged or stale file costs only the
 * slow path.  The file is a memo (blob.h): rows are read only from a file
 * of yours or root's that no one else can write (a row planted with the
 * stamp of a real metadata.json, which anyone who can read the store can
 * stat, would be shown), and appended or rewritten only into one of yours,
 * created 0644: index/<kk>, or index/<kk>.<uid> where index/<kk> is someone
 * else's.  Only `cjc ls` reads the index; lookups, verify, gc, show and
 * audit use the entries.
 *
 * The file is a sequence of rows, each a blob (blob.h, magic "CJCY";
 * "CJCX", rows without the stored bytes, read as damaged and rewritten)
 * preceded by its u32 length, so appends need no rewrite and a torn or
 * damaged row ends the reading of the file.  Row payload, little-endian:
 *
 *     64 bytes key   u64 inode   i64 mtime_ns   u64 metadata size
 *     kind, target (JSON text), created (JSON text): util.h strings
 *     u64 bytes of artifacts   u64 bytes stored (compressed: store.h)
 *     u32 count, then each artifact's name
 */
#ifndef CJC_INDEX_H
#define CJC_INDEX_H

#include <jansson.h>

#include "base/hash.h"
#include "base/util.h"
#include "store/store.h"

struct cjc_index_row {
	char key[CJC_HEX_LEN + 1];
	char *kind;
	json_t *target;  /* as in metadata.json: a string, {"bytes": hex} or null */
	json_t *created;
	uint64_t size;   /* of the artifacts */
	uint64_t stored; /* of their files in the store, compressed or not */
	struct cjc_strvec files;
	char *damaged;   /* not NULL: the entry could not be read, and why */
};

/* Calls fn for every entry, in directory order, with its row and
 * directory; stops when fn returns non-zero.  Rewrites the shard files it
 * found stale when the store is writable. */
int cjc_index_foreach(const struct cjc_store *s,
		      int (*fn)(const struct cjc_index_row *row, const char *dir, void *ctx),
		      void *ctx);

/* After a publication: appends the row of entry key, whose metadata is
 * doc (parsed) with files; failures are ignored (ls reads the entry). */
void cjc_index_add(const struct cjc_store *s, const char *key, json_t *doc,
		   const struct cjc_artifact *files, size_t nfiles);

/* The same, as a staging's published (store.h): the row of the entry
 * just published from st, when its writer gave the document (index_doc;
 * parsing it again would cost a heavy entry ms). */
void cjc_index_published(const struct cjc_store *s, const struct cjc_staging *st, const char *key);

#endif
