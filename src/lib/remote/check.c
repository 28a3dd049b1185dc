/*
 * check.c - `cjc remote check` (remote.h): each server of a store reached,
 * read, and, unless the store is read-only, written and read back, through
 * its backend directly (no deadline shared with anything else), with what
 * failed said as the user reads it.
 */
#include "remote/remote.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hash.h"
#include "remote/remote_internal.h"

/* " WHAT: " and a backend's message as the user reads it, escaped (it may
 * hold the server's words), and a newline. */
static void add_reason(struct cjc_buf *report, const char *what, const struct cjc_buf *why)
{
	const char *text = why->len ? why->data : "failed";
	if (cjc_starts_with(text, "setting: "))
		text += 9;
	cjc_buf_addf(report, " %s: ", what);
	cjc_buf_add_printable(report, text, strlen(text));
	cjc_buf_adds(report, "\n");
}

static int check_server(struct cjc_remotes *r, struct remote_group *g, struct remote_server *sv,
			struct cjc_buf *report)
{
	struct cjc_buf why = CJC_BUF_INIT, back = CJC_BUF_INIT, probe = CJC_BUF_INIT;
	char key[CJC_HEX_LEN + 1], *name = NULL;
	int rc = -1;
	cjc_buf_addf(report, "%s:", sv->u.shown);
	sv->u.deadline_ms = cjc_now_ms() + g->operation_ms; /* one for the whole check */
	struct cjc_remote_backend *b = sv->ops->open(&sv->u, &why);
	if (!b) {
		add_reason(report, "cannot connect", &why);
		goto out;
	}
	cjc_buf_addf(&probe, "cjc remote check %lld %d", (long long)cjc_wall_ns(), (int)getpid());
	cjc_hash_buf_hex(probe.data, probe.len, key);
	name = remote_name(r, 'c', key);
	int got = sv->ops->exists(b, name, &why);
	if (got != CJC_REMOTE_ABSENT && got != CJC_REMOTE_OK) {
		/* http connects, resolving the host, on its first request */
		add_reason(report, "cannot reach or read", &why);
		goto out;
	}
	cjc_buf_adds(report, " reached; read;");
	if (g->read_only) {
		cjc_buf_adds(report, " read-only: not written\n");
		rc = 0;
		goto out;
	}
	if (sv->ops->put(b, name, probe.data, probe.len, true, &why) != CJC_REMOTE_OK) {
		add_reason(report, "cannot write", &why);
		goto out;
	}
	if (sv->ops->get(b, name, probe.len, &back, &why) != CJC_REMOTE_OK || back.len != probe.len ||
	    memcmp(back.data, probe.data, probe.len)) {
		if (!why.len)
			cjc_buf_adds(&why, "other bytes");
		add_reason(report, "wrote, but read back", &why);
		goto out;
	}
	cjc_buf_addf(report, " wrote and read back %zu bytes\n", probe.len);
	rc = 0;
out:
	if (b)
		sv->ops->close(b);
	free(name);
	cjc_buf_release(&why);
	cjc_buf_release(&back);
	cjc_buf_release(&probe);
	return rc;
}

int cjc_remote_check(struct cjc_remotes *r, size_t i, struct cjc_buf *report)
{
	struct remote_group *g = &r->groups[i];
	int rc = 0;
	for (size_t k = 0; k < g->n; k++)
		if (check_server(r, g, &g->servers[k], report))
			rc = -1;
	return rc;
}
