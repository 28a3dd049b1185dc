#include "keys/depfile.h"

#include <errno.h>
#include <string.h>

/* Splits make syntax into words, undoing its escapes. */
static void split_words(const char *s, size_t len, struct cjc_strvec *words)
{
	struct cjc_buf w = CJC_BUF_INIT;
	bool in_word = false;
	const char *end = s + len;
	while (s < end) {
		char c = *s;
		if (c == '\\' && s + 1 < end && (s[1] == '\n' || (s[1] == '\r' && s + 2 < end && s[2] == '\n'))) {
			s += s[1] == '\n' ? 2 : 3;
			c = ' ';
		} else if (c == '\\' && s + 1 < end && (s[1] == ' ' || s[1] == '#' || s[1] == '\\')) {
			cjc_buf_add(&w, s + 1, 1);
			in_word = true;
			s += 2;
			continue;
		} else if (c == '$' && s + 1 < end && s[1] == '$') {
			cjc_buf_add(&w, "$", 1);
			in_word = true;
			s += 2;
			continue;
		} else {
			s++;
		}
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			if (in_word)
				cjc_strvec_pushn(words, w.data, w.len);
			if (c == '\n')
				cjc_strvec_push(words, "\n");
			cjc_buf_reset(&w);
			in_word = false;
			continue;
		}
		cjc_buf_add(&w, &c, 1);
		in_word = true;
	}
	if (in_word)
		cjc_strvec_pushn(words, w.data, w.len);
	cjc_buf_release(&w);
}

int cjc_depfile_parse(const char *text, size_t len, struct cjc_strvec *deps)
{
	struct cjc_strvec words = CJC_STRVEC_INIT;
	split_words(text, len, &words);
	size_t i = 0;
	bool found = false;
	/* The targets end at a word that ends with ':'. */
	while (i < words.n && strcmp(words.v[i], "\n") && !found) {
		size_t n = strlen(words.v[i]);
		found = words.v[i][n - 1] == ':';
		i++;
	}
	for (; found && i < words.n && strcmp(words.v[i], "\n"); i++)
		cjc_strvec_push(deps, words.v[i]);
	cjc_strvec_clear(&words);
	if (!deps->n) {
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

static void add_escaped(struct cjc_buf *out, const char *s)
{
	for (;;) {
		size_t plain = strcspn(s, " #$");
		cjc_buf_add(out, s, plain);
		s += plain;
		if (!*s)
			return;
		cjc_buf_add(out, *s == '$' ? "$" : "\\", 1);
		cjc_buf_add(out, s++, 1);
	}
}

void cjc_depfile_format(struct cjc_buf *out, const char *target, char *const *deps, size_t n,
			bool phony)
{
	add_escaped(out, target);
	cjc_buf_adds(out, " :");
	for (size_t i = 0; i < n; i++) {
		cjc_buf_adds(out, i ? " \\\n    " : " ");
		add_escaped(out, deps[i]);
	}
	cjc_buf_add(out, "\n", 1);
	for (size_t i = 1; phony && i < n; i++) {
		cjc_buf_add(out, "\n", 1);
		add_escaped(out, deps[i]);
		cjc_buf_adds(out, ":\n");
	}
}
