#include "keys/includescan.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "keys/rules.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r';
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && blank(*p))
		p++;
	return p;
}

/* Walks the candidates in order; records those before the first that
 * exists, and that one in present (when present is not NULL). */
static void walk(const char *name, const char *const *dirs, size_t n, struct cjc_strvec *absent,
		 struct cjc_strvec *present)
{
	for (size_t i = 0; i < n; i++) {
		char *cand = cjc_path_join(dirs[i], name);
		struct stat st;
		if (!stat(cand, &st)) {
			if (present)
				cjc_strvec_push(present, cand);
			free(cand);
			return;
		}
		cjc_strvec_push(absent, cand);
		free(cand);
	}
}

static void resolve(const char *name, bool quoted, const char *own_dir,
		    const struct cjc_search_path *sp, struct cjc_strvec *absent,
		    struct cjc_strvec *present)
{
	if (name[0] == '/')
		return;
	size_t n = 0, cap = 1 + sp->dirs.n;
	const char **dirs = cjc_xcalloc(cap, sizeof *dirs);
	if (quoted)
		dirs[n++] = own_dir;
	for (size_t i = 0; i < sp->dirs.n; i++)
		dirs[n++] = sp->dirs.v[i];
	walk(name, dirs, n, absent, present);
	free(dirs);
}

/* The header name at p ("name" or <name>) on the line ending at eol, resolved. */
static void name_at(const char *p, const char *eol, const char *own_dir,
		    const struct cjc_search_path *sp, struct cjc_strvec *absent,
		    struct cjc_strvec *present)
{
	char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
	const char *q = close && p + 1 < eol ? memchr(p + 1, close, (size_t)(eol - p - 1)) : NULL;
	if (q && q > p + 1) {
		char *name = cjc_xstrndup(p + 1, (size_t)(q - p - 1));
		resolve(name, close == '"', own_dir, sp, absent, present);
		free(name);
	}
}

/* A directive that includes (#include, #import; '#' or the digraph %:). */
static void directive(const char *p, const char *eol, const char *own_dir,
		      const struct cjc_search_path *sp, struct cjc_strvec *absent)
{
	static const char *const words[] = { "include", "import" };
	if (p < eol && *p == '#')
		p++;
	else if (eol - p >= 2 && p[0] == '%' && p[1] == ':')
		p += 2;
	else
		return;
	p = skip_blanks(p, eol);
	for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
		size_t n = strlen(words[i]);
		if ((size_t)(eol - p) > n && !memcmp(p, words[i], n) &&
		    (blank(p[n]) || p[n] == '"' || p[n] == '<'))
			name_at(skip_blanks(p + n, eol), eol, own_dir, sp, absent, NULL);
	}
}

/* Each __has_include("name") or __has_include(<name>) of the line: the
 * candidates before the one found are absent, and that one is present. */
static void has_include(const char *line, const char *eol, const char *own_dir,
			const struct cjc_search_path *sp, struct cjc_strvec *absent,
			struct cjc_strvec *present)
{
	static const char word[] = "__has_include";
	for (const char *p = line; p < eol && (p = memmem(p, (size_t)(eol - p), word, sizeof word - 1));) {
		p += sizeof word - 1;
		if (p < eol && *p == '_') /* __has_include_next: not followed */
			continue;
		p = skip_blanks(p, eol);
		if (p < eol && *p == '(')
			name_at(skip_blanks(p + 1, eol), eol, own_dir, sp, absent, present);
	}
}

/* Replaces each comment with a blank (strings are not told apart: the raw
 * text is scanned too). */
static void strip_comments(const char *p, size_t len, struct cjc_buf *out)
{
	const char *end = p + len;
	while (p < end) {
		if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
			const char *e = memmem(p + 2, (size_t)(end - p - 2), "*/", 2);
			p = e ? e + 2 : end;
			cjc_buf_add(out, " ", 1);
		} else if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
			const char *e = memchr(p, '\n', (size_t)(end - p));
			p = e ? e : end;
		} else {
			cjc_buf_add(out, p++, 1);
		}
	}
}

static void scan(const char *text, size_t len, const char *own_dir,
		 const struct cjc_search_path *sp, struct cjc_strvec *absent,
		 struct cjc_strvec *present)
{
	const char *end = text + len;
	for (const char *line = text; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		directive(skip_blanks(line, eol), eol, own_dir, sp, absent);
		has_include(line, eol, own_dir, sp, absent, present);
		line = eol + 1;
	}
}

void cjc_includescan(const char *file_path, const char *text, size_t len,
		     const struct cjc_search_path *sp, struct cjc_strvec *absent,
		     struct cjc_strvec *present)
{
	char *own_dir = cjc_dirname(file_path);
	struct cjc_buf joined = CJC_BUF_INIT, plain = CJC_BUF_INIT;
	cjc_rules_join_splices(text ? text : "", len, &joined);
	strip_comments(joined.data ? joined.data : "", joined.len, &plain);
	scan(plain.data ? plain.data : "", plain.len, own_dir, sp, absent, present);
	scan(joined.data ? joined.data : "", joined.len, own_dir, sp, absent, present);
	cjc_buf_release(&joined);
	cjc_buf_release(&plain);
	free(own_dir);
}

void cjc_includescan_forced(const char *name, const char *cwd, const struct cjc_search_path *sp,
			    struct cjc_strvec *absent)
{
	resolve(name, true, cwd, sp, absent, NULL);
}
