/*
 * tools.c - the programs a handle's nvcc requests run (nvcc, the host
 * compiler, the `as` PATH finds), identified once per change generation
 * (changes.c) rather than on every request: resolving them on PATH and
 * checking their remembered identities (identity.h) is a few dozen system
 * calls, most of a repeated request's time.
 *
 * What is remembered is used while the generation holds and the request
 * names the same programs under the same PATH, from the same working
 * directory (against which a relative PATH entry is looked up).  Before
 * they are identified, each name PATH may find them under is watched (a
 * program that appears earlier on PATH is an event) and every file their
 * identities rest on, through its links (a program written, replaced or
 * moved is an event); so a change after the watch starts a new generation,
 * and the identities worked out after it saw any change before.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "jit_internal.h"

struct jit_tools {
	uint64_t gen; /* 0: nothing remembered */
	char *nvcc_name, *host_name, *path_env, *cwd;
	struct cjc_identity nvcc, host;
	char *as;
};

/* to is whole or untouched (base/oom.h: an allocation may abandon it). */
static void identity_copy(struct cjc_identity *to, const struct cjc_identity *from)
{
	char *path = cjc_xstrdup(from->path);
	char *real = from->realpath ? cjc_xstrdup(from->realpath) : NULL;
	char *version = from->version ? cjc_xstrdup(from->version) : NULL;
	*to = *from;
	to->path = path;
	to->realpath = real;
	to->version = version;
}

static void forget(struct jit_tools *t)
{
	free(t->nvcc_name);
	free(t->host_name);
	free(t->path_env);
	free(t->cwd);
	free(t->as);
	cjc_identity_release(&t->nvcc);
	cjc_identity_release(&t->host);
	memset(t, 0, sizeof *t);
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* The request's programs: their names, PATH, and the working directory
 * (against which a relative PATH entry or program path is looked up). */
struct tools_asked {
	const char *nvcc, *host, *cwd;
};

/* The remembered tools, copied out, when they are still these. */
static bool recall(struct cjc_jit *h, uint64_t gen, const struct tools_asked *a,
		   struct jit_toolset *out)
{
	jit_lock(h);
	struct jit_tools *t = h->tools;
	bool ok = t && gen && t->gen == gen && same_text(t->nvcc_name, a->nvcc) &&
		  same_text(t->host_name, a->host) && same_text(t->path_env, getenv("PATH")) &&
		  same_text(t->cwd, a->cwd);
	if (ok) {
		identity_copy(&out->nvcc, &t->nvcc);
		identity_copy(&out->host, &t->host);
		out->as = cjc_xstrdup(t->as);
	}
	jit_unlock(h);
	return ok;
}

static void keep(struct cjc_jit *h, uint64_t gen, const struct tools_asked *a,
		 const struct jit_toolset *in)
{
	/* made whole before the handle sees it (base/oom.h) */
	struct jit_tools t = { .gen = gen };
	struct jit_tools *room = cjc_xcalloc(1, sizeof *room);
	t.nvcc_name = cjc_xstrdup(a->nvcc);
	t.host_name = cjc_xstrdup(a->host);
	t.cwd = cjc_xstrdup(a->cwd);
	const char *path = getenv("PATH");
	t.path_env = path ? cjc_xstrdup(path) : NULL;
	t.as = cjc_xstrdup(in->as);
	identity_copy(&t.nvcc, &in->nvcc);
	identity_copy(&t.host, &in->host);
	jit_lock(h);
	if (!h->tools) {
		h->tools = room;
		room = NULL;
	}
	struct jit_tools old = *h->tools;
	*h->tools = t;
	jit_unlock(h);
	forget(&old);
	free(room);
}

/* Whether this is the handle's first identification (and notes it). */
static bool first_request(struct cjc_jit *h)
{
	jit_lock(h);
	bool first = !h->tools;
	jit_unlock(h);
	if (!first)
		return false; /* every request but the first: no allocation */
	struct jit_tools *room = cjc_xcalloc(1, sizeof *room); /* not under the lock: oom.h */
	jit_lock(h);
	first = !h->tools;
	if (first)
		h->tools = room;
	jit_unlock(h);
	if (!first)
		free(room);
	return first;
}

/* path as an absolute one: relative ones (and "" for ".") against cwd. */
static void push_absolute(struct cjc_strvec *paths, const char *cwd, const char *path, size_t n)
{
	char *p = n ? cjc_xstrndup(path, n) : cjc_xstrdup(".");
	char *full = p[0] == '/' ? cjc_xstrdup(p) : cjc_path_join(cwd, p);
	cjc_strvec_push(paths, full);
	free(full);
	free(p);
}

/* Pushes program's path as PATH finds it, and where that leads; for nvcc,
 * also the toolkit's programs its identity hashes. */
static bool push_program(struct cjc_strvec *paths, const char *cwd, const char *program,
			 bool toolkit)
{
	char *path = cjc_find_program(program), real[PATH_MAX];
	bool found = path && realpath(path, real);
	if (found) {
		push_absolute(paths, cwd, path, strlen(path));
		cjc_strvec_push(paths, real);
	}
	char *bin = found && toolkit ? cjc_dirname(real) : NULL;
	for (size_t i = 0; bin && cjc_identity_nvcc_tools[i]; i++) {
		char *tool = cjc_path_join(bin, cjc_identity_nvcc_tools[i]);
		cjc_strvec_push(paths, tool);
		free(tool);
	}
	free(bin);
	free(path);
	return found || !toolkit;
}

/* Where PATH may find program: each directory's name for it (one that
 * appears is an event), as cjc_find_program reads PATH. */
static void push_candidates(struct cjc_strvec *paths, const char *cwd, const char *program)
{
	if (strchr(program, '/'))
		return; /* not looked up on PATH */
	const char *path = getenv("PATH");
	for (path = path ? path : "/usr/local/bin:/usr/bin:/bin"; *path;) {
		size_t n = strcspn(path, ":");
		char *dir = n ? cjc_xstrndup(path, n) : cjc_xstrdup(".");
		char *candidate = cjc_path_join(dir, program);
		push_absolute(paths, cwd, candidate, strlen(candidate));
		free(candidate);
		free(dir);
		path += n + (path[n] == ':');
	}
}

/* Watches every name PATH may find the programs under, and the files the
 * identities rest on: the generation they are watched in, or 0. */
static uint64_t watch_tools(struct cjc_jit *h, const struct tools_asked *a)
{
	struct cjc_strvec paths = CJC_STRVEC_INIT;
	const char *const programs[] = { a->nvcc, a->host, "as" };
	for (size_t i = 0; i < sizeof programs / sizeof *programs; i++)
		push_candidates(&paths, a->cwd, programs[i]);
	bool ok = push_program(&paths, a->cwd, a->nvcc, true) &&
		  push_program(&paths, a->cwd, a->host, false) &&
		  push_program(&paths, a->cwd, "as", false);
	uint64_t g = ok ? jit_changes_watch_paths(h, &paths) : 0;
	cjc_strvec_clear(&paths);
	return g;
}

/* Identifies the three programs now. */
static int identify_now(struct cjc_jit *h, const char *nvcc, const char *host,
			struct jit_toolset *out)
{
	memset(out, 0, sizeof *out);
	if (cjc_identity_nvcc(&h->store, nvcc, &out->nvcc)) {
		jit_note(h, "cannot identify %s: %s", nvcc, strerror(errno));
		return -1;
	}
	if (cjc_identity_host(&h->store, host, &out->host)) {
		jit_note(h, "cannot identify host compiler %s: %s", host, strerror(errno));
		cjc_identity_release(&out->nvcc);
		return -1;
	}
	char *as = cjc_find_program("as");
	out->as = as ? as : cjc_xstrdup("");
	return 0;
}

int jit_tools_identify(struct cjc_jit *h, uint64_t gen, const char *cwd, const char *nvcc,
		       const char *host, struct jit_toolset *out)
{
	const struct tools_asked a = { .nvcc = nvcc, .host = host, .cwd = cwd };
	if (recall(h, gen, &a, out))
		return 0;
	/* watched first, then identified: what is kept was worked out after
	 * the watch began, so a change since is a new generation; not for a
	 * handle's first request, which may be its only one */
	uint64_t watched = gen && !first_request(h) ? watch_tools(h, &a) : 0;
	if (identify_now(h, nvcc, host, out))
		return -1;
	if (watched)
		keep(h, watched, &a, out);
	return 0;
}

void jit_toolset_release(struct jit_toolset *t)
{
	cjc_identity_release(&t->nvcc);
	cjc_identity_release(&t->host);
	free(t->as);
	memset(t, 0, sizeof *t);
}

void jit_tools_release(struct cjc_jit *h)
{
	if (h->tools)
		forget(h->tools);
	free(h->tools);
	h->tools = NULL;
}
