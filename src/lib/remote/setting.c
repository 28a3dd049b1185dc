/*
 * setting.c - the `remote` setting (remote.h): its syntax, checked when the
 * settings are read; what of it may be shown (the user info of each URL
 * as ***); and each store word parsed into a URL and its attributes
 * (struct remote_spec, remote_internal.h), with the backend its scheme
 * picks.
 */
#include "remote/remote.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "remote/helper.h"
#include "remote/remote_internal.h"

#define DEFAULT_CONNECT_MS 100
#define DEFAULT_OPERATION_MS 10000

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

const struct cjc_remote_ops *remote_ops_for(const char *url)
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

void remote_spec_release(struct remote_spec *sp)
{
	cjc_free_secret(sp->u.url);
	free(sp->shown);
	free(sp->u.bearer_token_file);
	free(sp->u.credentials_file);
	free(sp->u.ca_file);
	cjc_strvec_clear(&sp->shards);
}

static int parse_attribute(const char *a, struct remote_spec *sp, struct cjc_buf *why)
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
int remote_parse_store(const char *word, struct remote_spec *sp, struct cjc_buf *why)
{
	memset(sp, 0, sizeof *sp);
	sp->u.connect_ms = DEFAULT_CONNECT_MS;
	sp->u.operation_ms = DEFAULT_OPERATION_MS;
	sp->u.helper_idle_ms = CJC_HELPER_DEFAULT_IDLE_MS;
	const char *bar = strchr(word, '|');
	sp->u.url = bar ? cjc_xstrndup(word, (size_t)(bar - word)) : cjc_xstrdup(word);
	sp->shown = shown_url(word);
	if (!remote_ops_for(sp->u.url)) {
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
	bool redis = cjc_starts_with(sp->u.url, "redis://") ||
		     cjc_starts_with(sp->u.url, "redis+unix:");
	/* no-helper is no news to any other store */
	if (sp->helper == HELPER_ON && !http && !redis) {
		cjc_buf_adds(why, "helper is for http(s)://, s3://, oci:// and redis:// stores");
		return -1;
	}
	/* on unless turned off; for Redis, off unless turned on */
	sp->u.helper = http ? sp->helper != HELPER_OFF : sp->helper == HELPER_ON;
	if (!sp->shards.n != !strchr(sp->u.url, '*')) {
		cjc_buf_adds(why, "shards= needs a '*' in the URL, where each shard's name goes, "
			     "and a '*' needs shards=");
		return -1;
	}
	return 0;
}

int remote_foreach_word(const char *text, int (*fn)(const char *word, void *ctx), void *ctx)
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
	struct remote_spec sp;
	int rc = remote_parse_store(word, &sp, ctx);
	remote_spec_release(&sp);
	return rc;
}

int cjc_remote_check_setting(const char *text, struct cjc_buf *why)
{
	return remote_foreach_word(text, check_word, why);
}
