/*
 * leases.c - the remote lease (remote.h, compile/lease.h): NS/l/<direct
 * key> in the first store that takes leases, taken, watched and ended
 * through the requests of remote.c, bounded by the wait's own deadline
 * rather than the compile's operation-timeout.
 */
#include "remote/remote.h"

#include <stdlib.h>

#include "base/fs.h"
#include "remote/remote_internal.h"

/* The store that holds leases: the first that is not read-only and whose
 * backend takes them, while it has not failed. */
static struct remote_group *lease_group(struct cjc_remotes *r)
{
	for (size_t i = 0; r && i < r->n; i++) {
		struct remote_group *g = &r->groups[i];
		if (!g->read_only && g->servers[0].ops->lease)
			return g;
	}
	return NULL;
}

/* A lease request, within the store's timeouts and ending by until (the
 * wait's bound, when it is sooner), but not charged to the handle's
 * operation-timeout (remote.h). */
static int lease_call(struct cjc_remotes *r, struct remote_group *g, enum remote_op op, const char *direct_key,
		      long ttl_ms, int64_t until)
{
	char *name = remote_name(r, 'l', direct_key);
	struct cjc_buf value = CJC_BUF_INIT;
	cjc_buf_adds(&value, r->lease_value);
	int64_t g_spent = g->spent_ms, r_spent = r->spent_ms;
	int64_t left = until > 0 ? until - cjc_now_ms() : INT64_MAX;
	/* what is left to the bound counts as all the time the request has */
	g->spent_ms = left < g->operation_ms ? g->operation_ms - left : 0;
	r->spent_ms = left < r->budget_ms ? r->budget_ms - left : 0;
	int rc = left <= 0 ? CJC_REMOTE_TIMEOUT
	       : remote_call(r, g, op, name, (size_t)ttl_ms, op == REMOTE_EXISTS ? NULL : &value);
	g->spent_ms = g_spent;
	r->spent_ms = r_spent;
	cjc_buf_release(&value);
	free(name);
	return rc;
}

enum cjc_remote_lease cjc_remote_lease_take(struct cjc_remotes *r, const char *direct_key,
					    long ttl_ms, int64_t until)
{
	struct remote_group *g = lease_group(r);
	if (!g)
		return CJC_REMOTE_LEASE_NONE;
	if (!r->lease_value)
		r->lease_value = cjc_unique_name("lease");
	int rc = lease_call(r, g, REMOTE_LEASE, direct_key, ttl_ms > 0 ? ttl_ms : 1, until);
	r->lease_taken = rc == CJC_REMOTE_OK;
	return rc == CJC_REMOTE_OK ? CJC_REMOTE_LEASE_TAKEN
	     : rc == CJC_REMOTE_ABSENT ? CJC_REMOTE_LEASE_HELD : CJC_REMOTE_LEASE_NONE;
}

int cjc_remote_lease_held(struct cjc_remotes *r, const char *direct_key, int64_t until)
{
	struct remote_group *g = lease_group(r);
	if (!g)
		return 0;
	int rc = lease_call(r, g, REMOTE_EXISTS, direct_key, 0, until);
	return rc == CJC_REMOTE_OK ? 1 : rc == CJC_REMOTE_ABSENT ? 0 : -1;
}

const char *cjc_remote_lease_store(struct cjc_remotes *r)
{
	struct remote_group *g = lease_group(r);
	return g ? g->shown : NULL;
}

void cjc_remote_lease_end(struct cjc_remotes *r, const char *direct_key)
{
	struct remote_group *g = r && r->lease_taken ? lease_group(r) : NULL;
	if (g)
		(void)lease_call(r, g, REMOTE_UNLEASE, direct_key, 0, 0);
	if (r)
		r->lease_taken = false;
}
