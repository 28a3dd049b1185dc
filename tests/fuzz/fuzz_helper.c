/* fuzz_helper.c - libFuzzer: the HTTP helper's protocol as a compile reads
 * it (remote/helper.h): any bytes where an answer should be, then the end
 * of the connection, must give one of the store's results within the
 * bounds asked for, or "the helper failed"; and the settings a helper is
 * started with, decoded. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cudajitcache.h"
#include "remote/helper.h"

#define MAX_ANSWER 60000 /* what a socketpair takes at once, unread */

static void decode_settings(const uint8_t *data, size_t size)
{
	struct cjc_remote_url u;
	char name[CJC_HEX_LEN + 1];
	if (cjc_helper_decode_settings((const char *)data, size, &u, name))
		return;
	if (strlen(name) != CJC_HEX_LEN || u.connect_ms <= 0 || u.helper_idle_ms <= 0)
		__builtin_trap(); /* accepted, so checked */
	free(u.url);
	free(u.shown);
	free(u.bearer_token_file);
	free(u.ca_file);
}

/* The answer's bytes in one end of a socketpair (sv[1]), that end shut
 * for writing: what the compile sends stays in it, unread. */
static void answered(const uint8_t *data, size_t size, int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_settings(data, size);
	if (size > MAX_ANSWER)
		return 0;
	size_t max = size && (data[0] & 1) ? 16 : 4096; /* both sides of small bounds */
	struct cjc_remote_url u = { .url = "http://127.0.0.1:1/", .shown = "http://127.0.0.1:1/",
				    .connect_ms = 100, .operation_ms = 10000 };
	struct cjc_buf out = CJC_BUF_INIT, why = CJC_BUF_INIT;
	int sv[2];
	answered(data, size, sv);
	int rc = cjc_helper_get(sv[0], &u, "v1/linux-x86_64/m/name", max, &out, &why);
	close(sv[0]);
	close(sv[1]);
	if (rc == CJC_REMOTE_OK && out.len > max)
		__builtin_trap();
	if ((rc == CJC_REMOTE_ERROR || rc == CJC_REMOTE_TIMEOUT) && why.len > CJC_HELPER_MAX_MESSAGE + 64)
		__builtin_trap();
	if (rc != CJC_REMOTE_OK && rc != CJC_REMOTE_ABSENT && rc != CJC_REMOTE_ERROR &&
	    rc != CJC_REMOTE_TIMEOUT && rc != CJC_HELPER_BROKEN)
		__builtin_trap();
	cjc_buf_release(&out);
	cjc_buf_release(&why);
	return 0;
}
