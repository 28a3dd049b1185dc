/*
 * hash.h - SHA-256 for keys and artifacts (OpenSSL's libcrypto, which uses
 * the CPU's SHA instructions).
 *
 * Calling sequence: cjc_hash_init(), any number of cjc_hash_update() /
 * cjc_hash_str(), then cjc_hash_final().  A context holds no resources.
 * cjc_hash_str() hashes the string and its terminating NUL, so that a list of
 * strings hashes unambiguously ("ab","c" differs from "a","bc").
 *
 * cjc_hash_file() returns 0, or -1 with errno set; it hashes the bytes it can
 * read and reports their count, so a caller compares the count with the size
 * it expects (a file that ends early is then caught).
 */
#ifndef CJC_HASH_H
#define CJC_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CJC_DIGEST_LEN 32
#define CJC_HEX_LEN 64

/* OpenSSL's SHA256_CTX, kept opaque here (hash.c checks the size). */
struct cjc_hash {
	_Alignas(16) unsigned char ctx[128];
};

void cjc_hash_init(struct cjc_hash *h);
void cjc_hash_update(struct cjc_hash *h, const void *p, size_t n);
void cjc_hash_str(struct cjc_hash *h, const char *s);
void cjc_hash_final(struct cjc_hash *h, unsigned char out[CJC_DIGEST_LEN]);
/* Final digest as 64 lowercase hex digits plus NUL. */
void cjc_hash_final_hex(struct cjc_hash *h, char out[CJC_HEX_LEN + 1]);

void cjc_hash_buf(const void *p, size_t n, unsigned char out[CJC_DIGEST_LEN]);
void cjc_hash_buf_hex(const void *p, size_t n, char out[CJC_HEX_LEN + 1]);
int cjc_hash_fd(int fd, unsigned char out[CJC_DIGEST_LEN], uint64_t *nread);
/* The same for a regular file whose size fstat(2) gave: it stops once it
 * has read that many bytes, without the read that finds the end (one read
 * a header fewer, measurable over a thousand headers).  A file that grew
 * since may be read past size: *nread then differs from the size, which
 * the caller compares (filehash.c does not remember such a hash). */
int cjc_hash_regular(int fd, uint64_t size, unsigned char out[CJC_DIGEST_LEN], uint64_t *nread);
int cjc_hash_file(const char *path, unsigned char out[CJC_DIGEST_LEN], uint64_t *nread);

void cjc_hex(const unsigned char *in, size_t n, char *out);
/* 64 lowercase hex digits, nothing else. */
bool cjc_is_hex64(const char *s);

#endif
