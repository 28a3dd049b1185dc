/*
 * floor.c - the least a cache hit can do: read and hash every file a
 * translation unit depends on, then copy its output.  bench/run times it
 * as the floor a hit is compared with.
 *
 *     floor LIST-FILE OUTPUT COPY      (LIST-FILE: one dependency path a line)
 */
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int hash_file(const char *path, EVP_MD_CTX *ctx)
{
	unsigned char buf[1 << 16], md[EVP_MAX_MD_SIZE];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		EVP_DigestUpdate(ctx, buf, (size_t)n);
	EVP_DigestFinal_ex(ctx, md, NULL);
	close(fd);
	return n < 0 ? -1 : 0;
}

static int copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n = 0;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	int rc = in < 0 || out < 0 || n < 0 ? -1 : 0;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		rc = -1;
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: floor LIST-FILE OUTPUT COPY\n");
		return 2;
	}
	FILE *list = fopen(argv[1], "r");
	if (!list)
		return perror(argv[1]), 1;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char line[4096];
	int rc = 0;
	while (fgets(line, sizeof line, list)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] && hash_file(line, ctx))
			rc = 1, perror(line);
	}
	fclose(list);
	EVP_MD_CTX_free(ctx);
	if (copy_file(argv[2], argv[3]))
		rc = 1, perror(argv[3]);
	return rc;
}
