#include "keys/rules.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "keys/key.h"

bool cjc_rules_epoch(void)
{
	return getenv("SOURCE_DATE_EPOCH") != NULL;
}

/* The length of the splice at p (a backslash or ??/, blanks, a newline), or 0. */
static size_t splice_at(const char *p, const char *end)
{
	const char *q = p;
	if (*q == '\\')
		q++;
	else if (end - q >= 3 && !memcmp(q, "?\?/", 3))
		q += 3;
	else
		return 0;
	while (q < end && (*q == ' ' || *q == '\t' || *q == '\f' || *q == '\v' || *q == '\r'))
		q++;
	return q < end && *q == '\n' ? (size_t)(q + 1 - p) : 0;
}

/* text with its line splices removed, in *joined when there are any;
 * returns the text to search and sets *n to its length. */
static const char *join_splices(const char *text, size_t len, struct cjc_buf *joined, size_t *n)
{
	*n = len;
	if (!memchr(text, '\\', len) && !memmem(text, len, "?\?/", 3))
		return text;
	const char *p = text, *end = text + len;
	while (p < end) {
		size_t s = splice_at(p, end);
		if (s)
			p += s;
		else
			cjc_buf_add(joined, p++, 1);
	}
	*n = joined->len;
	return joined->data ? joined->data : "";
}

const char *cjc_rules_time_macro(const char *text, size_t len, bool epoch)
{
	static const char *const macros[] = { "__TIMESTAMP__", "__DATE__", "__TIME__" };
	if (!text)
		return NULL;
	struct cjc_buf joined = CJC_BUF_INIT;
	size_t n;
	const char *t = join_splices(text, len, &joined, &n);
	const char *found = NULL;
	for (size_t i = 0; !found && i < (epoch ? 1 : sizeof macros / sizeof *macros); i++)
		if (memmem(t, n, macros[i], strlen(macros[i])))
			found = macros[i];
	cjc_buf_release(&joined);
	return found;
}

const char *cjc_rules_time_macro_words(char *const *words, size_t n, bool epoch)
{
	const char *found = NULL;
	for (size_t i = 0; !found && i < n; i++)
		if (words[i])
			found = cjc_rules_time_macro(words[i], strlen(words[i]), epoch);
	return found;
}

const char *cjc_rules_time_macro_env(bool epoch, const char **name)
{
	struct cjc_env e;
	cjc_env_read(&e);
	for (size_t i = 0; i < cjc_env_count; i++) {
		const char *v = e.value[i];
		const char *found = v && cjc_env_vars[i].rule == CJC_ENV_KEYED
			? cjc_rules_time_macro(v, strlen(v), epoch) : NULL;
		if (found) {
			*name = cjc_env_vars[i].name;
			return found;
		}
	}
	return NULL;
}

bool cjc_rules_may_include(const char *text, size_t len)
{
	if (!text)
		return false;
	struct cjc_buf joined = CJC_BUF_INIT;
	size_t n;
	const char *t = join_splices(text, len, &joined, &n);
	bool found = memmem(t, n, "include", 7) != NULL;
	cjc_buf_release(&joined);
	return found;
}
