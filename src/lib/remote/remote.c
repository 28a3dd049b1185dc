/*
 * remote.c - the seam (remote.h): a handle's stores, each a group of
 * servers (one, or a shard each) with the backend its URL picks
 * (setting.c); the requests to them, within the handle's deadline, a
 * failed server left alone for the rest of the handle, every outcome
 * counted.  It calls the backends through their ops (remote_backend.h),
 * and they never call it.  What is built on these requests is in
 * fetch.c, send.c, leases.c and check.c (remote_internal.h).
 */
#include "remote/remote.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/log.h"
#include "remote/helper.h"
#include "remote/remote_internal.h"
#include "store/stats.h"

static char *substitute(const char *url, const char *shard)
{
	const char *star = strchr(url, '*');
	return cjc_xasprintf("%.*s%s%s", (int)(star - url), url, shard, star + 1);
}

static void server_init(struct remote_server *sv, const struct remote_spec *sp, size_t i)
{
	sv->u = sp->u;
	sv->u.url = sp->shards.n ? substitute(sp->u.url, sp->shards.v[i]) : cjc_xstrdup(sp->u.url);
	sv->u.shown = sp->shards.n && strchr(sp->shown, '*') ? substitute(sp->shown, sp->shards.v[i])
							      : cjc_xstrdup(sp->shown);
	sv->u.bearer_token_file = sp->u.bearer_token_file ? cjc_xstrdup(sp->u.bearer_token_file) : NULL;
	sv->u.credentials_file = sp->u.credentials_file ? cjc_xstrdup(sp->u.credentials_file) : NULL;
	sv->u.ca_file = sp->u.ca_file ? cjc_xstrdup(sp->u.ca_file) : NULL;
	sv->ops = remote_ops_for(sv->u.url);
#ifdef CJC_HAVE_CURL
	if (sp->u.helper)
		sv->ops = sv->ops->lease ? &cjc_remote_helped_leasing_ops : &cjc_remote_helped_ops;
#endif
	sv->shard = sp->shards.n ? cjc_xstrdup(sp->shards.v[i]) : NULL;
	sv->weight = sp->shards.n ? sp->weights[i] : 1;
}

static int add_group(const char *word, void *ctx)
{
	struct cjc_remotes *r = ctx;
	struct remote_spec sp;
	struct cjc_buf why = CJC_BUF_INIT;
	int rc = remote_parse_store(word, &sp, &why);
	if (!rc) {
		r->groups = cjc_xrealloc(r->groups, (r->n + 1) * sizeof *r->groups);
		struct remote_group *g = &r->groups[r->n++];
		memset(g, 0, sizeof *g);
		g->shown = cjc_xstrdup(sp.shown);
		g->read_only = sp.u.read_only;
		g->operation_ms = sp.u.operation_ms;
		if (g->operation_ms > r->budget_ms)
			r->budget_ms = g->operation_ms;
		g->combined = remote_ops_for(sp.u.url)->combined;
		g->n = sp.shards.n ? sp.shards.n : 1;
		g->servers = cjc_xcalloc(g->n, sizeof *g->servers);
		for (size_t i = 0; i < g->n; i++)
			server_init(&g->servers[i], &sp, i);
	}
	remote_spec_release(&sp);
	cjc_buf_release(&why);
	return 0; /* config.c reported a bad word already */
}

struct cjc_remotes *cjc_remote_open(const char *text, const struct cjc_store *local,
				    const char *sign_key, const char *trusted_keys,
				    cjc_remote_report_fn report)
{
	struct cjc_remotes *r = cjc_xcalloc(1, sizeof *r);
	r->local = local;
	r->sign_key = sign_key ? cjc_xstrdup(sign_key) : NULL;
	r->trusted_keys = trusted_keys ? cjc_xstrdup(trusted_keys) : NULL;
	r->report = report;
	/* the local namespace's last two components: format and platform */
	const char *platform = strrchr(local->dir, '/');
	snprintf(r->ns, sizeof r->ns, "%s/%s", CJC_STORE_FORMAT, platform ? platform + 1 : "unknown");
	(void)remote_foreach_word(text ? text : "", add_group, r);
	if (!r->n) {
		cjc_remote_close(r);
		return NULL;
	}
	return r;
}

static void flush_counts(const struct cjc_remotes *r, const struct remote_group *g)
{
	bool any = false;
	for (int k = 0; k < CJC_STAT_COUNT; k++)
		any = any || g->counts[k];
	if (!any)
		return;
	if (cjc_stats_add(r->local, g->counts) ||
	    cjc_stats_add_named(r->local, CJC_STATS_BY_REMOTE, g->shown, g->counts))
		cjc_log("cannot count remote store %s: %s", g->shown, strerror(errno));
}

void cjc_remote_close(struct cjc_remotes *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		struct remote_group *g = &r->groups[i];
		flush_counts(r, g);
		for (size_t k = 0; k < g->n; k++) {
			struct remote_server *sv = &g->servers[k];
			if (sv->b)
				sv->ops->close(sv->b);
			cjc_free_secret(sv->u.url);
			free(sv->u.shown);
			free(sv->u.bearer_token_file);
			free(sv->u.credentials_file);
			free(sv->u.ca_file);
			free(sv->shard);
		}
		free(g->servers);
		free(g->shown);
	}
	free(r->groups);
	free(r->lease_value);
	free(r->sign_key);
	free(r->trusted_keys);
	free(r);
}

size_t cjc_remote_count(const struct cjc_remotes *r)
{
	return r ? r->n : 0;
}

const char *cjc_remote_shown(const struct cjc_remotes *r, size_t i)
{
	return r->groups[i].shown;
}

/* --- calling a server --------------------------------------------------- */

/* Which server of a group holds a name: rendezvous hashing (weighted). */
static struct remote_server *server_for(struct remote_group *g, const char *name)
{
	if (g->n == 1)
		return &g->servers[0];
	struct remote_server *best = NULL;
	double best_score = 0;
	for (size_t i = 0; i < g->n; i++) {
		unsigned char d[CJC_DIGEST_LEN];
		struct cjc_hash h;
		cjc_hash_init(&h);
		cjc_hash_str(&h, g->servers[i].shard);
		cjc_hash_str(&h, name);
		cjc_hash_final(&h, d);
		uint64_t x = 0;
		for (int k = 0; k < 8; k++)
			x = x << 8 | d[k];
		double u = ((double)(x >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
		double score = g->servers[i].weight / -log(u);
		if (!best || score > best_score)
			best = &g->servers[i], best_score = score;
	}
	return best;
}

/* Marks a server failed after an error or a timeout: counted, logged, and
 * said once to the user when it is a matter of the settings. */
static int failed(struct cjc_remotes *r, struct remote_group *g, struct remote_server *sv, int result,
		  const char *op, const struct cjc_buf *why)
{
	/* a backend's message may carry a server's words (libcurl's, a helper's) */
	char *text = cjc_printable(why->len ? why->data : "failed");
	sv->failed = true;
	g->counts[result == CJC_REMOTE_TIMEOUT ? CJC_STAT_REMOTE_TIMEOUTS : CJC_STAT_REMOTE_ERRORS]++;
	cjc_log("remote store %s: %s: %s; not used again by this compile", sv->u.shown, op, text);
	if (r->report && cjc_starts_with(text, "setting: "))
		r->report(sv->u.shown, text + 9);
	else if (r->report && !strcmp(op, "connect")) { /* a wrong port, a server down: said once */
		char *said = cjc_xasprintf("cannot connect: %s", text);
		r->report(sv->u.shown, said);
		free(said);
	}
	free(text);
	return result;
}

static struct cjc_remote_backend *connected(struct cjc_remotes *r, struct remote_group *g, struct remote_server *sv)
{
	if (!sv->b) {
		struct cjc_buf why = CJC_BUF_INIT;
		sv->b = sv->ops->open(&sv->u, &why);
		if (!sv->b)
			failed(r, g, sv, errno == ETIMEDOUT ? CJC_REMOTE_TIMEOUT : CJC_REMOTE_ERROR,
			       "connect", &why);
		cjc_buf_release(&why);
	}
	return sv->b;
}

/* One request to sv, the server of g that holds name. */
static int request(struct cjc_remotes *r, struct remote_group *g, struct remote_server *sv, enum remote_op op,
		   const char *name, size_t max, struct cjc_buf *data)
{
	static const char *const verbs[] = { "get", "put", "put", "exists", "lease", "unlease" };
	struct cjc_remote_backend *b = NULL;
	struct cjc_buf why = CJC_BUF_INIT;
	int rc;
	if (g->spent_ms >= g->operation_ms || r->spent_ms >= r->budget_ms) {
		cjc_buf_addf(&why, "timed out: operation-timeout (%ld ms) spent",
			     g->spent_ms >= g->operation_ms ? g->operation_ms : r->budget_ms);
		rc = CJC_REMOTE_TIMEOUT;
	} else if (!(b = connected(r, g, sv))) {
		return CJC_REMOTE_ERROR; /* counted as it failed */
	} else {
		rc = op == REMOTE_GET	   ? sv->ops->get(b, name, max, data, &why)
		   : op == REMOTE_EXISTS  ? sv->ops->exists(b, name, &why)
		   : op == REMOTE_LEASE   ? sv->ops->lease(b, name, data->data, (long)max, &why)
		   : op == REMOTE_UNLEASE ? sv->ops->unlease(b, name, data->data, &why)
				   : sv->ops->put(b, name, data->data, data->len, op == REMOTE_PUT_NEW, &why);
	}
	if (rc == CJC_REMOTE_OK && op == REMOTE_GET)
		g->counts[CJC_STAT_REMOTE_READ] += data->len;
	if (rc == CJC_REMOTE_OK && (op == REMOTE_PUT || op == REMOTE_PUT_NEW))
		g->counts[CJC_STAT_REMOTE_WRITTEN] += data->len;
	if (rc == CJC_REMOTE_ERROR || rc == CJC_REMOTE_TIMEOUT)
		failed(r, g, sv, rc, verbs[op], &why);
	cjc_buf_release(&why);
	return rc;
}

/* A request, within what is left of the store's operation-timeout and of
 * the handle's: all requests of a handle share one (remote.h: the deadline). */
int remote_call(struct cjc_remotes *r, struct remote_group *g, enum remote_op op, const char *name, size_t max,
		struct cjc_buf *data)
{
	struct remote_server *sv = server_for(g, name);
	if (sv->failed)
		return CJC_REMOTE_ERROR;
	int64_t start = cjc_now_ms();
	int64_t left = g->operation_ms - g->spent_ms;
	if (r->budget_ms - r->spent_ms < left)
		left = r->budget_ms - r->spent_ms;
	sv->u.deadline_ms = start + left;
	int rc = request(r, g, sv, op, name, max, data);
	g->spent_ms += cjc_now_ms() - start;
	r->spent_ms += cjc_now_ms() - start;
	return rc;
}

char *remote_name(const struct cjc_remotes *r, char kind, const char *hex)
{
	return cjc_xasprintf("%s/%c/%s", r->ns, kind, hex);
}

int remote_get(struct cjc_remotes *r, struct remote_group *g, char kind, const char *hex, size_t max,
	       struct cjc_buf *out)
{
	char *name = remote_name(r, kind, hex);
	cjc_buf_reset(out);
	int rc = remote_call(r, g, REMOTE_GET, name, max, out);
	free(name);
	return rc;
}

int remote_put(struct cjc_remotes *r, struct remote_group *g, char kind, const char *hex, bool only_new,
	       struct cjc_buf *data)
{
	char *name = remote_name(r, kind, hex);
	int rc = remote_call(r, g, only_new ? REMOTE_PUT_NEW : REMOTE_PUT, name, 0, data);
	free(name);
	return rc;
}

int remote_exists(struct cjc_remotes *r, struct remote_group *g, char kind, const char *hex)
{
	char *name = remote_name(r, kind, hex);
	int rc = remote_call(r, g, REMOTE_EXISTS, name, 0, NULL);
	free(name);
	return rc;
}

/* A whole compile's worth of bad data from one store: that store is done. */
int remote_bad_data(struct cjc_remotes *r, struct remote_group *g, const char *what, const char *key,
		    const char *reason)
{
	struct cjc_buf why = CJC_BUF_INIT;
	cjc_buf_addf(&why, "bad %s for %.16s: %s", what, key, reason);
	failed(r, g, &g->servers[0], CJC_REMOTE_ERROR, "read", &why); /* counted once */
	for (size_t i = 1; i < g->n; i++)
		g->servers[i].failed = true;
	cjc_buf_release(&why);
	return -1;
}

void cjc_remote_hang_up(struct cjc_remotes *r)
{
	for (size_t i = 0; r && i < r->n; i++)
		for (size_t k = 0; k < r->groups[i].n; k++) {
			struct remote_server *sv = &r->groups[i].servers[k];
			if (sv->b)
				sv->ops->close(sv->b);
			sv->b = NULL;
		}
}
