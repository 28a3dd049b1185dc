/* blackhole PORTFILE [PORT]: listens on 127.0.0.1 (PORT, or one the kernel
 * picks), writes the port it got to PORTFILE (atomically, through a rename,
 * so a reader sees the whole number or nothing), then accepts connections
 * and holds them open without ever reading or answering: a server that
 * hangs, for the remote stores' timeout tests (tests/servers.sh).
 *
 * blackhole PORTFILE PORT --reply FILE: the same listener (PORT 0: the
 * kernel picks), but each connection, one after the other, is read (up to
 * the blank line that ends an HTTP head, or what a Redis client sent once
 * it stops sending, bounded), answered with FILE's bytes, and closed: a
 * server that dies mid-reply when FILE promises more than it holds
 * ("$100000\r\n" and 10 bytes for Redis; an HTTP head with Content-Length:
 * 100000 and 10 bytes of body). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REPLY_MAX (16 << 20)
#define REQUEST_MAX 65536
#define FIRST_BYTES_MS 5000 /* a client that connects and says nothing */
#define MORE_BYTES_MS 100   /* the rest of a request already on its way */

/* FILE's bytes, up to REPLY_MAX; NULL with a message. */
static char *read_reply(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = f ? malloc(REPLY_MAX) : NULL;
	if (!data) {
		perror(path);
		if (f)
			fclose(f);
		return NULL;
	}
	*len = fread(data, 1, REPLY_MAX, f);
	if (ferror(f) || !feof(f)) {
		fprintf(stderr, "blackhole: %s: unreadable or larger than %d bytes\n", path, REPLY_MAX);
		fclose(f);
		free(data);
		return NULL;
	}
	fclose(f);
	return data;
}

/* Reads what the client sends: waits up to FIRST_BYTES_MS for the first
 * bytes, then takes more while they come within MORE_BYTES_MS, until an
 * HTTP head's blank line, the bound, or the end. */
static void read_request(int c)
{
	static char buf[REQUEST_MAX + 1];
	struct pollfd p = { .fd = c, .events = POLLIN };
	size_t len = 0;
	int wait_ms = FIRST_BYTES_MS;
	while (len < REQUEST_MAX && poll(&p, 1, wait_ms) > 0) {
		ssize_t n = recv(c, buf + len, REQUEST_MAX - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
		wait_ms = MORE_BYTES_MS;
	}
}

/* Writes the reply, then closes gently: a FIN, not a reset, so the client
 * reads every byte before it sees the end (what it sent after the head,
 * an HTTP body, is drained for a moment first). */
static void answer(int c, const char *reply, size_t len)
{
	struct pollfd p = { .fd = c, .events = POLLIN };
	char sink[4096];
	size_t off = 0;
	while (off < len) {
		ssize_t n = send(c, reply + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	shutdown(c, SHUT_WR);
	for (int i = 0; i < 10 && poll(&p, 1, MORE_BYTES_MS) > 0; i++)
		if (recv(c, sink, sizeof(sink), 0) <= 0)
			break;
	close(c);
}

static int serve_replies(int fd, const char *reply, size_t len)
{
	for (;;) {
		int c = accept(fd, NULL, NULL);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("blackhole: accept");
			return 1;
		}
		read_request(c);
		answer(c, reply, len);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr;
	socklen_t len = sizeof(addr);
	char tmp[4096];
	char *reply = NULL;
	size_t reply_len = 0;
	FILE *f;
	int fd, one = 1;

	if ((argc < 2 || argc > 3) && !(argc == 5 && !strcmp(argv[3], "--reply"))) {
		fprintf(stderr, "usage: blackhole PORTFILE [PORT]\n"
				"       blackhole PORTFILE PORT --reply FILE\n");
		return 2;
	}
	if (argc == 5 && !(reply = read_reply(argv[4], &reply_len)))
		return 1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		perror("blackhole: socket");
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons(argc >= 3 ? (unsigned short)atoi(argv[2]) : 0);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &len) < 0) {
		perror("blackhole: bind/listen");
		return 1;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]) >= sizeof(tmp) ||
	    !(f = fopen(tmp, "w")) || fprintf(f, "%u\n", ntohs(addr.sin_port)) < 0 ||
	    fclose(f) != 0 || rename(tmp, argv[1]) != 0) {
		perror("blackhole: port file");
		return 1;
	}
	if (reply)
		return serve_replies(fd, reply, reply_len);
	for (;;) {
		/* Accepted sockets are kept (never closed) so that the client
		 * sees an open connection that says nothing. */
		if (accept(fd, NULL, NULL) < 0 && errno != EINTR) {
			if (errno == EMFILE || errno == ENFILE)
				for (;;)
					pause(); /* the backlog keeps taking connections */
			perror("blackhole: accept");
			return 1;
		}
	}
}
