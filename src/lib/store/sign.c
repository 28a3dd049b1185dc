#include "store/sign.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dl.h"
#include "base/fs.h"
#include "base/hash.h"
#include "store/store.h"

#define KEY_FILE_MAX (64 << 10)
#define PUBLIC_LEN 32
#define SIGNATURE_LEN 64
#define MAX_TRUSTED 64

static const char sig_magic[] = "cudajitcache.sig.v1 ed25519 ";

/*
 * libcrypto's EVP and PEM calls, loaded with dlopen the first time a key is
 * used.  cjc links libcrypto statically for SHA-256 alone (hash.c); linking
 * EVP too would bring its providers, and a shared libcrypto cost every cjc
 * process 0.6 ms of loading, measured, where no key is even set.
 */
struct crypto_api {
	BIO *(*new_mem_buf)(const void *buf, int len);
	int (*bio_free)(BIO *bio);
	EVP_PKEY *(*read_private)(BIO *bio, EVP_PKEY **x, pem_password_cb *cb, void *u);
	EVP_PKEY *(*read_public)(BIO *bio, EVP_PKEY **x, pem_password_cb *cb, void *u);
	EVP_PKEY *(*new_raw_public)(int type, ENGINE *e, const unsigned char *pub, size_t len);
	int (*get_raw_public)(const EVP_PKEY *key, unsigned char *pub, size_t *len);
	int (*base_id)(const EVP_PKEY *key);
	void (*pkey_free)(EVP_PKEY *key);
	EVP_MD_CTX *(*ctx_new)(void);
	void (*ctx_free)(EVP_MD_CTX *ctx);
	int (*sign_init)(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *md, ENGINE *e,
			 EVP_PKEY *key);
	int (*sign)(EVP_MD_CTX *ctx, unsigned char *sig, size_t *siglen, const unsigned char *data,
		    size_t len);
	int (*verify_init)(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *md, ENGINE *e,
			   EVP_PKEY *key);
	int (*verify)(EVP_MD_CTX *ctx, const unsigned char *sig, size_t siglen,
		      const unsigned char *data, size_t len);
	void (*cleanse)(void *p, size_t len);
};
static struct crypto_api api;
static bool loaded;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;

#define FN(field, name) CJC_DL_SYMBOL(struct crypto_api, field, name)
static const struct cjc_dl_symbol crypto_symbols[] = {
	FN(new_mem_buf, "BIO_new_mem_buf"), FN(bio_free, "BIO_free"),
	FN(read_private, "PEM_read_bio_PrivateKey"), FN(read_public, "PEM_read_bio_PUBKEY"),
	FN(new_raw_public, "EVP_PKEY_new_raw_public_key"),
	FN(get_raw_public, "EVP_PKEY_get_raw_public_key"), FN(base_id, "EVP_PKEY_get_base_id"),
	FN(pkey_free, "EVP_PKEY_free"), FN(ctx_new, "EVP_MD_CTX_new"), FN(ctx_free, "EVP_MD_CTX_free"),
	FN(sign_init, "EVP_DigestSignInit"), FN(sign, "EVP_DigestSign"),
	FN(verify_init, "EVP_DigestVerifyInit"), FN(verify, "EVP_DigestVerify"),
	FN(cleanse, "OPENSSL_cleanse"),
};

static void crypto_start(void)
{
	const char *missing;
	void *lib = dlopen(CJC_CRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
	loaded = lib && !cjc_dl_resolve(lib, crypto_symbols,
					sizeof crypto_symbols / sizeof *crypto_symbols, &api, &missing);
}

static bool crypto_loaded(struct cjc_buf *why)
{
	pthread_once(&crypto_once, crypto_start);
	if (!loaded)
		cjc_buf_adds(why, "cannot load " CJC_CRYPTO_SONAME " (install libssl3) to check keys");
	return loaded;
}

static BIO *key_file_bio(const char *path, struct cjc_buf *data, struct cjc_buf *why)
{
	if (!crypto_loaded(why))
		return NULL;
	if (cjc_read_bounded(AT_FDCWD, path, 0, KEY_FILE_MAX, data)) {
		cjc_buf_addf(why, "cannot read key file %s: %s", path, cjc_untrusted_error(errno));
		return NULL;
	}
	return api.new_mem_buf(data->data, (int)data->len);
}

/* An encrypted key is not supported: no passphrase, and never a prompt on
 * the terminal in the middle of a build (OpenSSL's default). */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return -1;
}

static EVP_PKEY *read_private(const char *path, struct cjc_buf *why)
{
	struct cjc_buf data = CJC_BUF_INIT;
	BIO *bio = key_file_bio(path, &data, why);
	EVP_PKEY *key = bio ? api.read_private(bio, NULL, no_passphrase, NULL) : NULL;
	if (bio && (!key || api.base_id(key) != EVP_PKEY_ED25519)) {
		cjc_buf_addf(why, "%s holds no unencrypted Ed25519 private key in PEM form "
			     "(make one with `openssl genpkey -algorithm ed25519`)", path);
		api.pkey_free(key);
		key = NULL;
	}
	if (bio)
		api.bio_free(bio);
	if (data.data)
		api.cleanse(data.data, data.len); /* the private key's bytes */
	cjc_buf_release(&data);
	return key;
}

/* The raw public keys in a file of PEM public keys (at most MAX_TRUSTED). */
static int read_trusted(const char *path, unsigned char keys[][PUBLIC_LEN], size_t *n,
			struct cjc_buf *why)
{
	struct cjc_buf data = CJC_BUF_INIT;
	BIO *bio = key_file_bio(path, &data, why);
	EVP_PKEY *key;
	*n = 0;
	while (bio && *n < MAX_TRUSTED && (key = api.read_public(bio, NULL, NULL, NULL))) {
		size_t len = PUBLIC_LEN;
		if (api.base_id(key) == EVP_PKEY_ED25519 &&
		    api.get_raw_public(key, keys[*n], &len) == 1 && len == PUBLIC_LEN)
			(*n)++;
		api.pkey_free(key);
	}
	if (bio && !*n)
		cjc_buf_addf(why, "%s holds no Ed25519 public key in PEM form "
			     "(make one with `openssl pkey -pubout`)", path);
	if (bio)
		api.bio_free(bio);
	cjc_buf_release(&data);
	return *n ? 0 : -1;
}

int cjc_sign(const char *key_file, const void *data, size_t len, struct cjc_buf *out,
	     struct cjc_buf *why)
{
	EVP_PKEY *key = read_private(key_file, why);
	if (!key)
		return -1;
	unsigned char pub[PUBLIC_LEN], sig[SIGNATURE_LEN];
	size_t publen = sizeof pub, siglen = sizeof sig;
	EVP_MD_CTX *ctx = api.ctx_new();
	int ok = ctx && api.get_raw_public(key, pub, &publen) == 1 &&
		 api.sign_init(ctx, NULL, NULL, NULL, key) == 1 &&
		 api.sign(ctx, sig, &siglen, data, len) == 1 && siglen == SIGNATURE_LEN;
	api.ctx_free(ctx);
	api.pkey_free(key);
	if (!ok) {
		cjc_buf_addf(why, "cannot sign with %s", key_file);
		return -1;
	}
	char pubhex[2 * PUBLIC_LEN + 1], sighex[2 * SIGNATURE_LEN + 1];
	cjc_hex(pub, sizeof pub, pubhex);
	cjc_hex(sig, sizeof sig, sighex);
	cjc_buf_addf(out, "%s%s %s\n", sig_magic, pubhex, sighex);
	return 0;
}

static int unhex(const char *s, unsigned char *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + k];
			if (c >= '0' && c <= '9')
				v = v * 16 + (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v = v * 16 + (unsigned)(c - 'a' + 10);
			else
				return -1;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

/* Splits a signature file into its public key and signature. */
static int parse_signature(const char *s, size_t n, unsigned char pub[PUBLIC_LEN],
			   unsigned char sig[SIGNATURE_LEN])
{
	size_t m = sizeof sig_magic - 1;
	size_t want = m + 2 * PUBLIC_LEN + 1 + 2 * SIGNATURE_LEN + 1;
	if (n != want || memcmp(s, sig_magic, m) || s[m + 2 * PUBLIC_LEN] != ' ' || s[n - 1] != '\n')
		return -1;
	return unhex(s + m, pub, PUBLIC_LEN) || unhex(s + m + 2 * PUBLIC_LEN + 1, sig, SIGNATURE_LEN);
}

static bool signature_holds(const unsigned char pub[PUBLIC_LEN], const unsigned char sig[SIGNATURE_LEN],
			    const void *data, size_t len)
{
	EVP_PKEY *key = api.new_raw_public(EVP_PKEY_ED25519, NULL, pub, PUBLIC_LEN);
	EVP_MD_CTX *ctx = api.ctx_new();
	bool ok = key && ctx && api.verify_init(ctx, NULL, NULL, NULL, key) == 1 &&
		  api.verify(ctx, sig, SIGNATURE_LEN, data, len) == 1;
	api.ctx_free(ctx);
	api.pkey_free(key);
	return ok;
}

/* The public keys a signature may be by: those of trusted_file, and the
 * public half of own_key_file; either may be NULL.  -1 (why) when there
 * are none. */
static int allowed_keys(const char *trusted_file, const char *own_key_file,
			unsigned char keys[][PUBLIC_LEN], size_t *n, struct cjc_buf *why)
{
	struct cjc_buf unread = CJC_BUF_INIT; /* said only when no key is left */
	*n = 0;
	if (trusted_file)
		(void)read_trusted(trusted_file, keys, n, &unread);
	if (own_key_file && unread.len)
		cjc_buf_adds(&unread, "; ");
	EVP_PKEY *own = own_key_file ? read_private(own_key_file, &unread) : NULL;
	size_t len = PUBLIC_LEN;
	if (own && api.get_raw_public(own, keys[*n], &len) == 1 && len == PUBLIC_LEN)
		(*n)++;
	if (own)
		api.pkey_free(own);
	if (!*n)
		cjc_buf_adds(why, unread.len ? unread.data : "no key to check it with");
	cjc_buf_release(&unread);
	return *n ? 0 : -1;
}

/* cjc_sign_verify_writer, with -2 for a signature that is malformed or false. */
static int verify(const char *trusted_file, const char *own_key_file, const void *data,
		  size_t len, const void *sig, size_t siglen, struct cjc_buf *why)
{
	unsigned char keys[MAX_TRUSTED + 1][PUBLIC_LEN], pub[PUBLIC_LEN], raw[SIGNATURE_LEN];
	size_t n;
	if (!siglen) {
		cjc_buf_adds(why, "not signed");
		return -1;
	}
	if (parse_signature(sig, siglen, pub, raw)) {
		cjc_buf_adds(why, "malformed signature");
		return -2;
	}
	if (allowed_keys(trusted_file, own_key_file, keys, &n, why))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (memcmp(keys[i], pub, PUBLIC_LEN))
			continue;
		if (signature_holds(pub, raw, data, len))
			return 0;
		cjc_buf_adds(why, "signature does not match what it signs");
		return -2;
	}
	cjc_buf_adds(why, "signed by a key that is not in trusted_keys");
	return -1;
}

int cjc_sign_verify(const char *trusted_file, const void *data, size_t len, const void *sig,
		    size_t siglen, struct cjc_buf *why)
{
	return verify(trusted_file, NULL, data, len, sig, siglen, why) ? -1 : 0;
}

int cjc_sign_verify_writer(const char *trusted_file, const char *own_key_file, const void *data,
			   size_t len, const void *sig, size_t siglen, struct cjc_buf *why)
{
	return verify(trusted_file, own_key_file, data, len, sig, siglen, why) ? -1 : 0;
}

int cjc_sign_verify_entry(int dfd, const char *trusted_file, struct cjc_buf *why)
{
	struct cjc_buf meta = CJC_BUF_INIT, sig = CJC_BUF_INIT;
	int rc = cjc_entry_metadata_text(dfd, &meta, why);
	if (!rc && cjc_read_bounded(dfd, CJC_SIGN_FILE, O_NOFOLLOW, CJC_SIGN_MAX, &sig) &&
	    errno != ENOENT)
		rc = -2, cjc_buf_addf(why, "cannot read %s: %s", CJC_SIGN_FILE, cjc_untrusted_error(errno));
	else if (!rc)
		rc = verify(trusted_file, NULL, meta.data, meta.len, sig.data, sig.len, why);
	cjc_buf_release(&meta);
	cjc_buf_release(&sig);
	return rc;
}

static bool by_self(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/*
 * The directory says who published the entry (the staging directory that
 * was renamed into place is its writer's).  metadata.json too, since in a
 * group store entry directories are group-writable (any member may evict):
 * a member could replace the metadata in an entry root wrote, but the file
 * she puts there is hers: the owner is the one of the file that was read
 * (struct cjc_entry's meta_uid), so that swapping it back after the read
 * does not pass.  The artifacts need no check: each is hashed
 * against the metadata as it is served.
 */
bool cjc_sign_written_by_self(const struct cjc_entry *e, uid_t *writer)
{
	struct stat st;
	*writer = (uid_t)-1;
	if (fstat(e->dfd, &st))
		return false;
	*writer = st.st_uid;
	if (!by_self(st.st_uid))
		return false;
	*writer = e->meta_uid;
	return e->meta_uid != (uid_t)-1 && by_self(e->meta_uid);
}

int cjc_sign_check_local_entry(const struct cjc_entry *e, const char *trusted_file,
			       struct cjc_buf *why)
{
	uid_t writer;
	if (!trusted_file || cjc_sign_written_by_self(e, &writer))
		return 0;
	if (writer == (uid_t)-1)
		cjc_buf_adds(why, "its writer cannot be told: ");
	else
		cjc_buf_addf(why, "written by uid %ld, not you or root: ", (long)writer);
	return cjc_sign_verify_entry(e->dfd, trusted_file, why);
}

int cjc_sign_check_private(const char *key_file, struct cjc_buf *why)
{
	EVP_PKEY *key = read_private(key_file, why);
	if (!key)
		return -1;
	api.pkey_free(key);
	return 0;
}

int cjc_sign_check_trusted(const char *trusted_file, size_t *nkeys, struct cjc_buf *why)
{
	unsigned char keys[MAX_TRUSTED][PUBLIC_LEN];
	return read_trusted(trusted_file, keys, nkeys, why);
}
