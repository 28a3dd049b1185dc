#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_*: see below */
#include "base/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * SHA-256 through OpenSSL's SHA256_* calls, not EVP.  EVP's first digest in
 * a process initialises the provider machinery and reads openssl.cnf: 0.7 ms
 * measured here, a twelfth of a whole heavy hit.  SHA256_* reach the same
 * assembly (SHA instructions where the CPU has them) without it.  OpenSSL 3
 * marks them deprecated but keeps them; EVP stays for signatures (sign.c).
 */
_Static_assert(sizeof(SHA256_CTX) <= sizeof(((struct cjc_hash *)0)->ctx), "SHA256_CTX fits");

static SHA256_CTX *ctx_of(struct cjc_hash *h)
{
	return (SHA256_CTX *)(void *)h->ctx;
}

void cjc_hash_init(struct cjc_hash *h)
{
	SHA256_Init(ctx_of(h));
}

void cjc_hash_update(struct cjc_hash *h, const void *p, size_t n)
{
	SHA256_Update(ctx_of(h), p, n);
}

void cjc_hash_str(struct cjc_hash *h, const char *s)
{
	cjc_hash_update(h, s, strlen(s) + 1);
}

void cjc_hash_final(struct cjc_hash *h, unsigned char out[CJC_DIGEST_LEN])
{
	SHA256_Final(out, ctx_of(h));
}

void cjc_hash_final_hex(struct cjc_hash *h, char out[CJC_HEX_LEN + 1])
{
	unsigned char d[CJC_DIGEST_LEN];
	cjc_hash_final(h, d);
	cjc_hex(d, sizeof d, out);
}

void cjc_hash_buf(const void *p, size_t n, unsigned char out[CJC_DIGEST_LEN])
{
	struct cjc_hash h;
	cjc_hash_init(&h);
	cjc_hash_update(&h, p, n);
	cjc_hash_final(&h, out);
}

void cjc_hash_buf_hex(const void *p, size_t n, char out[CJC_HEX_LEN + 1])
{
	struct cjc_hash h;
	cjc_hash_init(&h);
	cjc_hash_update(&h, p, n);
	cjc_hash_final_hex(&h, out);
}

/* The loop of cjc_hash_fd and cjc_hash_regular: up to the end, or to size
 * bytes (UINT64_MAX: no bound). */
static int hash_reads(int fd, uint64_t size, unsigned char out[CJC_DIGEST_LEN], uint64_t *nread)
{
	char chunk[1 << 16];
	struct cjc_hash h;
	uint64_t total = 0;
	cjc_hash_init(&h);
	while (total < size) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			cjc_hash_final(&h, out);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		cjc_hash_update(&h, chunk, (size_t)n);
		total += (uint64_t)n;
	}
	cjc_hash_final(&h, out);
	if (nread)
		*nread = total;
	return 0;
}

int cjc_hash_fd(int fd, unsigned char out[CJC_DIGEST_LEN], uint64_t *nread)
{
	return hash_reads(fd, UINT64_MAX, out, nread);
}

int cjc_hash_regular(int fd, uint64_t size, unsigned char out[CJC_DIGEST_LEN], uint64_t *nread)
{
	return hash_reads(fd, size, out, nread);
}

int cjc_hash_file(const char *path, unsigned char out[CJC_DIGEST_LEN], uint64_t *nread)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = cjc_hash_fd(fd, out, nread);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

void cjc_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

bool cjc_is_hex64(const char *s)
{
	size_t i;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == CJC_HEX_LEN;
}
