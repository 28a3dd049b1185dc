/*
 * sign.h - signed entries (docs/remote.md#signed-entries), Ed25519 through
 * OpenSSL.
 *
 * A writer with `sign_key` (a PEM file holding an Ed25519 private key, as
 * `openssl genpkey -algorithm ed25519` writes) signs each entry's
 * metadata.json, which binds the key and every artifact's size and SHA-256,
 * so the signature covers the whole entry.  The signature lives beside it as
 * metadata.sig, one line of text:
 *
 *     cudajitcache.sig.v1 ed25519 <public key, 64 hex> <signature, 128 hex>
 *
 * The public key only says which key claims to have signed; a reader with
 * `trusted_keys` (a file of PEM Ed25519 public keys) accepts the entry only
 * when that key is one of them and the signature verifies.
 *
 * Key files are read up to a bound, as regular files; their contents never
 * appear in a message.  Functions return 0, or -1 with a reason in `why`.
 *
 * Local entries (docs/trust.md): an entry in the local store that you or
 * root wrote needs no signature; with trusted_keys, one that another user
 * wrote is served only when a trusted key signed it
 * (cjc_sign_check_local_entry, called by every front end's lookup).
 *
 * The same signature file signs other things than metadata.json (remote
 * manifests, remote.h): the signed bytes then start with a text naming
 * what they are, which a metadata.json (a JSON object) never does.
 */
#ifndef CJC_SIGN_H
#define CJC_SIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/util.h"

struct cjc_entry; /* store.h */

/* The signature file is an entry's CJC_SIGN_FILE (store.h). */
#define CJC_SIGN_MAX 512 /* the signature file's size bound */

/* Signs data with the private key in key_file; out gets the signature file. */
int cjc_sign(const char *key_file, const void *data, size_t len, struct cjc_buf *out,
	     struct cjc_buf *why);

/* Checks a signature file over data against the keys in trusted_file. */
int cjc_sign_verify(const char *trusted_file, const void *data, size_t len, const void *sig,
		    size_t siglen, struct cjc_buf *why);

/* Checks an entry's signature (its directory fd) against trusted_file: 0
 * when a trusted key signed it; -1 when it is unsigned or signed by
 * another key; -2 when the signature is malformed or does not match. */
int cjc_sign_verify_entry(int dfd, const char *trusted_file, struct cjc_buf *why);

/* cjc_sign_verify, where the public half of own_key_file (a sign_key) is
 * trusted too; either file may be NULL.  A writer checks with it what it
 * may sign again (remote.c: the manifest it merges into). */
int cjc_sign_verify_writer(const char *trusted_file, const char *own_key_file, const void *data,
			   size_t len, const void *sig, size_t siglen, struct cjc_buf *why);

/* Whether a local entry was written by you or root: its directory (fstat
 * of its open fd) and the metadata.json that was read (e->meta_uid) are
 * owned by geteuid() or root.  When not, *writer is the owner that is
 * neither. */
bool cjc_sign_written_by_self(const struct cjc_entry *e, uid_t *writer);

/* Whether a local entry may be served: always without trusted_file; with
 * it, when cjc_sign_written_by_self() or a trusted key signed it.  0: it
 * may; -1: unsigned or another key's; -2: a false or malformed signature
 * (cjc_sign_verify_entry).  Costs nothing without trusted_file; with it,
 * one fstat when you or root wrote the entry. */
int cjc_sign_check_local_entry(const struct cjc_entry *e, const char *trusted_file,
			       struct cjc_buf *why);

/* Checks that a key file holds what it should (for `cjc config`, `remote check`). */
int cjc_sign_check_private(const char *key_file, struct cjc_buf *why);
int cjc_sign_check_trusted(const char *trusted_file, size_t *nkeys, struct cjc_buf *why);

#endif
