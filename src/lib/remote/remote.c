#include "remote/remote.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/thread.h"
#include "keys/metadata.h"
#include "keys/metamemo.h"
#include "remote/helper.h"
#include "store/records.h"
#include "store/sign.h"
#include "store/stats.h"

#define DEFAULT_CONNECT_MS 100
#define DEFAULT_OPERATION_MS 10000
#define MAX_SHARDS 64
#define RECORD_MAX (CJC_STORE_MAX_METADATA + CJC_SIGN_MAX + 64)
#define MANIFEST_MAX (CJC_STORE_MAX_FILE + CJC_SIGN_MAX + 64)

static const char record_magic[4] = { 'C', 'J', 'C', 'E' };
static const char signed_manifest_magic[4] = { 'C', 'J', 'C', 'S' };

/* One server: a URL, or one shard of a sharded URL. */
struct server {
	struct cjc_remote_url u;
	const struct cjc_remote_ops *ops;
	struct cjc_remote_backend *b;
	char *shard;   /* the shard's name, or NULL */
	double weight;
	bool failed;   /* for the rest of this handle (docs/remote.md: failure) */
};

/* One store of the setting: its servers, its counters. */
struct group {
	char *shown;
	bool read_only;
	struct server *servers;
	size_t n;
	uint64_t counts[CJC_STAT_COUNT];
	long operation_ms; /* what all its requests of this handle may take together */
	int64_t spent_ms;  /* what they took so far */
	char broken[CJC_HEX_LEN + 1]; /* an entry whose record is here but an artifact is not */
};

struct cjc_remotes {
	struct group *groups;
	size_t n;
	const struct cjc_store *local;
	char *sign_key;     /* signs the manifests this handle writes (remote.h) */
	char *trusted_keys;
	cjc_remote_report_fn report;
	char ns[64];
	long budget_ms;   /* what all requests to all stores may take together: the largest operation-timeout */
	int64_t spent_ms; /* what they took so far */
	char *lease_value; /* what this handle's lease holds: its holder's name */
	bool lease_taken;
};

/* --- the setting ------------------------------------------------------ */

/*
 * What is shown of the setting never holds a password, whatever characters
 * the password holds: the text is parsed by the structure of its URLs, not
 * by which characters may end one.  A URL starts at the start of the text
 * or after a blank, with a scheme ("name://", or "redis+unix:"); it runs to
 * the next such start, blanks and '|' included (a password may hold them).
 * Its user info is everything between its "://" and its last '@' (a
 * password may hold '/', ':', '@' or '|' too; the backends take the same
 * span of a URL), shown as ***.  An '@' in an attribute (a file name) hides
 * the URL up to it as well: more hidden than needed, never less.
 */
static bool url_starts(const char *p)
{
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
	return (n && isalpha((unsigned char)*p) && !strncmp(p + n, "://", 3)) ||
	       cjc_starts_with(p, "redis+unix:");
}

/* Where the URL after the one at p starts, or the end of the text. */
static const char *next_url(const char *p)
{
	for (const char *q = p + 1; *q; q++)
		if (isspace((unsigned char)q[-1]) && url_starts(q))
			return q;
	return p + strlen(p);
}

char *cjc_remote_redact(const char *text)
{
	struct cjc_buf b = CJC_BUF_INIT;
	cjc_buf_adds(&b, "");
	for (const char *p = text, *end; *p; p = end) {
		end = next_url(p);
		const char *scheme = memmem(p, (size_t)(end - p), "://", 3);
		const char *info = scheme ? scheme + 3 : end;
		const char *at = memrchr(info, '@', (size_t)(end - info));
		cjc_buf_add(&b, p, (size_t)(info - p));
		if (at) {
			cjc_buf_adds(&b, "***");
			info = at;
		}
		cjc_buf_add(&b, info, (size_t)(end - info));
	}
	return cjc_buf_detach(&b);
}

/* The schemes this cjc knows, whether or not it was built for them. */
static const char *const known_schemes[] = { "redis://", "redis+unix:", "http://", "https://", "s3://",
					      "oci://", "oci+http://" };

char *cjc_remote_redact_rejected(const char *text)
{
	struct cjc_buf b = CJC_BUF_INIT;
	cjc_buf_adds(&b, "");
	for (const char *p = text, *end; *p; p = end) {
		end = next_url(p);
		const char *scheme = "";
		for (size_t i = 0; i < sizeof known_schemes / sizeof *known_schemes; i++)
			if (cjc_starts_with(p, known_schemes[i]))
				scheme = known_schemes[i];
		cjc_buf_addf(&b, "%s%s...", b.len ? " " : "", scheme);
	}
	return cjc_buf_detach(&b);
}

/* A store word's URL as shown: redacted with its attributes (the '|' that
 * seems to start them may be inside a password), then cut before them. */
static char *shown_url(const char *word)
{
	char *shown = cjc_remote_redact(word);
	char *from = strstr(shown, "***@");
	char *bar = strchr(from ? from + 4 : shown, '|');
	if (bar)
		*bar = '\0';
	return shown;
}

static const struct cjc_remote_ops *ops_for(const char *url)
{
	static const struct {
		const char *prefix;
		const struct cjc_remote_ops *ops;
	} schemes[] = {
#ifdef CJC_HAVE_REDIS
		{ "redis://", &cjc_remote_redis_ops }, { "redis+unix:", &cjc_remote_redis_ops },
#endif
#ifdef CJC_HAVE_CURL
		{ "http://", &cjc_remote_http_ops },   { "https://", &cjc_remote_http_ops },
		{ "s3://", &cjc_remote_http_ops },    { "oci://", &cjc_remote_oci_ops },
		{ "oci+http://", &cjc_remote_oci_ops },
#endif
		{ "", NULL },
	};
	for (size_t i = 0; schemes[i].ops; i++)
		if (cjc_starts_with(url, schemes[i].prefix))
			return schemes[i].ops;
	return NULL;
}

/* "100ms", "5s", "2" (seconds) -> milliseconds. */
static int parse_duration(const char *text, long *ms)
{
	char *end;
	if (!isdigit((unsigned char)*text))
		return -1;
	errno = 0;
	long v = strtol(text, &end, 10);
	long mult = !strcmp(end, "ms") ? 1 : !strcmp(end, "s") || !*end ? 1000 : 0;
	if (errno || !mult || v <= 0 || v > 86400000L / mult)
		return -1;
	*ms = v * mult;
	return 0;
}

/* "a,b(2),c" -> names and weights. */
static int parse_shards(const char *text, struct cjc_strvec *names, double *weights)
{
	const char *p = text;
	while (*p) {
		size_t len = strcspn(p, ",(");
		double w = 1;
		const char *next = p + len;
		if (*next == '(') {
			char *end;
			w = strtod(next + 1, &end);
			if (*end != ')' || !(w > 0) || w > 1e6)
				return -1;
			next = end + 1;
		}
		if (!len || names->n >= MAX_SHARDS || (*next && *next != ','))
			return -1;
		weights[names->n] = w;
		cjc_strvec_pushn(names, p, len);
		p = *next ? next + 1 : next;
	}
	return names->n ? 0 : -1;
}

struct store_spec {
	struct cjc_remote_url u; /* url with the '*' still in it */
	char *shown;             /* the url as shown (shown_url) */
	struct cjc_strvec shards;
	double weights[MAX_SHARDS];
	enum { HELPER_DEFAULT, HELPER_ON, HELPER_OFF } helper; /* as written */
};

static void spec_release(struct store_spec *sp)
{
	free(sp->u.url);
	free(sp->shown);
	free(sp->u.bearer_token_file);
	free(sp->u.credentials_file);
	free(sp->u.ca_file);
	cjc_strvec_clear(&sp->shards);
}

static int parse_attribute(const char *a, struct store_spec *sp, struct cjc_buf *why)
{
	const char *eq = strchr(a, '=');
	const char *v = eq ? eq + 1 : "";
	size_t klen = eq ? (size_t)(eq - a) : strlen(a);
#define IS(k) (klen == strlen(k) && !strncmp(a, k, klen))
	if (IS("read-only") && !eq)
		sp->u.read_only = true;
	else if (IS("connect-timeout") && !parse_duration(v, &sp->u.connect_ms))
		;
	else if (IS("operation-timeout") && !parse_duration(v, &sp->u.operation_ms))
		;
	else if (IS("shards") && !parse_shards(v, &sp->shards, sp->weights))
		;
	else if (IS("bearer-token-file") && *v)
		sp->u.bearer_token_file = cjc_xstrdup(v);
	else if (IS("credentials-file") && *v)
		sp->u.credentials_file = cjc_xstrdup(v);
	else if (IS("ca-file") && *v)
		sp->u.ca_file = cjc_xstrdup(v);
	else if ((IS("helper") || IS("no-helper")) && !eq)
		sp->helper = klen == strlen("helper") ? HELPER_ON : HELPER_OFF;
	else if (IS("helper-idle") && !parse_duration(v, &sp->u.helper_idle_ms))
		;
	else {
		/* not echoed: what follows a '|' may be part of a password */
		cjc_buf_adds(why, "an unknown or malformed attribute (expected read-only, "
			     "connect-timeout=T, operation-timeout=T, shards=A,B(2), "
			     "bearer-token-file=FILE, credentials-file=FILE, ca-file=FILE, "
			     "helper, no-helper or "
			     "helper-idle=T)");
		return -1;
	}
#undef IS
	return 0;
}

/* Why a URL has no backend: its scheme unknown (said, with the URL as
 * shown: its user info is ***), or known but not built. */
static void unknown_scheme(const char *word, const char *shown, struct cjc_buf *why)
{
	for (size_t i = 0; i < sizeof known_schemes / sizeof *known_schemes; i++)
		if (cjc_starts_with(word, known_schemes[i])) {
			cjc_buf_addf(why, "'%s...' is not a store URL this cjc was built for (its "
				     "library's headers were not found)", known_schemes[i]);
			return;
		}
	if (!url_starts(word)) {
		cjc_buf_adds(why, "a URL with no scheme (expected redis://, redis+unix:, http://, "
			     "https://, s3://, oci:// or oci+http://)");
		return;
	}
	char *text = cjc_printable(shown);
	cjc_buf_addf(why, "remote '%s': unknown scheme '%.*s'; expected redis, redis+unix, http, "
		     "https, s3, oci, oci+http", text, (int)strcspn(word, ":"), word);
	free(text);
}

/* One word of the setting: URL|attr|attr... */
static int parse_store(const char *word, struct store_spec *sp, struct cjc_buf *why)
{
	memset(sp, 0, sizeof *sp);
	sp->u.connect_ms = DEFAULT_CONNECT_MS;
	sp->u.operation_ms = DEFAULT_OPERATION_MS;
	sp->u.helper_idle_ms = CJC_HELPER_DEFAULT_IDLE_MS;
	const char *bar = strchr(word, '|');
	sp->u.url = bar ? cjc_xstrndup(word, (size_t)(bar - word)) : cjc_xstrdup(word);
	sp->shown = shown_url(word);
	if (!ops_for(sp->u.url)) {
		unknown_scheme(word, sp->shown, why);
		return -1;
	}
	while (bar) {
		const char *next = strchr(bar + 1, '|');
		char *a = next ? cjc_xstrndup(bar + 1, (size_t)(next - bar - 1)) : cjc_xstrdup(bar + 1);
		int rc = parse_attribute(a, sp, why);
		free(a);
		if (rc)
			return -1;
		bar = next;
	}
	bool http = cjc_starts_with(sp->u.url, "http://") || cjc_starts_with(sp->u.url, "https://") ||
		    cjc_starts_with(sp->u.url, "s3://") || cjc_starts_with(sp->u.url, "oci://") ||
		    cjc_starts_with(sp->u.url, "oci+http://");
	if (sp->helper == HELPER_ON && !http) { /* no-helper is no news to any other store */
		cjc_buf_adds(why, "helper is for http://, https://, s3:// and oci:// stores");
		return -1;
	}
	sp->u.helper = http && sp->helper != HELPER_OFF; /* on unless turned off */
	if (!sp->shards.n != !strchr(sp->u.url, '*')) {
		cjc_buf_adds(why, "shards= needs a '*' in the URL, where each shard's name goes, "
			     "and a '*' needs shards=");
		return -1;
	}
	return 0;
}

/* Calls fn for each store word of the setting; stops at the first failure. */
static int foreach_word(const char *text, int (*fn)(const char *word, void *ctx), void *ctx)
{
	const char *p = text;
	while (*p) {
		p += strspn(p, " \t\n");
		size_t len = strcspn(p, " \t\n");
		if (!len)
			break;
		char *word = cjc_xstrndup(p, len);
		int rc = fn(word, ctx);
		free(word);
		if (rc)
			return -1;
		p += len;
	}
	return 0;
}

static int check_word(const char *word, void *ctx)
{
	struct store_spec sp;
	int rc = parse_store(word, &sp, ctx);
	spec_release(&sp);
	return rc;
}

int cjc_remote_check_setting(const char *text, struct cjc_buf *why)
{
	return foreach_word(text, check_word, why);
}

/* --- opening ---------------------------------------------------------- */

static char *substitute(const char *url, const char *shard)
{
	const char *star = strchr(url, '*');
	return cjc_xasprintf("%.*s%s%s", (int)(star - url), url, shard, star + 1);
}

static void server_init(struct server *sv, const struct store_spec *sp, size_t i)
{
	sv->u = sp->u;
	sv->u.url = sp->shards.n ? substitute(sp->u.url, sp->shards.v[i]) : cjc_xstrdup(sp->u.url);
	sv->u.shown = sp->shards.n && strchr(sp->shown, '*') ? substitute(sp->shown, sp->shards.v[i])
							      : cjc_xstrdup(sp->shown);
	sv->u.bearer_token_file = sp->u.bearer_token_file ? cjc_xstrdup(sp->u.bearer_token_file) : NULL;
	sv->u.credentials_file = sp->u.credentials_file ? cjc_xstrdup(sp->u.credentials_file) : NULL;
	sv->u.ca_file = sp->u.ca_file ? cjc_xstrdup(sp->u.ca_file) : NULL;
	sv->ops = ops_for(sv->u.url);
#ifdef CJC_HAVE_CURL
	if (sp->u.helper)
		sv->ops = &cjc_remote_helped_ops;
#endif
	sv->shard = sp->shards.n ? cjc_xstrdup(sp->shards.v[i]) : NULL;
	sv->weight = sp->shards.n ? sp->weights[i] : 1;
}

static int add_group(const char *word, void *ctx)
{
	struct cjc_remotes *r = ctx;
	struct store_spec sp;
	struct cjc_buf why = CJC_BUF_INIT;
	int rc = parse_store(word, &sp, &why);
	if (!rc) {
		r->groups = cjc_xrealloc(r->groups, (r->n + 1) * sizeof *r->groups);
		struct group *g = &r->groups[r->n++];
		memset(g, 0, sizeof *g);
		g->shown = cjc_xstrdup(sp.shown);
		g->read_only = sp.u.read_only;
		g->operation_ms = sp.u.operation_ms;
		if (g->operation_ms > r->budget_ms)
			r->budget_ms = g->operation_ms;
		g->n = sp.shards.n ? sp.shards.n : 1;
		g->servers = cjc_xcalloc(g->n, sizeof *g->servers);
		for (size_t i = 0; i < g->n; i++)
			server_init(&g->servers[i], &sp, i);
	}
	spec_release(&sp);
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
	(void)foreach_word(text ? text : "", add_group, r);
	if (!r->n) {
		cjc_remote_close(r);
		return NULL;
	}
	return r;
}

static void flush_counts(const struct cjc_remotes *r, const struct group *g)
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
		struct group *g = &r->groups[i];
		flush_counts(r, g);
		for (size_t k = 0; k < g->n; k++) {
			struct server *sv = &g->servers[k];
			if (sv->b)
				sv->ops->close(sv->b);
			free(sv->u.url);
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

long cjc_remote_time_left(const struct cjc_remote_url *u)
{
	return u->deadline_ms ? (long)(u->deadline_ms - cjc_now_ms()) : u->operation_ms;
}

/* Which server of a group holds a name: rendezvous hashing (weighted). */
static struct server *server_for(struct group *g, const char *name)
{
	if (g->n == 1)
		return &g->servers[0];
	struct server *best = NULL;
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
static int failed(struct cjc_remotes *r, struct group *g, struct server *sv, int result,
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

static struct cjc_remote_backend *connected(struct cjc_remotes *r, struct group *g, struct server *sv)
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

enum op { GET, PUT, PUT_NEW, EXISTS, LEASE, UNLEASE };

/* One request to sv, the server of g that holds name. */
static int request(struct cjc_remotes *r, struct group *g, struct server *sv, enum op op,
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
		rc = op == GET	   ? sv->ops->get(b, name, max, data, &why)
		   : op == EXISTS  ? sv->ops->exists(b, name, &why)
		   : op == LEASE   ? sv->ops->lease(b, name, data->data, (long)max, &why)
		   : op == UNLEASE ? sv->ops->unlease(b, name, data->data, &why)
				   : sv->ops->put(b, name, data->data, data->len, op == PUT_NEW, &why);
	}
	if (rc == CJC_REMOTE_OK && op == GET)
		g->counts[CJC_STAT_REMOTE_READ] += data->len;
	if (rc == CJC_REMOTE_OK && (op == PUT || op == PUT_NEW))
		g->counts[CJC_STAT_REMOTE_WRITTEN] += data->len;
	if (rc == CJC_REMOTE_ERROR || rc == CJC_REMOTE_TIMEOUT)
		failed(r, g, sv, rc, verbs[op], &why);
	cjc_buf_release(&why);
	return rc;
}

/* A request, within what is left of the store's operation-timeout and of
 * the handle's: all requests of a handle share one (remote.h: the deadline). */
static int call(struct cjc_remotes *r, struct group *g, enum op op, const char *name, size_t max,
		struct cjc_buf *data)
{
	struct server *sv = server_for(g, name);
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

static char *remote_name(const struct cjc_remotes *r, char kind, const char *hex)
{
	return cjc_xasprintf("%s/%c/%s", r->ns, kind, hex);
}

static int get(struct cjc_remotes *r, struct group *g, char kind, const char *hex, size_t max,
	       struct cjc_buf *out)
{
	char *name = remote_name(r, kind, hex);
	cjc_buf_reset(out);
	int rc = call(r, g, GET, name, max, out);
	free(name);
	return rc;
}

static int put(struct cjc_remotes *r, struct group *g, char kind, const char *hex, bool only_new,
	       struct cjc_buf *data)
{
	char *name = remote_name(r, kind, hex);
	int rc = call(r, g, only_new ? PUT_NEW : PUT, name, 0, data);
	free(name);
	return rc;
}

static int exists(struct cjc_remotes *r, struct group *g, char kind, const char *hex)
{
	char *name = remote_name(r, kind, hex);
	int rc = call(r, g, EXISTS, name, 0, NULL);
	free(name);
	return rc;
}

/* A whole compile's worth of bad data from one store: that store is done. */
static int bad_data(struct cjc_remotes *r, struct group *g, const char *what, const char *key,
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

/* --- fetching ----------------------------------------------------------- */

struct fetched {
	struct cjc_buf record, meta, sig;
	json_t *doc;
	struct cjc_artifact *files;
	size_t nfiles;
	const atomic_bool *stop; /* a fetch ahead no longer wanted (below): no more requests */
};

static void fetched_release(struct fetched *f)
{
	cjc_buf_release(&f->record);
	cjc_buf_release(&f->meta);
	cjc_buf_release(&f->sig);
	json_decref(f->doc);
	cjc_artifacts_free(f->files, f->nfiles);
}

/* The two values remote.h lays out as a blob of two u32-prefixed strings
 * (the entry record, the signed manifest), pointing into data: the first
 * non-empty and at most max_first bytes, the second a signature file. */
struct pair {
	const void *first, *second;
	size_t first_len, second_len;
};

static int decode_pair(const void *data, size_t len, const char magic[4], size_t max_first,
		       struct pair *out)
{
	const void *p;
	size_t n;
	if (cjc_blob_decode(data, len, magic, &p, &n))
		return -1;
	struct cjc_cursor c;
	cjc_cursor_init(&c, p, n);
	uint32_t flen = cjc_cursor_u32(&c);
	out->first = cjc_cursor_bytes(&c, flen);
	uint32_t slen = cjc_cursor_u32(&c);
	out->second = cjc_cursor_bytes(&c, slen);
	out->first_len = flen;
	out->second_len = slen;
	return c.bad || c.left || !flen || flen > max_first || slen > CJC_SIGN_MAX ? -1 : 0;
}

static void encode_pair(const char magic[4], const void *first, size_t first_len,
			const void *second, size_t second_len, struct cjc_buf *out)
{
	struct cjc_buf payload = CJC_BUF_INIT;
	cjc_buf_add_u32(&payload, (uint32_t)first_len);
	cjc_buf_add(&payload, first, first_len);
	cjc_buf_add_u32(&payload, (uint32_t)second_len);
	cjc_buf_add(&payload, second, second_len);
	cjc_blob_encode(out, magic, payload.data, payload.len);
	cjc_buf_release(&payload);
}

int cjc_remote_decode_record(const void *data, size_t len, struct cjc_buf *meta, struct cjc_buf *sig)
{
	struct pair pr;
	if (decode_pair(data, len, record_magic, CJC_STORE_MAX_METADATA, &pr))
		return -1;
	cjc_buf_add(meta, pr.first, pr.first_len);
	cjc_buf_add(sig, pr.second, pr.second_len);
	return 0;
}

static int decode_record(struct fetched *f)
{
	return cjc_remote_decode_record(f->record.data, f->record.len, &f->meta, &f->sig);
}

void cjc_remote_encode_record(const struct cjc_buf *meta, const struct cjc_buf *sig, struct cjc_buf *out)
{
	encode_pair(record_magic, meta->data, meta->len, sig->data, sig->len, out);
}

int cjc_remote_decode_manifest(const void *data, size_t len, const void **file, size_t *file_len,
			       const void **sig, size_t *sig_len)
{
	struct pair pr = { .first = data, .first_len = len, .second = "", .second_len = 0 };
	if (len >= 4 && !memcmp(data, signed_manifest_magic, 4) &&
	    decode_pair(data, len, signed_manifest_magic, CJC_STORE_MAX_FILE, &pr))
		return -1;
	*file = pr.first;
	*file_len = pr.first_len;
	*sig = pr.second;
	*sig_len = pr.second_len;
	return 0;
}

/* What a manifest's signature signs: a text naming it and the direct key it
 * is stored under, then the manifest file's bytes.  So it is never taken
 * for an entry's (metadata.json is a JSON object), nor a server's copy of
 * one direct key's manifest for another's. */
static void manifest_signed_bytes(const char *direct_key, const void *file, size_t n,
				  struct cjc_buf *out)
{
	cjc_buf_addf(out, "cudajitcache.manifest.v1 %s\n", direct_key);
	cjc_buf_add(out, file, n);
}

/* Whether a trusted key (or, for a writer, its own sign_key) signed a
 * manifest: 0, or -1 with why. */
static int manifest_signed(const char *trusted_keys, const char *own_key, const char *direct_key,
			   const void *file, size_t n, const void *sig, size_t siglen,
			   struct cjc_buf *why)
{
	struct cjc_buf bytes = CJC_BUF_INIT;
	manifest_signed_bytes(direct_key, file, n, &bytes);
	int rc = cjc_sign_verify_writer(trusted_keys, own_key, bytes.data, bytes.len, sig, siglen, why);
	cjc_buf_release(&bytes);
	return rc;
}

/* The entry record of key from g, checked: 0, or -1 (counted). */
static int fetch_record(struct cjc_remotes *r, struct group *g, const char *key, struct fetched *f)
{
	int rc = get(r, g, 'e', key, RECORD_MAX, &f->record);
	if (rc != CJC_REMOTE_OK)
		return -1;
	if (decode_record(f))
		return bad_data(r, g, "entry record", key, "not a record");
	struct cjc_buf why = CJC_BUF_INIT;
	if (r->trusted_keys &&
	    cjc_sign_verify(r->trusted_keys, f->meta.data, f->meta.len, f->sig.data, f->sig.len, &why)) {
		cjc_log("remote store %s: entry %s not served: %s", g->shown, key, why.data);
		g->counts[CJC_STAT_UNTRUSTED]++;
		cjc_buf_release(&why);
		return -1;
	}
	if (!r->trusted_keys)
		cjc_buf_reset(&f->sig); /* not checked here: not kept, not passed on */
	f->doc = cjc_metadata_parse(f->meta.data, f->meta.len, key, &why);
	if (f->doc)
		f->files = cjc_metadata_artifacts(f->doc, &f->nfiles);
	rc = f->doc && f->files ? 0 : bad_data(r, g, "metadata", key, why.len ? why.data : "no files");
	if (!rc) { /* checked: the local read that serves it need not parse it again */
		unsigned char sha[CJC_DIGEST_LEN];
		cjc_hash_buf(f->meta.data, f->meta.len, sha);
		cjc_metamemo_add(key, sha, f->files, f->nfiles,
				 json_integer_value(json_object_get(f->doc, "duration_ms")));
	}
	cjc_buf_release(&why);
	return rc;
}

/* Fetches each artifact by its hash into the staging, checked. */
static int fetch_artifacts(struct cjc_remotes *r, struct group *g, const char *key,
			   const struct fetched *f, struct cjc_staging *st)
{
	struct cjc_buf data = CJC_BUF_INIT;
	int rc = 0;
	for (size_t i = 0; !rc && i < f->nfiles; i++) {
		const struct cjc_artifact *a = &f->files[i];
		char sha[CJC_HEX_LEN + 1];
		if (f->stop && atomic_load(f->stop)) {
			rc = -1;
			break;
		}
		if (a->size > CJC_REMOTE_MAX_ARTIFACT) {
			rc = bad_data(r, g, "artifact", key, "larger than a remote artifact may be");
			break;
		}
		int got = get(r, g, 'c', a->sha256, a->size, &data);
		if (got == CJC_REMOTE_ABSENT)
			snprintf(g->broken, sizeof g->broken, "%s", key); /* evicted: see send_entry */
		if (got != CJC_REMOTE_OK) {
			rc = -1;
			break;
		}
		cjc_hash_buf_hex(data.data, data.len, sha);
		if (data.len != a->size || strcmp(sha, a->sha256))
			rc = bad_data(r, g, "artifact", key, "size or SHA-256 differs from the metadata");
		else if (cjc_staging_add_checked(st, a->name, data.data, data.len, sha))
			rc = -1, cjc_log("cannot stage %s: %s", a->name, strerror(errno));
	}
	cjc_buf_release(&data);
	return rc;
}

/* The manifest a store holds for direct_key, decoded: 0, or -1 (counted).
 * With trusted_keys, only one that a trusted key signed; any other is a
 * miss, counted as untrusted, and nothing it names is looked at on this
 * machine: a server's records never make it stat or hash a file. */
static int fetch_manifest(struct cjc_remotes *r, struct group *g, const char *direct_key,
			  struct cjc_manifest *m)
{
	struct cjc_buf raw = CJC_BUF_INIT, why = CJC_BUF_INIT;
	const void *file = NULL, *sig = NULL;
	size_t file_len = 0, sig_len = 0;
	int rc = get(r, g, 'm', direct_key, MANIFEST_MAX, &raw) == CJC_REMOTE_OK ? 0 : -1;
	if (!rc && cjc_remote_decode_manifest(raw.data, raw.len, &file, &file_len, &sig, &sig_len))
		rc = bad_data(r, g, "manifest", direct_key, "damaged");
	if (!rc && r->trusted_keys &&
	    manifest_signed(r->trusted_keys, NULL, direct_key, file, file_len, sig, sig_len, &why)) {
		cjc_log("remote store %s: manifest %s not used: %s", g->shown, direct_key, why.data);
		g->counts[CJC_STAT_UNTRUSTED]++;
		rc = -1;
	}
	if (!rc && cjc_manifest_decode_file(file, file_len, m))
		rc = bad_data(r, g, "manifest", direct_key, "damaged");
	cjc_buf_release(&raw);
	cjc_buf_release(&why);
	return rc;
}

/* The staging of a fetched entry: a local copy of one the remote store
 * keeps, whose rename need not be made durable (store.h), or with
 * transient one that is only served. */
static int begin_copy(const struct cjc_remotes *r, struct cjc_staging *st, bool transient)
{
	int rc = cjc_staging_begin_as(r->local, st, transient);
	if (!rc)
		st->copy = true;
	return rc;
}

/* An entry's record, checked, and its artifacts, staged (into st, begun
 * here unless the caller began it): 0, or -1 (counted). */
static int fetch_entry(struct cjc_remotes *r, struct group *g, const char *key, struct fetched *f,
		       struct cjc_staging *st, bool transient)
{
	int rc = fetch_record(r, g, key, f);
	if (!rc && !st->dir)
		rc = begin_copy(r, st, transient);
	if (!rc)
		rc = fetch_artifacts(r, g, key, f, st);
	return rc;
}

/*
 * The entry of a manifest's first record (the newest: what a fleet's
 * runners match), fetched into a staging (sealed, when it is to be
 * published: cjc_staging_seal) on a thread of its own while the
 * caller matches the manifest against this machine's files, so that the
 * requests, the record's parsing and the artifacts' checks run beside the
 * hashing instead of after it (measured: a heavy remote hit 7 % faster on
 * Redis, 12 % on HTTP; docs/fleet.md).  Which entry it asks for does not
 * depend on those files, so it tells the server nothing that the manifest
 * did not say (the head comment of remote.h).
 *
 * Used only when that record is the one that matches.  Otherwise it is
 * stopped (no request after the one under way), dropped, its staging
 * removed, and what it did to the store's state is undone (struct undo):
 * its errors, a server it marked failed (that connection is closed), an
 * entry it found broken.  What stays is the time and the bytes it took.
 * Until the thread is joined only it uses the store's connections; it
 * runs with all signals blocked, and the staging is made before it starts
 * (the temporary-file list is the main thread's; fs.h).  Only for a record
 * of at least AHEAD_MIN files: a match that hashes fewer is over before a
 * thread would pay (NVRTC's records name one file).
 */
#define AHEAD_MIN 64

/* The store's state before a fetch ahead, put back when it is dropped. */
struct undo {
	uint64_t counts[CJC_STAT_COUNT];
	char broken[CJC_HEX_LEN + 1];
	bool *failed;
};

struct ahead {
	struct cjc_remotes *r;
	struct group *g;
	const char *key;
	struct fetched f;
	struct cjc_staging st;
	atomic_bool stop;
	int rc;
	bool started;
	bool transient; /* the staging's (store.h) */
	pthread_t thread;
	struct undo undo;
};

/* The entry, staged; one to be published is also sealed here, so that its
 * fsyncs wait beside the match instead of after it (docs/fleet.md).  One
 * already stopped is not: it is dropped, and the caller is waiting. */
static void *fetch_ahead(void *arg)
{
	struct ahead *a = arg;
	a->rc = fetch_entry(a->r, a->g, a->key, &a->f, &a->st, a->transient);
	if (!a->rc && !a->transient && !atomic_load(&a->stop) &&
	    cjc_staging_seal(&a->st, &a->f.meta, &a->f.sig)) {
		cjc_log("cannot stage %s: %s", a->key, strerror(errno));
		a->rc = -1;
	}
	return NULL;
}

/* Starts the fetch ahead of m's first record (its staging made here);
 * a->started says whether it did. */
static void start_ahead(struct ahead *a, const struct cjc_manifest *m)
{
	if (!m->n || m->recs[0].ndeps < AHEAD_MIN ||
	    begin_copy(a->r, &a->st, a->transient))
		return;
	struct undo *u = &a->undo;
	a->key = m->recs[0].entry_key;
	a->f.stop = &a->stop;
	memcpy(u->counts, a->g->counts, sizeof u->counts);
	memcpy(u->broken, a->g->broken, sizeof u->broken);
	u->failed = cjc_xcalloc(a->g->n, sizeof *u->failed);
	for (size_t k = 0; k < a->g->n; k++)
		u->failed[k] = a->g->servers[k].failed;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	a->started = !cjc_thread_start(&a->thread, fetch_ahead, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!a->started) {
		cjc_staging_abort(&a->st);
		free(u->failed);
	}
}

/* Puts back what a dropped fetch ahead changed (struct undo), but for the
 * bytes it read; a server it failed is asked again on a new connection. */
static void undo_ahead(struct group *g, struct undo *u)
{
	uint64_t read = g->counts[CJC_STAT_REMOTE_READ];
	memcpy(g->counts, u->counts, sizeof g->counts);
	g->counts[CJC_STAT_REMOTE_READ] = read;
	memcpy(g->broken, u->broken, sizeof g->broken);
	for (size_t k = 0; k < g->n; k++) {
		struct server *sv = &g->servers[k];
		if (sv->failed && !u->failed[k] && sv->b) {
			sv->ops->close(sv->b);
			sv->b = NULL;
		}
		sv->failed = u->failed[k];
	}
}

/* Record i's entry, as fetch_entry gives it: the fetch ahead's when that
 * was record 0's, else fetched now, the fetch ahead (if any) stopped,
 * dropped and undone. */
static int entry_of(struct ahead *a, const struct cjc_manifest *m, long i, struct fetched *f,
		    struct cjc_staging *st)
{
	if (a->started) {
		if (i != 0)
			atomic_store(&a->stop, true);
		pthread_join(a->thread, NULL);
		a->f.stop = NULL;
		if (i != 0) {
			cjc_staging_abort(&a->st);
			fetched_release(&a->f);
			undo_ahead(a->g, &a->undo);
		}
		free(a->undo.failed);
	}
	if (a->started && i == 0) {
		*f = a->f;
		*st = a->st;
		return a->rc;
	}
	return i >= 0 ? fetch_entry(a->r, a->g, m->recs[i].entry_key, f, st, a->transient) : -1;
}

/* The fetched entry of key in the local store (and its record in the
 * local manifest), or, with keep, left finished in *keep, unpublished.
 * *new_bytes: its size when this call published it. */
static int settle(struct cjc_remotes *r, struct fetched *f, struct cjc_staging *st,
		  const char *direct_key, const struct cjc_manifest_record *rec,
		  struct cjc_staging *keep, uint64_t *new_bytes)
{
	if (keep) {
		int rc = cjc_staging_finish(st, &f->meta, &f->sig);
		if (rc)
			cjc_staging_abort(st);
		else
			*keep = *st, keep->index_doc = NULL; /* f's, released by the caller */
		return rc;
	}
	bool won = false;
	uint64_t bytes = f->meta.len;
	for (size_t k = 0; k < st->nfiles; k++)
		bytes += st->files[k].size;
	if (cjc_staging_publish(r->local, st, rec->entry_key, &f->meta, &f->sig, &won))
		return -1;
	char *mname = cjc_store_manifest_name(direct_key);
	if (cjc_manifest_add(r->local, mname, rec))
		cjc_log("cannot update manifest %s: %s", mname, cjc_untrusted_error(errno));
	free(mname);
	*new_bytes = won ? bytes : 0;
	return 0;
}

/* Tries one store: 0 when its entry is now in the local store, or in *keep. */
static int fetch_from(struct cjc_remotes *r, struct group *g, const char *direct_key,
		      cjc_remote_match_fn match, void *ctx, struct cjc_manifest_record *out,
		      struct cjc_staging *keep, uint64_t *new_bytes)
{
	struct cjc_manifest m = { 0 };
	struct fetched f = { 0 };
	struct cjc_staging st = { 0 };
	uint64_t failures = g->counts[CJC_STAT_REMOTE_ERRORS] + g->counts[CJC_STAT_REMOTE_TIMEOUTS];
	int rc = fetch_manifest(r, g, direct_key, &m);
	struct ahead a = { .r = r, .g = g, .transient = keep != NULL };
	if (!rc)
		start_ahead(&a, &m);
	long i = rc ? -1 : match(ctx, &m);
	rc = entry_of(&a, &m, i, &f, &st);
	st.index_doc = f.doc;
	if (!rc)
		rc = settle(r, &f, &st, direct_key, &m.recs[i], keep, new_bytes);
	else if (st.dir)
		cjc_staging_abort(&st);
	if (!rc) {
		cjc_log("remote hit %s from %s", m.recs[i].entry_key, g->shown);
		*out = m.recs[i]; /* moved out: m no longer owns it */
		memset(&m.recs[i], 0, sizeof m.recs[i]);
	}
	if (!rc)
		g->counts[CJC_STAT_REMOTE_HITS]++;
	else if (g->counts[CJC_STAT_REMOTE_ERRORS] + g->counts[CJC_STAT_REMOTE_TIMEOUTS] == failures)
		g->counts[CJC_STAT_REMOTE_MISSES]++; /* a failed store is counted as failed only */
	fetched_release(&f);
	cjc_manifest_release(&m);
	return rc;
}

void cjc_remote_hang_up(struct cjc_remotes *r)
{
	for (size_t i = 0; r && i < r->n; i++)
		for (size_t k = 0; k < r->groups[i].n; k++) {
			struct server *sv = &r->groups[i].servers[k];
			if (sv->b)
				sv->ops->close(sv->b);
			sv->b = NULL;
		}
}

int cjc_remote_fetch(struct cjc_remotes *r, const char *direct_key, cjc_remote_match_fn match,
		     void *ctx, struct cjc_manifest_record *rec, uint64_t *new_bytes)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (!fetch_from(r, &r->groups[i], direct_key, match, ctx, rec, NULL, new_bytes))
			return 0;
	return -1;
}

int cjc_remote_fetch_unpublished(struct cjc_remotes *r, const char *direct_key,
				 cjc_remote_match_fn match, void *ctx,
				 struct cjc_manifest_record *rec, struct cjc_staging *st)
{
	uint64_t none = 0;
	for (size_t i = 0; r && i < r->n; i++)
		if (!fetch_from(r, &r->groups[i], direct_key, match, ctx, rec, st, &none))
			return 0;
	return -1;
}

/* --- leases (remote.h) --------------------------------------------------- */

/* The store that holds leases: the first that is not read-only and whose
 * backend takes them, while it has not failed. */
static struct group *lease_group(struct cjc_remotes *r)
{
	for (size_t i = 0; r && i < r->n; i++) {
		struct group *g = &r->groups[i];
		if (!g->read_only && g->servers[0].ops->lease)
			return g;
	}
	return NULL;
}

/* A lease request, within the store's timeouts and ending by until (the
 * wait's bound, when it is sooner), but not charged to the handle's
 * operation-timeout (remote.h). */
static int lease_call(struct cjc_remotes *r, struct group *g, enum op op, const char *direct_key,
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
	       : call(r, g, op, name, (size_t)ttl_ms, op == EXISTS ? NULL : &value);
	g->spent_ms = g_spent;
	r->spent_ms = r_spent;
	cjc_buf_release(&value);
	free(name);
	return rc;
}

enum cjc_remote_lease cjc_remote_lease_take(struct cjc_remotes *r, const char *direct_key,
					    long ttl_ms, int64_t until)
{
	struct group *g = lease_group(r);
	if (!g)
		return CJC_REMOTE_LEASE_NONE;
	if (!r->lease_value)
		r->lease_value = cjc_unique_name("lease");
	int rc = lease_call(r, g, LEASE, direct_key, ttl_ms > 0 ? ttl_ms : 1, until);
	r->lease_taken = rc == CJC_REMOTE_OK;
	return rc == CJC_REMOTE_OK ? CJC_REMOTE_LEASE_TAKEN
	     : rc == CJC_REMOTE_ABSENT ? CJC_REMOTE_LEASE_HELD : CJC_REMOTE_LEASE_NONE;
}

int cjc_remote_lease_held(struct cjc_remotes *r, const char *direct_key, int64_t until)
{
	struct group *g = lease_group(r);
	if (!g)
		return 0;
	int rc = lease_call(r, g, EXISTS, direct_key, 0, until);
	return rc == CJC_REMOTE_OK ? 1 : rc == CJC_REMOTE_ABSENT ? 0 : -1;
}

const char *cjc_remote_lease_store(struct cjc_remotes *r)
{
	struct group *g = lease_group(r);
	return g ? g->shown : NULL;
}

void cjc_remote_lease_end(struct cjc_remotes *r, const char *direct_key)
{
	struct group *g = r && r->lease_taken ? lease_group(r) : NULL;
	if (g)
		(void)lease_call(r, g, UNLEASE, direct_key, 0, 0);
	if (r)
		r->lease_taken = false;
}

/* --- publishing --------------------------------------------------------- */

/* A local entry as it is sent: its record and its artifacts' bytes. */
struct outgoing {
	struct cjc_entry e;
	struct cjc_buf record;
	struct cjc_buf *data; /* per artifact, read when first needed */
	bool vouched;         /* sign_key may sign the manifest record naming it */
};

static void outgoing_release(struct outgoing *o)
{
	for (size_t i = 0; o->data && i < o->e.nfiles; i++)
		cjc_buf_release(&o->data[i]);
	free(o->data);
	cjc_buf_release(&o->record);
	cjc_entry_release(&o->e);
}

/* Reads a local entry (or one finished in st) and the signature it has, if any. */
static int outgoing_open(struct cjc_remotes *r, const char *key, const struct cjc_staging *st,
			 struct outgoing *o)
{
	struct cjc_buf meta = CJC_BUF_INIT, sig = CJC_BUF_INIT, why = CJC_BUF_INIT;
	memset(o, 0, sizeof *o);
	enum cjc_lookup found = st ? cjc_staging_open_entry(st, key, &o->e, &why)
				   : cjc_store_read_entry(r->local, key, &o->e, &why);
	int rc = found == CJC_ENTRY_FOUND ? 0 : -1;
	if (!rc)
		rc = cjc_read_bounded(o->e.dfd, "metadata.json", O_NOFOLLOW, CJC_STORE_MAX_METADATA, &meta);
	/* the signature the entry has, if any: only the writer that made the
	 * metadata signs it (launcher.c), never a process that merely read it */
	if (!rc && cjc_read_bounded(o->e.dfd, CJC_SIGN_FILE, O_NOFOLLOW, CJC_SIGN_MAX, &sig))
		cjc_buf_reset(&sig);
	/* A record is as good as the entry it names, whose key is the hash of
	 * the record's files (key.h): so sign_key signs a record when its entry
	 * bears this writer's signature or a trusted key's (the writer's own
	 * compile; an upload of what it or a trusted writer made), and vouches
	 * for no file list someone else wrote into a shared store. */
	if (!rc && r->sign_key && sig.len) {
		struct cjc_buf unsigned_why = CJC_BUF_INIT;
		o->vouched = !cjc_sign_verify_writer(r->trusted_keys, r->sign_key, meta.data, meta.len,
						    sig.data, sig.len, &unsigned_why);
		cjc_buf_release(&unsigned_why);
	}
	if (!rc) {
		cjc_remote_encode_record(&meta, &sig, &o->record);
		o->data = cjc_xcalloc(o->e.nfiles, sizeof *o->data);
	} else {
		cjc_log("cannot send entry %s: %s", key, why.len ? why.data : strerror(errno));
	}
	cjc_buf_release(&meta);
	cjc_buf_release(&sig);
	cjc_buf_release(&why);
	return rc;
}

/* Sends the artifacts the store lacks, then the record: first writer wins.
 * But a record whose artifact this compile found evicted is replaced by
 * ours (nvcc's bytes differ from run to run, so the lost artifact cannot be
 * sent again): else the entry would stay a miss for everyone. */
static int send_entry(struct cjc_remotes *r, struct group *g, const char *key, struct outgoing *o)
{
	bool repair = !strcmp(g->broken, key);
	int rc = repair ? CJC_REMOTE_ABSENT : exists(r, g, 'e', key);
	if (rc != CJC_REMOTE_ABSENT)
		return rc == CJC_REMOTE_OK ? 0 : -1;
	for (size_t i = 0; i < o->e.nfiles; i++) { /* every artifact, each on its own */
		const struct cjc_artifact *a = &o->e.files[i];
		int there = exists(r, g, 'c', a->sha256);
		if (there == CJC_REMOTE_OK)
			continue;
		if (there != CJC_REMOTE_ABSENT)
			return -1;
		struct cjc_buf why = CJC_BUF_INIT;
		if (!o->data[i].len && cjc_entry_read(&o->e, a->name, &o->data[i], &why)) {
			cjc_log("cannot send entry %s: %s", key, why.data);
			there = CJC_REMOTE_ERROR;
		} else {
			there = put(r, g, 'c', a->sha256, true, &o->data[i]);
		}
		cjc_buf_release(&why);
		if (there != CJC_REMOTE_OK)
			return -1; /* no record naming an artifact that is not there */
	}
	return put(r, g, 'e', key, !repair, &o->record) == CJC_REMOTE_OK ? 0 : -1;
}

/* The manifest value for direct_key: old's records with rec first, signed
 * when sign is set and the key can sign (else unsigned, as remote.h lays
 * out). */
static void encode_manifest(struct cjc_remotes *r, const char *direct_key,
			    const struct cjc_manifest *old, const struct cjc_manifest_record *rec,
			    bool sign, struct cjc_buf *out)
{
	struct cjc_buf file = CJC_BUF_INIT, bytes = CJC_BUF_INIT, sig = CJC_BUF_INIT, why = CJC_BUF_INIT;
	cjc_manifest_encode_file_with(old, rec, &file);
	if (sign) {
		manifest_signed_bytes(direct_key, file.data, file.len, &bytes);
		if (cjc_sign(r->sign_key, bytes.data, bytes.len, &sig, &why))
			cjc_log("manifest %s sent unsigned: %s", direct_key, why.data);
	}
	if (sig.len)
		encode_pair(signed_manifest_magic, file.data, file.len, sig.data, sig.len, out);
	else
		cjc_buf_add(out, file.data, file.len);
	cjc_buf_release(&file);
	cjc_buf_release(&bytes);
	cjc_buf_release(&sig);
	cjc_buf_release(&why);
}

static bool names_entry(const struct cjc_manifest *m, const char *entry_key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->recs[i].entry_key, entry_key))
			return true;
	return false;
}

/*
 * Merges rec into the store's manifest (a hint: a lost race costs a miss).
 * A writer that signs keeps the old records only when it may sign them
 * again (a trusted key or its own signed them), else replaces them.  One
 * that does not sign leaves a signed manifest as it is: an unsigned one in
 * its place would be of no use to any reader with trusted_keys.  Neither
 * writes a manifest that already names rec's entry (the entry key is the
 * hash of the record's files, so it is the same record) and is as it would
 * make it.
 */
static int send_manifest(struct cjc_remotes *r, struct group *g, const char *direct_key,
			 const struct cjc_manifest_record *rec, bool sign)
{
	struct cjc_buf raw = CJC_BUF_INIT, out = CJC_BUF_INIT, why = CJC_BUF_INIT;
	struct cjc_manifest old = { 0 };
	const void *file = NULL, *sig = NULL;
	size_t file_len = 0, sig_len = 0;
	int rc = get(r, g, 'm', direct_key, MANIFEST_MAX, &raw);
	bool damaged = rc == CJC_REMOTE_OK &&
		       (cjc_remote_decode_manifest(raw.data, raw.len, &file, &file_len, &sig, &sig_len) ||
			cjc_manifest_decode_file(file, file_len, &old));
	bool is_signed = rc == CJC_REMOTE_OK && !damaged && sig_len;
	bool vouched = is_signed && sign &&
		       !manifest_signed(r->trusted_keys, r->sign_key, direct_key, file, file_len, sig,
					sig_len, &why);
	if (damaged || (sign && !vouched))
		cjc_manifest_release(&old); /* replaced */
	bool keep = sign ? vouched && names_entry(&old, rec->entry_key)
			 : is_signed || names_entry(&old, rec->entry_key);
	if ((rc == CJC_REMOTE_OK || rc == CJC_REMOTE_ABSENT) && !keep) {
		encode_manifest(r, direct_key, &old, rec, sign, &out);
		rc = put(r, g, 'm', direct_key, false, &out);
	}
	cjc_manifest_release(&old);
	cjc_buf_release(&raw);
	cjc_buf_release(&out);
	cjc_buf_release(&why);
	return rc == CJC_REMOTE_OK ? 0 : -1;
}

static int send_everywhere(struct cjc_remotes *r, const char *entry_key, const char *direct_key,
			   const struct cjc_manifest_record *rec, const struct cjc_staging *st)
{
	struct outgoing o;
	int sent = 0;
	if (!r || outgoing_open(r, entry_key, st, &o))
		return 0;
	for (size_t i = 0; i < r->n; i++) {
		struct group *g = &r->groups[i];
		if (g->read_only || send_entry(r, g, entry_key, &o))
			continue;
		bool sign = o.vouched && rec && !strcmp(rec->entry_key, entry_key);
		if (!rec || !send_manifest(r, g, direct_key, rec, sign))
			sent++;
	}
	outgoing_release(&o);
	return sent;
}

int cjc_remote_publish(struct cjc_remotes *r, const char *entry_key, const char *direct_key,
		       const struct cjc_manifest_record *rec)
{
	return send_everywhere(r, entry_key, direct_key, rec, NULL);
}

int cjc_remote_publish_staged(struct cjc_remotes *r, const struct cjc_staging *st,
			      const char *entry_key, const char *direct_key,
			      const struct cjc_manifest_record *rec)
{
	return send_everywhere(r, entry_key, direct_key, rec, st);
}

/* --- checking a store's settings --------------------------------------- */

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

static int check_server(struct cjc_remotes *r, struct group *g, struct server *sv,
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
	struct group *g = &r->groups[i];
	int rc = 0;
	for (size_t k = 0; k < g->n; k++)
		if (check_server(r, g, &g->servers[k], report))
			rc = -1;
	return rc;
}
