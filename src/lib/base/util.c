#include "base/util.h"

#include "base/oom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die_oom(size_t n)
{
	cjc_oom_raise(n);
}

void *cjc_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die_oom(n);
	return p;
}

void *cjc_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die_oom(n * size);
	return p;
}

void *cjc_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		die_oom(n);
	return q;
}

char *cjc_xstrdup(const char *s)
{
	return cjc_xstrndup(s, strlen(s));
}

char *cjc_xstrndup(const char *s, size_t n)
{
	char *p = cjc_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void cjc_replace_string(char **s, const char *text)
{
	char *copy = text ? cjc_xstrdup(text) : NULL;
	free(*s);
	*s = copy;
}

char *cjc_xvasprintf(const char *fmt, va_list ap)
{
	struct cjc_buf b = CJC_BUF_INIT;
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	cjc_buf_grow(&b, (size_t)n + 1);
	vsnprintf(b.data, (size_t)n + 1, fmt, again);
	va_end(again);
	return b.data;
}

char *cjc_xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = cjc_xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

bool cjc_buf_try_grow(struct cjc_buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return true;
	if (extra > SIZE_MAX / 4 - b->len)
		return false;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + extra + 1)
		cap *= 2;
	char *data = realloc(b->data, cap);
	if (!data)
		return false;
	b->data = data;
	b->cap = cap;
	return true;
}

void cjc_buf_grow(struct cjc_buf *b, size_t extra)
{
	if (!cjc_buf_try_grow(b, extra))
		die_oom(b->len + extra);
}

bool cjc_buf_try_add(struct cjc_buf *b, const void *p, size_t n)
{
	if (!cjc_buf_try_grow(b, n))
		return false;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return true;
}

void cjc_buf_add(struct cjc_buf *b, const void *p, size_t n)
{
	if (!cjc_buf_try_add(b, p, n))
		die_oom(b->len + n);
}

void cjc_buf_adds(struct cjc_buf *b, const char *s)
{
	cjc_buf_add(b, s, strlen(s));
}

void cjc_buf_addf(struct cjc_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	cjc_buf_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void cjc_buf_reset(struct cjc_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void cjc_buf_release(struct cjc_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void cjc_free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

void cjc_buf_release_secret(struct cjc_buf *b)
{
	if (b->data)
		explicit_bzero(b->data, b->cap);
	cjc_buf_release(b);
}

char *cjc_buf_detach(struct cjc_buf *b)
{
	cjc_buf_grow(b, 0);
	char *p = b->data;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

void cjc_buf_add_u32(struct cjc_buf *b, uint32_t v)
{
	cjc_buf_grow(b, 4);
	b->len += 4;
	b->data[b->len] = '\0';
	cjc_buf_set_u32(b, b->len - 4, v);
}

void cjc_buf_set_u32(struct cjc_buf *b, size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->data[at + i] = (char)(v >> (8 * i));
}

void cjc_buf_add_u64(struct cjc_buf *b, uint64_t v)
{
	cjc_buf_add_u32(b, (uint32_t)v);
	cjc_buf_add_u32(b, (uint32_t)(v >> 32));
}

void cjc_cursor_init(struct cjc_cursor *c, const void *p, size_t n)
{
	c->p = p;
	c->left = n;
	c->bad = false;
}

const void *cjc_cursor_bytes(struct cjc_cursor *c, size_t n)
{
	if (c->bad || c->left < n) {
		c->bad = true;
		return NULL;
	}
	const void *p = c->p;
	c->p += n;
	c->left -= n;
	return p;
}

uint32_t cjc_cursor_u32(struct cjc_cursor *c)
{
	const unsigned char *p = cjc_cursor_bytes(c, 4);
	if (!p)
		return 0;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t cjc_cursor_u64(struct cjc_cursor *c)
{
	uint64_t lo = cjc_cursor_u32(c);
	uint64_t hi = cjc_cursor_u32(c);
	return lo | hi << 32;
}

void cjc_buf_add_str(struct cjc_buf *b, const char *s)
{
	size_t n = strlen(s);
	cjc_buf_add_u32(b, (uint32_t)n);
	cjc_buf_add(b, s, n);
}

const char *cjc_cursor_chars(struct cjc_cursor *c, size_t max, size_t *len)
{
	uint32_t n = cjc_cursor_u32(c);
	const char *p = n <= max ? cjc_cursor_bytes(c, n) : NULL;
	if (!p || memchr(p, '\0', n)) {
		c->bad = true;
		return NULL;
	}
	*len = n;
	return p;
}

char *cjc_cursor_str(struct cjc_cursor *c, size_t max)
{
	size_t n;
	const char *p = cjc_cursor_chars(c, max, &n);
	return p ? cjc_xstrndup(p, n) : NULL;
}

unsigned cjc_table_hash(const char *s, size_t n)
{
	const uint64_t k = 0x9e3779b97f4a7c15ULL;
	uint64_t h = n * k, w;
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * k;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * k;
	return (unsigned)(h ^ h >> 32);
}

bool cjc_strvec_try_pushn(struct cjc_strvec *sv, const char *s, size_t n)
{
	if (sv->n + 2 > sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 16;
		char **v = realloc(sv->v, cap * sizeof *v);
		if (!v)
			return false;
		sv->v = v;
		sv->cap = cap;
		sv->v[sv->n] = NULL;
	}
	char *copy = malloc(n + 1);
	if (!copy)
		return false;
	memcpy(copy, s, n);
	copy[n] = '\0';
	sv->v[sv->n++] = copy;
	sv->v[sv->n] = NULL;
	return true;
}

bool cjc_strvec_try_push(struct cjc_strvec *sv, const char *s)
{
	return cjc_strvec_try_pushn(sv, s, strlen(s));
}

void cjc_strvec_pushn(struct cjc_strvec *sv, const char *s, size_t n)
{
	if (!cjc_strvec_try_pushn(sv, s, n))
		die_oom(n);
}

void cjc_strvec_push(struct cjc_strvec *sv, const char *s)
{
	cjc_strvec_pushn(sv, s, strlen(s));
}

void cjc_strvec_pushv(struct cjc_strvec *sv, char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cjc_strvec_push(sv, v[i]);
}

void cjc_strvec_clear(struct cjc_strvec *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}

bool cjc_strvec_contains(const struct cjc_strvec *sv, const char *s)
{
	for (size_t i = 0; i < sv->n; i++)
		if (!strcmp(sv->v[i], s))
			return true;
	return false;
}

static bool needs_quotes(const char *s)
{
	if (!*s)
		return true;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *s))
			return true;
	return false;
}

void cjc_shell_quote(struct cjc_buf *out, char *const *argv, size_t argc)
{
	for (size_t i = 0; i < argc; i++) {
		if (i)
			cjc_buf_add(out, " ", 1);
		if (!needs_quotes(argv[i])) {
			cjc_buf_adds(out, argv[i]);
			continue;
		}
		cjc_buf_add(out, "'", 1);
		for (const char *s = argv[i]; *s; s++) {
			if (*s == '\'')
				cjc_buf_adds(out, "'\\''");
			else
				cjc_buf_add(out, s, 1);
		}
		cjc_buf_add(out, "'", 1);
	}
}

/* The length of the UTF-8 sequence at p (at most n bytes) and its code
 * point in *cp; 0 when it is not one (a stray or missing continuation, an
 * overlong form, a surrogate, past U+10FFFF). */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
	static const struct { unsigned char mask, lead; size_t len; uint32_t min; } forms[] = {
		{ 0xe0, 0xc0, 2, 0x80 }, { 0xf0, 0xe0, 3, 0x800 }, { 0xf8, 0xf0, 4, 0x10000 },
	};
	for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
		if ((p[0] & forms[f].mask) != forms[f].lead)
			continue;
		size_t len = forms[f].len;
		if (n < len)
			return 0;
		uint32_t c = p[0] & (0x7fu >> len);
		for (size_t i = 1; i < len; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			c = c << 6 | (p[i] & 0x3f);
		}
		if (c < forms[f].min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
		*cp = c;
		return len;
	}
	return 0;
}

/* Code points that move or hide text on a terminal: the C1 controls, the
 * bidirectional marks, embeddings, overrides and isolates, and the line
 * and paragraph separators. */
static bool hides_text(uint32_t c)
{
	static const uint32_t ranges[][2] = {
		{ 0x80, 0x9f },	    { 0x61c, 0x61c },	{ 0x200e, 0x200f },
		{ 0x2028, 0x202e }, { 0x2066, 0x2069 },
	};
	for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++)
		if (c >= ranges[i][0] && c <= ranges[i][1])
			return true;
	return false;
}

void cjc_buf_add_printable(struct cjc_buf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		uint32_t c = *p;
		size_t len = c < 0x80 ? 1 : utf8_decode(p, (size_t)(end - p), &c);
		if (!len || c < 0x20 || c == 0x7f) {
			cjc_buf_addf(b, "\\x%02x", *p);
			len = 1;
		} else if (hides_text(c)) {
			cjc_buf_addf(b, "\\u{%04x}", (unsigned)c);
		} else {
			cjc_buf_add(b, p, len);
		}
		p += len;
	}
}

char *cjc_printable(const char *s)
{
	struct cjc_buf b = CJC_BUF_INIT;
	cjc_buf_adds(&b, "");
	cjc_buf_add_printable(&b, s, strlen(s));
	return cjc_buf_detach(&b);
}

bool cjc_starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

bool cjc_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

int64_t cjc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cjc_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void cjc_strvec_sort_unique(struct cjc_strvec *sv)
{
	if (sv->n < 2)
		return;
	qsort(sv->v, sv->n, sizeof *sv->v, cmp_str);
	size_t out = 1;
	for (size_t i = 1; i < sv->n; i++) {
		if (!strcmp(sv->v[i], sv->v[out - 1]))
			free(sv->v[i]);
		else
			sv->v[out++] = sv->v[i];
	}
	sv->n = out;
	sv->v[out] = NULL;
}
