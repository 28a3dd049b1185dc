/*
 * What a compile does that both compilers' paths share (nvcc.c, nvrtc.c):
 * the private directory a miss compiles in, the request's words in the key
 * and its facts in metadata.json, the post-compile hook, and what a miss
 * prints (DUMP_PTX, DUMP_SASS) and checks (CHECK_NO_SPILLS, ...).
 *
 * The private directory: a miss writes the code into a directory of its
 * own (jit_workdir_make), never into the store, which others may share:
 * there a member could swap the source during a compile, plant a header
 * beside it, or put a link where nvcc writes its output (docs/trust.md).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/run.h"
#include "compile/diagnostics.h"
#include "jit_internal.h"
#include "keys/metadata.h"
#include "store/evict.h"
#include "store/sign.h"
#include "store/stats.h"

/* Prints an entry's files whose names pass `want` under a heading; false
 * when it has none (or there is no such entry). */
static bool print_kept(struct jit_job *j, const char *key, bool (*want)(const char *),
		       const char *what)
{
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	bool printed = false;
	if (!key || cjc_store_read_entry(&j->h->store, key, &e, &why) != CJC_ENTRY_FOUND) {
		cjc_buf_release(&why);
		return false;
	}
	for (size_t i = 0; i < e.nfiles; i++) {
		struct cjc_buf text = CJC_BUF_INIT;
		if (want(e.files[i].name) && !cjc_entry_read(&e, e.files[i].name, &text, &why)) {
			fprintf(stderr, "== %s of %s (%s/%s)\n", what, j->name, e.dir, e.files[i].name);
			(void)!cjc_write_all(2, text.data, text.len);
			printed = true;
		}
		cjc_buf_release(&text);
	}
	cjc_entry_release(&e);
	cjc_buf_release(&why);
	return printed;
}

static bool kept_ptx(const char *name)
{
	return cjc_starts_with(name, "kept-") && cjc_ends_with(name, ".ptx");
}

static bool kept_sass(const char *name)
{
	return !strcmp(name, "sass.txt");
}

static void print_output(const struct jit_job *j, const struct cjc_buf *data, const char *what,
			 const char *from)
{
	fprintf(stderr, "== %s of %s (%s)\n", what, j->name, from);
	(void)!cjc_write_all(2, data->data, data->len);
}

/* Why a miss kept nothing in the store. */
static const char *unpublished_why(const struct jit_job *j)
{
	const struct cjc_jit *h = j->h;
	if (h->cfg.disable)
		return "disable is set";
	if (atomic_load(&h->store_state) < 0)
		return "the cache directory is unusable";
	if (h->cfg.readonly)
		return "readonly is set";
	return "the entry was not published; the log says why";
}

static void print_ptx(struct jit_job *j, const struct cjc_buf *data, const char *key)
{
	bool ptx = j->req->format == CJC_JIT_PTX;
	if (j->h->set.compiler == JIT_NVRTC && ptx)
		print_output(j, data, "PTX", "NVRTC's output");
	else if (j->h->set.compiler == JIT_NVRTC)
		fprintf(stderr, "cjc jit: PTX of %s: not shown: NVRTC was asked for a %s, and "
			"DUMP_PTX shows NVRTC's PTX for a ptx request\n", j->name, j->ext);
	else if (!print_kept(j, key, kept_ptx, "PTX") && ptx)
		print_output(j, data, "PTX", "nvcc's output");
	else if (!key)
		fprintf(stderr, "cjc jit: PTX of %s: not kept: %s\n", j->name, unpublished_why(j));
}

/* The SASS of the output as the toolkit's cuobjdump, else nvdisasm (which
 * reads cubins only), lists it; or one line saying why there is none.  It
 * reads a file, named for its kind, in a private directory of its own. */
static void disassemble(struct jit_job *j, const struct cjc_buf *data)
{
	char real[PATH_MAX];
	char *nvcc = cjc_find_program(j->h->set.text[JIT_NVCC_COMPILER]);
	const char *beside = nvcc && realpath(nvcc, real) ? real : NULL;
	char *tool = cjc_diagnostics_find_tool(beside, "cuobjdump");
	bool nvdisasm = !tool && (tool = cjc_diagnostics_find_tool(beside, "nvdisasm"));
	char *name = cjc_xasprintf("output.%s", j->ext), *output = NULL;
	struct jit_workdir w = { 0 };
	struct cjc_buf sass = CJC_BUF_INIT;
	if (!tool) {
		fprintf(stderr, "cjc jit: SASS of %s: none: neither cuobjdump nor nvdisasm is "
			"installed (beside %s, or on PATH)\n", j->name, beside ? beside : "nvcc");
		goto out;
	}
	if (nvdisasm && j->req->format != CJC_JIT_CUBIN) {
		fprintf(stderr, "cjc jit: SASS of %s: none: cuobjdump is not installed, and nvdisasm "
			"reads cubins, not a %s\n", j->name, j->ext);
		goto out;
	}
	if (jit_workdir_make(j, &w) ||
	    cjc_write_new_file_at(w.fd, name, data->data, data->len, 0600, false)) {
		fprintf(stderr, "cjc jit: SASS of %s: none: cannot write the output for %s: %s\n",
			j->name, tool, *cjc_jit_error(j->h) ? cjc_jit_error(j->h) : strerror(errno));
		jit_clear_error(j->h); /* a listing that cannot be made fails no compile */
		goto out;
	}
	output = cjc_path_join(w.path, name);
	char *cuobjdump_argv[] = { tool, "-sass", output, NULL };
	char *nvdisasm_argv[] = { tool, output, NULL };
	if (cjc_run_capture(nvdisasm ? nvdisasm_argv : cuobjdump_argv, &sass))
		fprintf(stderr, "cjc jit: SASS of %s: none: %s failed on it\n", j->name, tool);
	else
		print_output(j, &sass, "SASS", nvdisasm ? "nvdisasm" : "cuobjdump -sass");
out:
	jit_workdir_remove(&w);
	cjc_buf_release(&sass);
	free(output);
	free(name);
	free(tool);
	free(nvcc);
}

static void print_sass(struct jit_job *j, const struct cjc_buf *data, const char *key)
{
	if (j->req->format == CJC_JIT_PTX)
		fprintf(stderr, "cjc jit: SASS of %s: none: a ptx request has no SASS\n", j->name);
	else if (!print_kept(j, key, kept_sass, "SASS"))
		disassemble(j, data);
}

void jit_print_miss(struct jit_job *j, const struct cjc_buf *err, const struct cjc_buf *data,
		    const char *key)
{
	const struct jit_settings *s = &j->h->set;
	if (!key && j->cached && j->h->cfg.readonly)
		jit_note(j->h, "%s: compiled, and not published: readonly is set", j->name);
	if (s->flag[JIT_PTXAS_VERBOSE] && err->len)
		(void)!cjc_write_all(2, err->data, err->len);
	if (s->flag[JIT_DUMP_PTX])
		print_ptx(j, data, key);
	if (s->flag[JIT_DUMP_SASS])
		print_sass(j, data, key);
}

int jit_check_ptxas(struct jit_job *j, const char *log, size_t len)
{
	const struct jit_settings *s = &j->h->set;
	if (!s->flag[JIT_CHECK_NO_SPILLS] && !s->flag[JIT_CHECK_NO_LOCAL_MEMORY])
		return 0;
	unsigned said = cjc_diagnostics_ptxas(log, len);
	if (s->flag[JIT_CHECK_NO_SPILLS] && (said & CJC_PTXAS_SPILLS))
		return jit_fail(j->h, "%s: ptxas reported spills and CHECK_NO_SPILLS is set", j->name);
	/* spilled registers live in local memory */
	if (s->flag[JIT_CHECK_NO_LOCAL_MEMORY] && said)
		return jit_fail(j->h, "%s: ptxas reported local memory use and CHECK_NO_LOCAL_MEMORY "
				"is set", j->name);
	return 0;
}

/* Whether fd is a directory no other user can rename or replace anything
 * in (fs.h cjc_stat_others_can_change: /tmp, sticky, is one). */
static bool dir_held(int fd)
{
	struct stat st;
	return !fstat(fd, &st) && S_ISDIR(st.st_mode) && !cjc_stat_others_can_change(&st);
}

/* The directory at path, its links resolved into *real, then opened one
 * component at a time from / without following links, each held
 * (dir_held); else -1. */
static int open_held_dir(const char *path, char **real)
{
	*real = path && *path ? realpath(path, NULL) : NULL;
	if (!*real)
		return -1;
	char *copy = cjc_xstrdup(*real), *save = NULL;
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), e = errno;
	for (char *c = strtok_r(copy, "/", &save); fd >= 0; c = strtok_r(NULL, "/", &save)) {
		bool held = dir_held(fd);
		if (held && !c)
			break;
		int next = held ? openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		e = held ? errno : EPERM;
		close(fd);
		fd = next;
	}
	free(copy);
	if (fd < 0) {
		free(*real);
		*real = NULL;
		errno = e;
	}
	return fd;
}

/* A new directory in base, 0700 and ours (checked on its fd), registered
 * for removal; -1 otherwise. */
static int make_private_dir(int base, char **name)
{
	for (int tries = 0; tries < 8; tries++) {
		*name = cjc_unique_name("cjc-jit");
		cjc_tempfile_add_at(base, *name);
		if (!mkdirat(base, *name, 0700)) {
			struct stat st;
			int fd = openat(base, *name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0 && !fchmod(fd, 0700) && !fstat(fd, &st) && st.st_uid == geteuid() &&
			    (st.st_mode & 07777) == 0700)
				return fd;
			if (fd >= 0)
				close(fd);
			cjc_tempfile_remove_at(base, *name);
			free(*name);
			*name = NULL;
			errno = EPERM;
			return -1;
		}
		int e = errno;
		cjc_tempfile_forget_at(base, *name);
		free(*name);
		*name = NULL;
		errno = e;
		if (e != EEXIST)
			return -1;
	}
	return -1;
}

/* Once per process, at its first miss: in base, the private directories
 * of this host's JIT processes that were killed before they removed their
 * own (their pid is gone), and that are yours, removed. */
static void reclaim_orphans(int base)
{
	static atomic_bool done;
	int fd = atomic_exchange(&done, true) ? -1 : dup(base);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (struct dirent *e; (e = readdir(d));) {
		struct stat st;
		if (cjc_starts_with(e->d_name, "cjc-jit.") &&
		    !fstatat(base, e->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() && cjc_name_orphaned(e->d_name, st.st_mtime, INT64_MAX))
			(void)cjc_remove_tree_at(base, e->d_name);
	}
	closedir(d);
}

int jit_workdir_make(struct jit_job *j, struct jit_workdir *w)
{
	const char *tmpdir = getenv("TMPDIR"), *runtime = getenv("XDG_RUNTIME_DIR");
	const char *bases[] = { tmpdir, "/tmp", runtime };
	int fd = -1, base = -1, e = ENOENT;
	char *name = NULL, *where = NULL;
	for (size_t i = 0; i < sizeof bases / sizeof *bases && fd < 0; i++) {
		if ((base = open_held_dir(bases[i], &where)) < 0) {
			e = bases[i] && *bases[i] ? errno : e;
			continue;
		}
		if ((fd = make_private_dir(base, &name)) < 0)
			e = errno, close(base), free(where), where = NULL;
	}
	if (fd < 0)
		return jit_fail(j->h, "%s: no private directory for the compiler's files: $TMPDIR, /tmp "
				"and $XDG_RUNTIME_DIR are each missing, not writable, or on a path that "
				"another user can rename (%s); set TMPDIR to a directory of yours",
				j->name, strerror(e));
	reclaim_orphans(base);
	*w = (struct jit_workdir){ .base = base, .fd = fd, .name = name };
	w->path = cjc_path_join(where, name);
	w->source = cjc_xasprintf("%s/src/%s", w->path, j->name);
	free(where);
	int src = mkdirat(fd, "src", 0700) ? -1 : openat(fd, "src", O_RDONLY | O_DIRECTORY |
							  O_NOFOLLOW | O_CLOEXEC);
	int rc = src < 0 ? -1 : cjc_write_new_file_at(src, j->name, j->req->code,
						      strlen(j->req->code), 0600, false);
	if (rc)
		jit_fail(j->h, "cannot write the source %s: %s", w->source, strerror(errno));
	if (src >= 0)
		close(src);
	return rc;
}

void jit_workdir_remove(struct jit_workdir *w)
{
	if (!w->name)
		return;
	close(w->fd);
	cjc_tempfile_remove_at(w->base, w->name);
	close(w->base);
	free(w->name);
	free(w->path);
	free(w->source);
	memset(w, 0, sizeof *w);
}

void jit_key_request(const struct jit_job *j, struct cjc_strvec *args)
{
	if (j->req->extra_signature) {
		char *word = cjc_xasprintf("jit:extra_signature=%s", j->req->extra_signature);
		cjc_strvec_push(args, word);
		free(word);
	}
	if (j->req->hook) {
		char *word = cjc_xasprintf("jit:hook=%s", j->req->hook_id);
		cjc_strvec_push(args, word);
		free(word);
	}
}

void jit_publish_request(const struct jit_job *j, struct cjc_publish *p,
			 struct cjc_publish_file *source, struct cjc_metadata *md)
{
	*source = (struct cjc_publish_file){ JIT_SOURCE_FILE, j->req->code, strlen(j->req->code) };
	p->extra = source;
	p->nextra = 1;
	md->jit = j->meta;
}

int jit_run_hook(struct jit_job *j, struct cjc_buf *data)
{
	if (!j->req->hook)
		return 0;
	struct cjc_jit_bytes kept = { CJC_BUF_INIT, false, false };
	int rc = j->req->hook(j->req->hook_ctx, data->data, data->len, &kept);
	if (!rc && kept.failed)
		jit_fail(j->h,
			 "%s: the post-compile hook %s could not keep its bytes (too many, or "
			 "out of memory); nothing was kept",
			 j->name, j->req->hook_id);
	else if (rc)
		jit_fail(j->h, "%s: the post-compile hook %s failed (it returned %d); nothing was kept",
			 j->name, j->req->hook_id, rc);
	else if (kept.set) {
		cjc_buf_release(data);
		*data = kept.buf;
		kept.buf = (struct cjc_buf)CJC_BUF_INIT;
	}
	cjc_buf_release(&kept.buf);
	return rc || kept.failed ? -1 : 0;
}
