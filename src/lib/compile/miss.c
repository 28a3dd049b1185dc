#include "compile/miss.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/run.h"
#include "keys/depfile.h"
#include "keys/includescan.h"
#include "keys/key.h"
#include "keys/place.h"
#include "keys/rules.h"

void cjc_toolkit_dirs_find(const struct cjc_dep *deps, size_t n, struct cjc_toolkit_dirs *t)
{
	t->include = t->cccl = NULL;
	for (size_t i = 0; i < n && !t->include; i++)
		if (cjc_ends_with(deps[i].path, "/cuda_runtime.h"))
			t->include = cjc_dirname(deps[i].path);
	if (t->include)
		t->cccl = cjc_path_join(t->include, "cccl");
}

void cjc_toolkit_dirs_release(struct cjc_toolkit_dirs *t)
{
	free(t->include);
	free(t->cccl);
}

/*
 * A file changed after this was maybe changed while nvcc read it.  The
 * kernel stamps files with its coarse clock (one tick behind at most) or,
 * since Linux 6.13, with the fine clock once the file was looked at: so the
 * fine clock, less one tick of the coarse one.  Reading the coarse clock
 * instead made files written just before the compile look changed during it.
 */
void cjc_miss_start(struct timespec *t)
{
	struct timespec tick;
	clock_gettime(CLOCK_REALTIME, t);
	if (clock_getres(CLOCK_REALTIME_COARSE, &tick))
		tick = (struct timespec){ 0, 10000000 };
	t->tv_sec -= tick.tv_sec;
	t->tv_nsec -= tick.tv_nsec;
	if (t->tv_nsec < 0)
		t->tv_sec--, t->tv_nsec += 1000000000;
}

static bool newer_than(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* The directories of a search-path variable (CPATH, ...), in order; an
 * empty element is the working directory, as gcc reads them. */
static void push_path_variable(struct cjc_strvec *dirs, const char *name)
{
	const char *v = getenv(name);
	for (const char *s = v && *v ? v : NULL; s;) {
		const char *end = strchr(s, ':');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		if (n)
			cjc_strvec_pushn(dirs, s, n);
		else
			cjc_strvec_push(dirs, ".");
		s = end ? end + 1 : NULL;
	}
}

/* The values of one option (-I, -isystem, -include) in INCLUDES or
 * SYSTEM_INCLUDES, in order (the parse refused any other word, nvcc_args.c). */
static void push_flag_values(struct cjc_strvec *dirs, const char *name, const char *opt)
{
	const char *v = getenv(name);
	size_t n = strlen(opt);
	struct cjc_strvec words = CJC_STRVEC_INIT;
	if (v)
		(void)cjc_key_env_words(v, &words);
	for (size_t i = 0; i < words.n; i++) {
		if (!strcmp(words.v[i], opt) && i + 1 < words.n)
			cjc_strvec_push(dirs, words.v[++i]);
		else if (!strncmp(words.v[i], opt, n) && words.v[i][n])
			cjc_strvec_push(dirs, words.v[i] + n);
	}
	cjc_strvec_clear(&words);
}

/* Whether dir is the same directory (device and inode) as one of dirs, or
 * as one of the host compiler's standard directories known here. */
static bool system_dir(const char *dir, const struct cjc_strvec *dirs)
{
	static const char *const standard[] = { "/usr/local/include", "/usr/include" };
	struct stat a, b;
	if (stat(dir, &a) || !S_ISDIR(a.st_mode))
		return false;
	for (size_t i = 0; i < dirs->n + 2; i++) {
		const char *d = i < dirs->n ? dirs->v[i] : standard[i - dirs->n];
		if (!stat(d, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return true;
	}
	return false;
}

/*
 * The host compiler's search path, in its order: the bracket chain (the
 * command's -I: the user's, the toolkit's include, INCLUDES's; CPATH),
 * then the system chain (the command's -isystem: the user's, the toolkit's
 * cccl, SYSTEM_INCLUDES's; CPLUS_INCLUDE_PATH; the standard directories);
 * C_INCLUDE_PATH (not searched for C++) last, where it can only add
 * candidates.  As gcc does, a bracket directory that is also a system one
 * is dropped (of gcc's standard directories, which are not walked, only
 * /usr/local/include and /usr/include are known here, docs/key.md).
 */
static void search_path(const struct cjc_compile *c, const struct cjc_toolkit_dirs *t,
			struct cjc_strvec *dirs)
{
	struct cjc_strvec bracket = CJC_STRVEC_INIT, system = CJC_STRVEC_INIT;
	cjc_strvec_pushv(&bracket, c->search.dirs.v, c->search.dirs.n);
	if (t->include)
		cjc_strvec_push(&bracket, t->include);
	push_flag_values(&bracket, "INCLUDES", "-I");
	push_flag_values(&bracket, "SYSTEM_INCLUDES", "-I");
	push_path_variable(&bracket, "CPATH");
	cjc_strvec_pushv(&system, c->isystem.v, c->isystem.n);
	if (t->cccl)
		cjc_strvec_push(&system, t->cccl);
	push_flag_values(&system, "INCLUDES", "-isystem");
	push_flag_values(&system, "SYSTEM_INCLUDES", "-isystem");
	push_path_variable(&system, "CPLUS_INCLUDE_PATH");
	for (size_t i = 0; i < bracket.n; i++)
		if (!system_dir(bracket.v[i], &system))
			cjc_strvec_push(dirs, bracket.v[i]);
	cjc_strvec_pushv(dirs, system.v, system.n);
	push_path_variable(dirs, "C_INCLUDE_PATH");
	cjc_strvec_clear(&bracket);
	cjc_strvec_clear(&system);
}

/* Walks a forced include (-include) as gcc finds it (includescan.h). */
static void scan_forced(const struct cjc_miss *m, const char *name, struct cjc_search_path *sp,
			struct cjc_manifest_record *rec)
{
	cjc_includescan_forced(name, m->c->place.cwd ? m->c->place.cwd : ".", sp, &rec->absent);
}

/* The files __has_include found (includescan.h): their presence decides the
 * output, so they join the record's dependencies, hashed as the others. */
static void add_present(const struct cjc_miss *m, struct cjc_manifest_record *rec,
			struct cjc_strvec *present)
{
	cjc_strvec_sort_unique(present);
	for (size_t i = 0; i < present->n; i++) {
		char *path = cjc_place_relativize(&m->c->place, present->v[i]);
		if (!path)
			path = cjc_xstrdup(present->v[i]);
		bool known = false;
		for (size_t k = 0; k < rec->ndeps && !known; k++)
			known = !strcmp(rec->deps[k].path, path);
		struct cjc_dep d = { path, 0, { 0 } };
		if (known || m->hash(m->ctx, path, &d.size, d.sha)) {
			/* one that cannot be hashed (a directory) is kept as a name
			 * that must be absent: the record never matches while it is there */
			if (!known)
				cjc_strvec_push(&rec->absent, present->v[i]);
			free(path);
			continue;
		}
		rec->deps = cjc_xrealloc(rec->deps, (rec->ndeps + 1) * sizeof *rec->deps);
		rec->deps[rec->ndeps++] = d;
	}
}

/* The first answer of look (not NULL) for a *.ii text nvcc kept in dir,
 * with that text's name in *where (malloc'd); or NULL. */
static const char *each_kept(const char *dir,
			     const char *(*look)(const struct cjc_buf *text, const void *ctx),
			     const void *ctx, char **where)
{
	const char *found = NULL;
	DIR *d = opendir(dir);
	for (struct dirent *e; d && !found && (e = readdir(d));) {
		struct cjc_buf text = CJC_BUF_INIT;
		char *path = cjc_path_join(dir, e->d_name);
		if (cjc_ends_with(e->d_name, ".ii") && !cjc_read_file(path, &text) &&
		    (found = look(&text, ctx)))
			*where = cjc_xstrdup(e->d_name);
		free(path);
		cjc_buf_release(&text);
	}
	if (d)
		closedir(d);
	return found;
}

/* each_kept's look: the time macro a text shows expanded (rules.h). */
static const char *clock_in(const struct cjc_buf *text, const void *epoch)
{
	return cjc_rules_clock_expanded(text->data, text->len, *(const bool *)epoch);
}

/* each_kept's look: "__builtin_FILE" or the directory dir where a line of
 * the text that is no directive names it: a string the preprocessor wrote
 * (a line marker, "# 12 \"/dir/k.cu\"", names a file it read). */
static const char *path_in(const struct cjc_buf *text, const void *dir)
{
	static const char builtin[] = "__builtin_FILE";
	size_t n = strlen(dir);
	const char *end = text->data + text->len;
	for (const char *line = text->data; line && line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		size_t len = (size_t)((eol ? eol : end) - line);
		const char *p = line;
		while (p < line + len && (*p == ' ' || *p == '\t'))
			p++;
		if (p < line + len && *p != '#' &&
		    (memmem(line, len, dir, n) || memmem(line, len, builtin, sizeof builtin - 1)))
			return dir;
		line = eol ? eol + 1 : NULL;
	}
	return NULL;
}

bool cjc_miss_kept_names(const char *kept, const char *dir)
{
	char *where = NULL;
	bool named = each_kept(kept, path_in, dir, &where) != NULL;
	free(where);
	return named;
}

/* Records the include candidates that must stay absent (includescan.h),
 * what __has_include found, and whether a file uses the time while
 * SOURCE_DATE_EPOCH does not fix it. */
static void scan_files(const struct cjc_miss *m, struct cjc_manifest_record *rec)
{
	struct cjc_search_path sp = CJC_SEARCH_PATH_INIT;
	struct cjc_strvec present = CJC_STRVEC_INIT;
	struct cjc_toolkit_dirs t;
	bool fixed = cjc_rules_epoch();
	cjc_toolkit_dirs_find(rec->deps, rec->ndeps, &t);
	search_path(m->c, &t, &sp.dirs);
	struct cjc_strvec forced = CJC_STRVEC_INIT;
	cjc_strvec_pushv(&forced, m->c->preincludes.v, m->c->preincludes.n);
	push_flag_values(&forced, "INCLUDES", "-include");
	push_flag_values(&forced, "SYSTEM_INCLUDES", "-include");
	for (size_t i = 0; i < forced.n; i++)
		scan_forced(m, forced.v[i], &sp, rec);
	cjc_strvec_clear(&forced);
	size_t ndeps = rec->ndeps;
	for (size_t i = 0; i < ndeps; i++) {
		struct cjc_buf content = CJC_BUF_INIT;
		if (!cjc_read_file(rec->deps[i].path, &content)) {
			const char *macro = cjc_rules_time_macro(content.data, content.len, fixed);
			if (macro && !*m->uncacheable)
				*m->uncacheable = cjc_xasprintf("%s in %s%s", macro, rec->deps[i].path,
								fixed ? "" : " and no SOURCE_DATE_EPOCH");
			if (!*m->uncacheable)
				*m->uncacheable = cjc_rules_unlisted_file_why(
					content.data, content.len, rec->deps[i].path);
			cjc_includescan(rec->deps[i].path, content.data, content.len, &sp, &rec->absent,
					&present);
		}
		cjc_buf_release(&content);
	}
	char *where = NULL;
	const char *expanded = NULL;
	if (m->kept && !*m->uncacheable)
		expanded = each_kept(m->kept, clock_in, &fixed, &where);
	if (expanded)
		*m->uncacheable = cjc_xasprintf("%s expanded by the preprocessor (%s)%s", expanded,
						where, fixed ? "" : " and no SOURCE_DATE_EPOCH");
	free(where);
	add_present(m, rec, &present);
	cjc_strvec_sort_unique(&rec->absent);
	cjc_strvec_clear(&present);
	cjc_strvec_clear(&sp.dirs);
	cjc_toolkit_dirs_release(&t);
}

/* Whether path is the source and holds, read again now, the bytes keyed. */
static bool source_as_keyed(const struct cjc_miss *m, const char *path)
{
	unsigned char now[CJC_DIGEST_LEN];
	uint64_t n;
	return !strcmp(path, m->c->source) && !cjc_hash_file(path, now, &n) &&
	       !memcmp(now, m->source_sha, CJC_DIGEST_LEN);
}

int cjc_miss_record(const struct cjc_miss *m, const char *depfile, struct cjc_manifest_record *rec,
		    bool *stable, struct cjc_buf *why)
{
	struct cjc_buf text = CJC_BUF_INIT;
	struct cjc_strvec deps = CJC_STRVEC_INIT;
	*stable = true;
	if (cjc_read_file(depfile, &text) || cjc_depfile_parse(text.data, text.len, &deps)) {
		cjc_buf_addf(why, "cannot read nvcc's dependency output: %s", strerror(errno));
		cjc_buf_release(&text);
		return -1;
	}
	rec->deps = cjc_xcalloc(deps.n + 1, sizeof *rec->deps);
	for (size_t i = 0; i < deps.n; i++) {
		struct cjc_dep *d = &rec->deps[rec->ndeps++];
		struct stat st;
		/* base_dir: as the arguments, so another checkout finds its own files */
		d->path = cjc_place_relativize(&m->c->place, deps.v[i]);
		if (!d->path)
			d->path = cjc_xstrdup(deps.v[i]);
		/* every file hashed, stable or not: `cjc why` compares them all */
		if (stat(d->path, &st) || m->hash(m->ctx, d->path, &d->size, d->sha)) {
			if (*stable)
				cjc_buf_addf(why, "cannot read %s: %s", d->path, strerror(errno));
			*stable = false;
		} else if (*stable && (newer_than(&st.st_mtim, &m->started) ||
				       newer_than(&st.st_ctim, &m->started)) &&
			   !source_as_keyed(m, d->path)) {
			cjc_buf_addf(why, "%s changed during the compile", d->path);
			*stable = false;
		}
	}
	/* also when not stable: a time macro makes the compile uncacheable, as
	 * counted and said, whether or not a file changed during it */
	char *uncacheable = NULL;
	struct cjc_miss scan = *m;
	scan.uncacheable = &uncacheable;
	scan_files(&scan, rec);
	if (uncacheable && m->uncacheable) {
		*m->uncacheable = uncacheable;
	} else if (uncacheable) {
		cjc_buf_adds(why, uncacheable);
		*stable = false;
		free(uncacheable);
	}
	cjc_strvec_clear(&deps);
	cjc_buf_release(&text);
	return 0;
}

/* The longest preprocessed text read; a longer one is taken to name a path. */
#define PREPROCESSED_MAX ((size_t)256 << 20)

/* The command with words before -E -o out, run, into text: 0, or -1. */
static int preprocess(const struct cjc_miss_preprocess *p, char *const *words, size_t nwords,
		      struct cjc_buf *text)
{
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	char *tail[] = { "-E", "-o", (char *)p->out };
	cjc_strvec_pushv(&argv, p->command->v, p->command->n);
	cjc_strvec_pushv(&argv, words, nwords);
	cjc_strvec_pushv(&argv, tail, 3);
	struct cjc_child child = CJC_CHILD_INIT(argv.v);
	child.env = p->env;
	child.in_fd = child.out_fd = child.err_fd = CJC_RUN_NULL;
	int rc = cjc_run_child(&child)
			 ? -1
			 : cjc_read_bounded(AT_FDCWD, p->out, O_NOFOLLOW, PREPROCESSED_MAX, text);
	(void)unlink(p->out);
	cjc_strvec_clear(&argv);
	return rc;
}

/* Whether -dD's text defines __CUDA_ARCH_LIST__ as more than one
 * architecture, or not at all. */
static bool several_archs(const struct cjc_buf *text)
{
	static const char def[] = "\n#define __CUDA_ARCH_LIST__ ";
	const char *p = memmem(text->data, text->len, def, sizeof def - 1);
	if (!p)
		return true;
	p += sizeof def - 1;
	size_t left = text->len - (size_t)(p - text->data);
	const char *nl = memchr(p, '\n', left);
	return memchr(p, ',', nl ? (size_t)(nl - p) : left) != NULL;
}

bool cjc_miss_preprocessed_names(const struct cjc_miss_preprocess *p)
{
	static char *const device[] = { "-Xcompiler", "-dD" };
	static char *const host[] = { "-U__CUDA_ARCH__", "-UCUDA_DOUBLE_MATH_FUNCTIONS" };
	struct cjc_buf text = CJC_BUF_INIT;
	bool names = preprocess(p, device, 2, &text) || several_archs(&text) ||
		     cjc_rules_preprocessed_names(text.data, text.len, p->names, p->n);
	cjc_buf_release(&text);
	if (!names && p->host)
		names = preprocess(p, host, 2, &text) ||
			cjc_rules_preprocessed_names(text.data, text.len, p->names, p->n);
	cjc_buf_release(&text);
	return names;
}
