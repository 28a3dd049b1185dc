#include "keys/place.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/util.h"

/* Splits an absolute path into its components, "." and ".." applied. */
static void components(const char *path, struct cjc_strvec *out)
{
	char *copy = cjc_xstrdup(path), *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (out->n)
				free(out->v[--out->n]), out->v[out->n] = NULL;
			continue;
		}
		cjc_strvec_push(out, c);
	}
	free(copy);
}

char *cjc_path_normalize(const char *path)
{
	struct cjc_strvec parts = CJC_STRVEC_INIT;
	struct cjc_buf out = CJC_BUF_INIT;
	components(path, &parts);
	for (size_t i = 0; i < parts.n; i++)
		cjc_buf_addf(&out, "/%s", parts.v[i]);
	if (!out.len)
		cjc_buf_adds(&out, "/");
	cjc_strvec_clear(&parts);
	return cjc_buf_detach(&out);
}

char *cjc_place_base_dir(const char *text)
{
	if (text[0] != '/')
		return NULL;
	char *norm = cjc_path_normalize(text);
	if (!strcmp(norm, "/"))
		norm[0] = '\0';
	return norm;
}

/* Whether a normalised absolute path is base or under it. */
static bool under_base(const char *norm, const char *base)
{
	size_t n = strlen(base);
	return !strncmp(norm, base, n) && (norm[n] == '/' || norm[n] == '\0');
}

/* The path from directory `from` to `to`, both normalised and absolute. */
static char *relative_path(const char *from, const char *to)
{
	struct cjc_strvec f = CJC_STRVEC_INIT, t = CJC_STRVEC_INIT;
	struct cjc_buf out = CJC_BUF_INIT;
	components(from, &f);
	components(to, &t);
	size_t common = 0;
	while (common < f.n && common < t.n && !strcmp(f.v[common], t.v[common]))
		common++;
	for (size_t i = common; i < f.n; i++)
		cjc_buf_adds(&out, out.len ? "/.." : "..");
	for (size_t i = common; i < t.n; i++)
		cjc_buf_addf(&out, "%s%s", out.len ? "/" : "", t.v[i]);
	if (!out.len)
		cjc_buf_adds(&out, ".");
	cjc_strvec_clear(&f);
	cjc_strvec_clear(&t);
	return cjc_buf_detach(&out);
}

/* Whether two names reach the same file (or neither exists). */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	bool ha = !stat(a, &sa), hb = !stat(b, &sb);
	if (!ha || !hb)
		return ha == hb;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

char *cjc_place_relativize(const struct cjc_place *p, const char *path)
{
	if (!p || !p->base_dir || !p->cwd || path[0] != '/')
		return NULL;
	char *norm = cjc_path_normalize(path);
	char *rel = NULL;
	if (under_base(norm, p->base_dir)) {
		char *cwd = cjc_path_normalize(p->cwd);
		rel = relative_path(cwd, norm);
		/* A symbolic link on the way makes ".." lead elsewhere: keep the path. */
		char *check = cjc_xasprintf("%s/%s", p->cwd, rel);
		if (!same_file(check, path)) {
			free(rel);
			rel = NULL;
		}
		free(check);
		free(cwd);
	}
	free(norm);
	return rel;
}

char *cjc_place_resolve(const struct cjc_place *p, const char *path)
{
	if (!p || !p->cwd || path[0] == '/')
		return NULL;
	char *joined = cjc_xasprintf("%s/%s", p->cwd, path);
	if (p->base_dir && !p->records_dirs) {
		char *norm = cjc_path_normalize(joined);
		bool relocatable = under_base(norm, p->base_dir);
		free(norm);
		if (relocatable) {
			free(joined);
			return NULL;
		}
	}
	return joined;
}

/* One host-compiler option: does it map `cwd` away? */
static bool maps_cwd(const char *opt, const char *cwd)
{
	static const char *const maps[] = { "-fdebug-prefix-map=", "-ffile-prefix-map=" };
	if (strstr(opt, "-fdebug-compilation-dir="))
		return true;
	for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) {
		const char *m = strstr(opt, maps[i]);
		if (!m)
			continue;
		const char *old = m + strlen(maps[i]);
		const char *eq = strchr(old, '=');
		size_t n = eq ? (size_t)(eq - old) : strlen(old);
		/* gcc compares the old prefix as a plain string prefix */
		if (eq && n && !strncmp(cwd, old, n))
			return true;
	}
	return false;
}

bool cjc_place_maps_cwd(const char *word, const char *cwd)
{
	if (!cwd || !strstr(word, "-f"))
		return false;
	char *copy = cjc_xstrdup(word), *save = NULL;
	bool mapped = false;
	for (char *opt = strtok_r(copy, ",", &save); opt && !mapped; opt = strtok_r(NULL, ",", &save))
		mapped = maps_cwd(opt, cwd);
	free(copy);
	return mapped;
}

char *cjc_place_rule(const struct cjc_place *p)
{
	const char *base = p->base_dir ? (*p->base_dir ? p->base_dir : "/") : NULL;
	if (p->dirs_shared)
		return cjc_xasprintf("hash_dir is false: the directories -lineinfo, -g or -G record "
				     "are not keyed, so the output's debug paths may name another "
				     "checkout%s%s%s", base ? " (base_dir " : "", base ? base : "",
				     base ? ": paths under it are keyed relative to the working directory)" : "");
	if (p->keys_cwd)
		return cjc_xasprintf("the working directory is in the key: %s records it in the output",
				     p->keys_cwd);
	if (base && p->records_dirs)
		return cjc_xasprintf("base_dir %s: paths under it are passed relative to the working "
				     "directory, and keyed by where they resolve (-lineinfo, -g or -G "
				     "record directories)", base);
	if (base)
		return cjc_xasprintf("base_dir %s: paths under it are keyed relative to the working "
				     "directory", base);
	return cjc_xstrdup("relative paths are keyed by where they resolve; the working directory "
			   "is not in the key");
}

char *cjc_place_root(const char *cwd, const char *source)
{
	if (!cwd && source[0] != '/')
		return NULL;
	char *joined = source[0] == '/' ? cjc_xstrdup(source) : cjc_xasprintf("%s/%s", cwd, source);
	char *file = cjc_path_normalize(joined);
	char *dir = cjc_dirname(file);
	char *here = cjc_path_normalize(cwd ? cwd : dir);
	size_t n = 0;
	for (size_t i = 0; dir[i] && dir[i] == here[i]; i++)
		if (dir[i + 1] == '/' || !dir[i + 1])
			n = here[i + 1] == '/' || !here[i + 1] ? i + 1 : n;
	char *root = n > 1 ? cjc_xstrndup(dir, n) : NULL;
	free(here);
	free(dir);
	free(file);
	free(joined);
	return root;
}

/* Whether path starts with the directory dir, lexically ("dir" or "dir/..."). */
static bool starts_with_dir(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

char *cjc_place_rebase(const char *path, const char *from, const char *to)
{
	if (!from || !to || !*from || !starts_with_dir(path, from))
		return NULL;
	return cjc_xasprintf("%s%s", to, path + strlen(from));
}

char *cjc_place_key_path(const struct cjc_place *p, const char *path)
{
	if (!p || !p->root)
		return NULL;
	char *joined = path[0] == '/' || !p->cwd ? cjc_xstrdup(path)
						 : cjc_xasprintf("%s/%s", p->cwd, path);
	char *key = cjc_place_rebase(joined, p->root, "<root>");
	free(joined);
	return key;
}

char *cjc_place_source_name(const struct cjc_place *p)
{
	if (!p || !p->source)
		return NULL;
	if (p->source[0] == '/' || !p->cwd)
		return cjc_xstrdup(p->source);
	return cjc_xasprintf("%s/%s", p->cwd, p->source);
}
