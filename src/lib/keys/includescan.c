#include "keys/includescan.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* Walks the candidates in order; records those before the first that exists. */
static void walk(const char *name, const char *const *dirs, size_t n, struct cjc_strvec *absent)
{
	for (size_t i = 0; i < n; i++) {
		char *cand = cjc_path_join(dirs[i], name);
		struct stat st;
		if (!stat(cand, &st)) {
			free(cand);
			return;
		}
		cjc_strvec_push(absent, cand);
		free(cand);
	}
}

static void resolve(const char *name, bool quoted, const char *own_dir,
		    const struct cjc_search_path *sp, struct cjc_strvec *absent)
{
	if (name[0] == '/')
		return;
	size_t n = 0, cap = 1 + sp->dirs.n;
	const char **dirs = cjc_xcalloc(cap, sizeof *dirs);
	if (quoted)
		dirs[n++] = own_dir;
	for (size_t i = 0; i < sp->dirs.n; i++)
		dirs[n++] = sp->dirs.v[i];
	walk(name, dirs, n, absent);
	free(dirs);
}

void cjc_includescan(const char *file_path, const char *text, size_t len,
		     const struct cjc_search_path *sp, struct cjc_strvec *absent)
{
	char *own_dir = cjc_dirname(file_path);
	const char *end = text + len;
	for (const char *line = text; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		const char *p = skip_blanks(line, eol);
		if (p < eol && *p == '#') {
			p = skip_blanks(p + 1, eol);
			if ((size_t)(eol - p) > 7 && !memcmp(p, "include", 7) &&
			    (p[7] == ' ' || p[7] == '\t' || p[7] == '"' || p[7] == '<')) {
				p = skip_blanks(p + 7, eol);
				char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
				const char *q = close ? memchr(p + 1, close, (size_t)(eol - p - 1)) : NULL;
				if (q && q > p + 1) {
					char *name = cjc_xstrndup(p + 1, (size_t)(q - p - 1));
					resolve(name, close == '"', own_dir, sp, absent);
					free(name);
				}
			}
		}
		line = eol + 1;
	}
	free(own_dir);
}
