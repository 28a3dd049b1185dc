/*
 * A compile with nvcc, keyed exactly as `cjc` keys the command
 *
 *     nvcc --cubin|--fatbin|--ptx -arch=ARCH [settings' flags] OPTIONS... SOURCE
 *
 * run in the process's working directory (the parser, nvcc_args.h, and
 * key.h): the direct key names a manifest, whose records name the
 * entry once every header they list is unchanged (deps.c); a miss runs
 * nvcc with -MD, hashes what it read, records the include candidates that
 * must stay absent, and publishes an ordinary entry.  The settings' flags:
 * WITH_LINEINFO -lineinfo, CPP_STANDARD -std=, DEBUG -G, PTXAS_VERBOSE
 * -Xptxas=-v, CHECK_NO_SPILLS -Xptxas=-warn-spills, CHECK_NO_LOCAL_MEMORY
 * -Xptxas=-warn-lmem-usage; DUMP_PTX and DUMP_SASS are cjc's keep_ptx and
 * keep_sass (diagnostics.h), keyed the same way.
 *
 * The steps a miss shares with cjc's launcher are miss.h's: the start
 * time, and the record of what nvcc read.
 *
 * SOURCE is keyed and recorded as JIT_KEYED_SOURCE_DIR/<name>, the same in
 * every process; nvcc compiles the copy in the miss's private directory
 * (jit_workdir_make), whose path is no part of the key, the record or
 * metadata.json.  nvcc writes its output, its dependency file, the kept
 * ptx and its own temporary files (TMPDIR) there too, and the output is
 * read back through the directory's fd.  With __FILE__ (assert), -lineinfo
 * or -G the output names that directory, so an entry made by one compile
 * names a directory of its own that is gone: the code is the same.
 *
 * The name is keyed only where it can reach the output (docs/jit.md):
 * nvcc's command is parsed, and the direct key made, with the source as
 * ANY_SOURCE, the same for every name.  A miss then finds out whether the
 * name reached the output (name_reaches, below): when it did, the record
 * lists the source as JIT_KEYED_SOURCE_DIR/<name>, so its entry key holds
 * the name and no other name's lookup matches it (that file cannot exist);
 * when not, as ANY_SOURCE, which every name's lookup matches.  Both kinds of
 * record live in the one manifest.  The command metadata.json records, and
 * the compiler's messages, name the request that compiled the entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/run.h"
#include "compile/diagnostics.h"
#include "compile/lease.h"
#include "compile/miss.h"
#include "jit_internal.h"
#include "keys/depfile.h"
#include "keys/includescan.h"
#include "keys/key.h"
#include "keys/metadata.h"
#include "keys/nvcc_args.h"
#include "keys/place.h"
#include "keys/rules.h"
#include "store/identity.h"
#include "store/records.h"
#include "store/stats.h"

/* The source as the key sees it when the name cannot reach the output: a
 * path that no request's name gives (names begin with no '*'). */
#define ANY_SOURCE JIT_KEYED_SOURCE_DIR "/*.cu"

struct nvcc_job {
	struct jit_job *j;
	struct cjc_jit *h;
	struct cjc_strvec argv; /* the command, naming the request's source, without -o */
	char memory_key[CJC_HEX_LEN + 1]; /* the memory tier's: the direct key and the name */
	struct cjc_compile c;
	struct jit_toolset tools; /* nvcc, the host compiler, as */
	uint64_t gen;             /* the change generation as the request began (changes.c) */
	struct cjc_diagnostics diag;
	struct cjc_strvec env;
	char cwd[PATH_MAX];
	char direct_key[CJC_HEX_LEN + 1];
	bool cacheable;
	struct cjc_remotes *remotes; /* after a local miss (jit_remote_open) */
};

/* What one nvcc run produced. */
struct run {
	int status;
	int64_t duration_ms;
	struct timespec started;
	struct jit_workdir w;    /* the private directory (jit_internal.h) */
	char *tmp_out, *tmp_dep, *keep_dir; /* paths in it */
	struct cjc_buf out, err, data;
};

static void build_command(struct nvcc_job *n)
{
	static const char *const modes[] = { "--cubin", "--fatbin", "--ptx" };
	const struct jit_settings *s = &n->h->set;
	struct cjc_strvec *a = &n->argv;
	cjc_strvec_push(a, s->text[JIT_NVCC_COMPILER]);
	cjc_strvec_push(a, modes[n->j->req->format]);
	char *arch = cjc_xasprintf("-arch=%s", n->j->arch);
	cjc_strvec_push(a, arch);
	free(arch);
	if (*s->text[JIT_CPP_STANDARD]) {
		char *std = cjc_xasprintf("-std=%s", s->text[JIT_CPP_STANDARD]);
		cjc_strvec_push(a, std);
		free(std);
	}
	if (s->flag[JIT_WITH_LINEINFO])
		cjc_strvec_push(a, "-lineinfo");
	if (s->flag[JIT_DEBUG])
		cjc_strvec_push(a, "-G");
	if (s->flag[JIT_PTXAS_VERBOSE])
		cjc_strvec_push(a, "-Xptxas=-v");
	if (s->flag[JIT_CHECK_NO_SPILLS])
		cjc_strvec_push(a, "-Xptxas=-warn-spills");
	if (s->flag[JIT_CHECK_NO_LOCAL_MEMORY])
		cjc_strvec_push(a, "-Xptxas=-warn-lmem-usage");
	for (size_t i = 0; i < n->j->req->noptions; i++)
		if (n->j->req->options[i])
			cjc_strvec_push(a, n->j->req->options[i]);
	cjc_strvec_push(a, n->j->source);
}

/* Parse, identities, direct key.  0; or -1 when the compile cannot be
 * cached (the reason is noted) but may still run. */
static int prepare(struct nvcc_job *n)
{
	struct cjc_jit *h = n->h;
	if (!jit_cacheable(n->j))
		return -1;
	if (!cjc_getpwd(n->cwd, sizeof n->cwd))
		return jit_note(h, "cannot tell the working directory: %s", strerror(errno)), -1;
	struct cjc_place where = { .cwd = n->cwd, .base_dir = h->cfg.base_dir,
				   .share_dirs = !h->cfg.hash_dir };
	/* parsed, and keyed, with the source of any name (ANY_SOURCE) */
	struct cjc_strvec keyed = CJC_STRVEC_INIT;
	cjc_strvec_pushv(&keyed, n->argv.v, n->argv.n - 1);
	cjc_strvec_push(&keyed, ANY_SOURCE);
	cjc_compile_parse((int)keyed.n - 1, keyed.v + 1, &where, &n->c);
	cjc_strvec_clear(&keyed);
	jit_journal_uncacheable(n->j, n->c.uncacheable);
	if (n->c.uncacheable)
		return jit_note(h, "%s: uncacheable: %s", n->j->name, n->c.uncacheable), -1;
	char *host = cjc_compile_host(&n->c);
	n->gen = jit_changes_generation(h);
	int rc = jit_tools_identify(h, n->gen, n->cwd, n->argv.v[0], host, &n->tools);
	free(host);
	if (rc)
		return -1;
	const struct jit_settings *s = &h->set;
	/* CHECK_NO_* are words of the command (build_command), cached or not */
	cjc_diagnostics_init(&n->diag, s->flag[JIT_DUMP_PTX],
			     s->flag[JIT_DUMP_SASS] && n->c.kind != CJC_KIND_PTX, false,
			     n->tools.nvcc.realpath);
	cjc_diagnostics_add_key(&n->diag, &n->c);
	cjc_key_environment(&n->c.env, &n->env);
	jit_key_request(n->j, &n->c.key_args);
	struct cjc_key_input in = {
		.kind = cjc_kind_name(n->c.kind),
		.nvcc_digest = n->tools.nvcc.digest,
		.host_digest = n->tools.host.digest,
		.args = n->c.key_args.v,
		.nargs = n->c.key_args.n,
		.cwd = n->c.place.keys_cwd ? n->cwd : "",
		.as = n->tools.as,
		.env = &n->c.env,
	};
	memcpy(in.source_sha, n->j->code_sha, CJC_DIGEST_LEN);
	cjc_key_direct(&in, n->direct_key);
	struct cjc_hash mk;
	cjc_hash_init(&mk);
	cjc_hash_str(&mk, n->direct_key);
	cjc_hash_str(&mk, n->j->name);
	cjc_hash_final_hex(&mk, n->memory_key);
	jit_journal_facts_nvcc(n->j, &n->c, n->cwd, &n->tools.nvcc, &n->tools.host, &n->env);
	return 0;
}

static char *artifact_name(const struct nvcc_job *n)
{
	return cjc_xasprintf("output.%s", n->j->ext);
}

static int spilled(struct nvcc_job *n, const struct cjc_buf *err)
{
	return jit_check_ptxas(n->j, err->data, err->len);
}

/* The result's log: nvcc's stdout, then its stderr. */
static char *log_of(const struct cjc_buf *out, const struct cjc_buf *err)
{
	if (!out->len && !err->len)
		return NULL;
	struct cjc_buf b = CJC_BUF_INIT;
	cjc_buf_add(&b, out->data, out->len);
	cjc_buf_add(&b, err->data, err->len);
	return cjc_buf_detach(&b);
}

/* lookup.h's deliver: the entry's output and messages into the result. */
static int read_result(void *ctx, const struct cjc_entry *e, const struct cjc_manifest_record *rec,
		       struct cjc_buf *why)
{
	(void)rec;
	struct nvcc_job *n = ctx;
	struct cjc_buf data = CJC_BUF_INIT, out = CJC_BUF_INIT, err = CJC_BUF_INIT;
	char *name = artifact_name(n);
	int rc = cjc_entry_read(e, name, &data, why);
	if (!rc && cjc_entry_artifact(e, "stdout"))
		rc = cjc_entry_read(e, "stdout", &out, why);
	if (!rc && cjc_entry_artifact(e, "stderr"))
		rc = cjc_entry_read(e, "stderr", &err, why);
	if (!rc) {
		struct cjc_jit_result *r = n->j->out;
		r->size = data.len;
		r->data = cjc_buf_detach(&data);
		r->log = log_of(&out, &err);
		r->hit = 1;
	}
	free(name);
	cjc_buf_release(&data);
	cjc_buf_release(&out);
	cjc_buf_release(&err);
	return rc;
}

/* The record of m this request may use (deps.c): its source keyed for any
 * name or for this one; -1 when none. */
static long match(struct nvcc_job *n, const struct cjc_manifest *m)
{
	return jit_deps_match_named(n->h, m, n->direct_key, &n->c.place, ANY_SOURCE, n->j->source,
				    n->j->code_sha);
}

/* The watches on a remembered record's files (changes.c), where the
 * handle watches. */
static uint64_t watch_record(void *ctx, const struct cjc_manifest_record *rec)
{
	struct nvcc_job *n = ctx;
	return n->gen ? jit_changes_watch(n->h, rec, ANY_SOURCE, n->j->source) : 0;
}

/* lookup.h's match: the record of m this request may use. */
static long lookup_match(void *ctx, const struct cjc_manifest *m)
{
	return match(ctx, m);
}

/* Whether the record of a remembered item still holds (memory.c). */
static bool still_holds(struct nvcc_job *n, struct jit_memory_item *it)
{
	const struct jit_memory_check c = { watch_record, lookup_match, n };
	return jit_memory_holds(n->h, it, n->gen, &c);
}

/* 1: a hit from the handle's memory (memory.c), its record's files
 * unchanged; 0: not there. */
static int memory_hit(struct nvcc_job *n)
{
	struct jit_memory_item *it = jit_memory_find(n->h, n->memory_key);
	if (!it)
		return 0;
	bool same = still_holds(n, it);
	if (same)
		jit_memory_serve(n->j, it);
	jit_memory_release(n->h, it);
	return same;
}

/* What was served or published for this request, for the next one. */
static void remember(struct nvcc_job *n, struct cjc_manifest_record *rec, int64_t duration_ms)
{
	const struct cjc_jit_result *out = n->j->out;
	jit_memory_put(n->h, n->memory_key, rec->entry_key, rec, out->data, out->size, out->log,
		       duration_ms);
}

/* This request as the one lookup sees it. */
static struct cjc_lookup_request request_of(struct nvcc_job *n)
{
	struct cjc_lookup_request q = jit_lookup_request(n->j, n->direct_key);
	q.remotes = n->remotes;
	q.match = lookup_match;
	q.deliver = read_result;
	q.ctx = n;
	return q;
}

/* A lookup's answer: 1, the entry served and remembered (the record moved
 * into the memory tier); 0, a miss. */
static int answer(struct nvcc_job *n, struct cjc_lookup_result *r)
{
	int served = jit_lookup_served(n->j, r);
	if (served) {
		memcpy(n->j->out->key, r->entry_key, CJC_HEX_LEN + 1);
		remember(n, &r->rec, r->duration_ms);
	}
	cjc_lookup_result_release(r);
	return served;
}

/* After a local miss: the entry from a remote store, published here and
 * served; 1: served; 0: no store had it. */
static int remote_hit(struct nvcc_job *n)
{
	struct cjc_lookup_request q = request_of(n);
	struct cjc_lookup_result r = { 0 };
	cjc_lookup_remote(&q, &r);
	return answer(n, &r);
}

/* 1: a hit, served; 0: a miss. */
static int try_hit(struct nvcc_job *n)
{
	if (memory_hit(n))
		return 1;
	struct cjc_lookup_request q = request_of(n);
	struct cjc_lookup_result r = { 0 };
	cjc_lookup_local(&q, &r);
	return answer(n, &r);
}

/* lease.h: the entry another compile of this key published, when it is there. */
static int look_again(void *ctx, bool remote)
{
	struct nvcc_job *n = ctx;
	return try_hit(n) || (remote && remote_hit(n)) ? 0 : -1;
}

/* After a miss everywhere: the key's lease (lease.h), or the entry of the
 * compile that holds it; 1: served; 0: compile (then cjc_lease_release). */
static int take_lease(struct nvcc_job *n, struct cjc_lease *l)
{
	const struct cjc_config *cfg = &n->h->cfg;
	struct cjc_lease_wait w = {
		.store = cfg->readonly ? NULL : &n->h->store, .remotes = n->remotes,
		.direct_key = n->direct_key, .look = look_again, .ctx = n,
	};
	int served = -1;
	enum cjc_lease_result r = cjc_lease_take(&w, cfg->lease_wait, l, &served);
	if (l->waited)
		jit_count(n->j, CJC_STAT_LEASE_WAITS, 0);
	if (l->timed_out)
		jit_count(n->j, CJC_STAT_LEASE_TIMEOUTS, 0);
	if (l->error)
		jit_count(n->j, CJC_STAT_ERRORS, 0);
	return r == CJC_LEASE_SERVED;
}

/* The command nvcc runs: as keyed, less -o and -M* when cacheable, with
 * the private copy of the source for the keyed one (the last word). */
static void run_command(const struct nvcc_job *n, const struct run *r, struct cjc_strvec *argv)
{
	const char *keyed = n->cacheable ? n->c.source : n->j->source;
	cjc_strvec_push(argv, n->argv.v[0]);
	if (n->cacheable)
		cjc_strvec_pushv(argv, n->c.nvcc_args.v, n->c.nvcc_args.n);
	else
		cjc_strvec_pushv(argv, n->argv.v + 1, n->argv.n - 1);
	for (size_t i = argv->n; i-- > 1;)
		if (!strcmp(argv->v[i], keyed)) {
			cjc_replace_string(&argv->v[i], r->w.source);
			break;
		}
}

/* Runs nvcc in the private directory; -1 (error set) when it could not run
 * or made nothing. */
static int run_nvcc(struct nvcc_job *n, struct run *r)
{
	if (jit_workdir_make(n->j, &r->w))
		return -1;
	r->tmp_out = cjc_xasprintf("%s/output.%s", r->w.path, n->j->ext);
	r->tmp_dep = cjc_xasprintf("%s/output.d", r->w.path);
	if (!mkdirat(r->w.fd, "keep", 0700)) /* keep_ptx, and the preprocessed texts (miss.h) */
		r->keep_dir = cjc_path_join(r->w.path, "keep");
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	run_command(n, r, &argv);
	cjc_diagnostics_add_args(&n->diag, r->keep_dir, &argv);
	char *extra[] = { "-o", r->tmp_out, "-MD", "-MF", r->tmp_dep };
	cjc_strvec_pushv(&argv, extra, 5);
	if (n->h->set.flag[JIT_PRINT_COMPILER_COMMAND])
		cjc_diagnostics_print_command(argv.v);
	int out_fd = memfd_create("cjc-jit-stdout", MFD_CLOEXEC);
	int err_fd = memfd_create("cjc-jit-stderr", MFD_CLOEXEC);
	char *tmpdir = cjc_xasprintf("TMPDIR=%s", r->w.path);
	char *env[] = { tmpdir, NULL };
	cjc_miss_start(&r->started);
	int64_t t0 = cjc_now_ms();
	struct cjc_child child = CJC_CHILD_INIT(argv.v);
	child.env = env;
	child.in_fd = CJC_RUN_NULL;
	child.out_fd = out_fd;
	child.err_fd = err_fd;
	r->status = out_fd < 0 || err_fd < 0 ? -1 : cjc_run_child(&child);
	int e = errno;
	r->duration_ms = cjc_now_ms() - t0;
	free(tmpdir);
	if (out_fd >= 0)
		cjc_read_memfd(out_fd, &r->out);
	if (err_fd >= 0)
		cjc_read_memfd(err_fd, &r->err);
	int rc = 0;
	char *name = cjc_xasprintf("output.%s", n->j->ext);
	if (r->status < 0)
		rc = jit_fail(n->h, "cannot run %s: %s", argv.v[0], strerror(e));
	else if (r->status)
		rc = jit_fail(n->h, "%s: nvcc failed with status %d", n->j->name, r->status);
	else if (cjc_read_bounded(r->w.fd, name, O_NOFOLLOW, JIT_OUTPUT_MAX, &r->data) || !r->data.len)
		rc = jit_fail(n->h, "%s: nvcc made no output", n->j->name);
	free(name);
	cjc_strvec_clear(&argv);
	return rc;
}

static void run_release(struct run *r)
{
	jit_workdir_remove(&r->w);
	free(r->tmp_out);
	free(r->tmp_dep);
	free(r->keep_dir);
	cjc_buf_release(&r->out);
	cjc_buf_release(&r->err);
	cjc_buf_release(&r->data);
}

/* A header's hash is remembered by the handle (deps.c); the private copy
 * of the source (n->c.source while the record is made) is never seen again. */
static int hash_dependency(void *ctx, const char *path, uint64_t *size,
			   unsigned char sha[CJC_DIGEST_LEN])
{
	const struct nvcc_job *n = ctx;
	return strcmp(path, n->c.source) ? jit_deps_hash(n->h, path, JIT_ANY_SIZE, size, sha)
					 : cjc_hash_file(path, sha, size);
}

/*
 * Whether the request's name can reach the output (the top comment): nvcc
 * saw the source as <private directory>/src/<name>.  It does where the
 * parse says the output records directories (place.h).  Else rules.h says
 * whether that path may reach the output from the source, its headers and
 * the option words (a header that cannot be read: it cannot be told, so it
 * may), and where it may, the preprocessor is asked (preprocessed_names).
 */
/* The option words (the command's, less nvcc and the source, and the
 * variables nvcc adds), as one text: where the source's own words are. */
static void option_text(const struct nvcc_job *n, struct cjc_buf *b)
{
	static const char *const vars[] = { "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS" };
	for (size_t i = 1; i + 1 < n->argv.n; i++)
		cjc_buf_addf(b, "%s\n", n->argv.v[i]);
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
		if (getenv(vars[i]))
			cjc_buf_addf(b, "%s\n", getenv(vars[i]));
}

/* Whether the preprocessor shows the name reaching the output (miss.h):
 * the JIT's formats are device code only, so no host pass is asked. */
static bool preprocessed_names(const struct nvcc_job *n, const struct run *r)
{
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	run_command(n, r, &argv);
	char *out = cjc_xasprintf("%s/preprocessed.ii", r->w.path);
	char *tmpdir = cjc_xasprintf("TMPDIR=%s", r->w.path);
	char *env[] = { tmpdir, NULL };
	const char *slash = strrchr(r->w.source, '/');
	char *name = slash ? (char *)slash + 1 : r->w.source;
	struct cjc_miss_preprocess p = {
		.command = &argv, .out = out, .env = env, .names = &name, .n = 1
	};
	bool names = cjc_miss_preprocessed_names(&p);
	free(tmpdir);
	free(out);
	cjc_strvec_clear(&argv);
	return names;
}

/* Whether the texts the preprocessor wrote name the private source's
 * directory or __builtin_FILE (miss.h): a __FILE__ pasted together, which
 * no rule sees in the texts. */
static bool kept_names(const struct run *r)
{
	const char *slash = strrchr(r->w.source, '/');
	if (!r->keep_dir || !slash)
		return false;
	char *dir = cjc_xstrndup(r->w.source, (size_t)(slash - r->w.source));
	bool named = cjc_miss_kept_names(r->keep_dir, dir);
	free(dir);
	return named;
}

static bool name_reaches(const struct nvcc_job *n, const struct run *r,
			 const struct cjc_manifest_record *rec, const char *copy)
{
	if (n->c.place.records_dirs || n->c.place.dirs_shared || n->c.place.keys_cwd)
		return true;
	struct cjc_buf options = CJC_BUF_INIT;
	option_text(n, &options);
	struct cjc_buf *files = cjc_xcalloc(rec->ndeps + 1, sizeof *files);
	size_t nfiles = 0;
	bool reaches = false;
	cjc_buf_add(&files[nfiles++], n->j->req->code, strlen(n->j->req->code));
	for (size_t i = 0; i < rec->ndeps && !reaches; i++)
		if (strcmp(rec->deps[i].path, copy) && cjc_read_file(rec->deps[i].path, &files[nfiles++]))
			reaches = true;
	reaches = reaches || cjc_rules_path_reaches(files, nfiles, options.data, options.len);
	for (size_t i = 0; i < nfiles; i++)
		cjc_buf_release(&files[i]);
	free(files);
	cjc_buf_release(&options);
	return (reaches && preprocessed_names(n, r)) || kept_names(r);
}

/*
 * The record names the source as keyed, not by its private copy, and
 * leaves out the include candidates beside that copy: its directory holds
 * nothing else, in this compile and in every other.
 */
static void record_source_as_keyed(const char *keyed, const char *copy,
				   struct cjc_manifest_record *rec)
{
	for (size_t i = 0; i < rec->ndeps; i++)
		if (!strcmp(rec->deps[i].path, copy)) {
			cjc_replace_string(&rec->deps[i].path, keyed);
		}
	size_t dir = (size_t)(strrchr(copy, '/') - copy) + 1;
	struct cjc_strvec kept = CJC_STRVEC_INIT;
	for (size_t i = 0; i < rec->absent.n; i++) {
		const char *a = rec->absent.v[i];
		if (strncmp(a, copy, dir) || strchr(a + dir, '/'))
			cjc_strvec_push(&kept, a);
	}
	cjc_strvec_clear(&rec->absent);
	rec->absent = kept;
}

/* The manifest record of what nvcc read (miss.h); false, with the reason,
 * when it cannot be trusted to be what nvcc read. */
static bool record_dependencies(struct nvcc_job *n, const struct run *r,
				struct cjc_manifest_record *rec, struct cjc_buf *why,
				char **uncacheable)
{
	/* nvcc read the copy: the record lists it as written there (relative
	 * under base_dir, as miss.h writes every path) */
	char *copy = cjc_place_relativize(&n->c.place, r->w.source);
	if (!copy)
		copy = cjc_xstrdup(r->w.source);
	char *keyed = n->c.source;
	n->c.source = copy;
	struct cjc_miss m = { .c = &n->c,
			      .started = r->started,
			      .source_sha = n->j->code_sha,
			      .hash = hash_dependency,
			      .ctx = n,
			      .uncacheable = uncacheable,
			      .kept = r->keep_dir };
	bool stable = false;
	int rc = cjc_miss_record(&m, r->tmp_dep, rec, &stable, why);
	n->c.source = keyed;
	if (!rc && stable)
		record_source_as_keyed(name_reaches(n, r, rec, copy) ? n->j->source : ANY_SOURCE,
				       copy, rec);
	free(copy);
	return !rc && stable;
}

/* Publishes the entry (publish.h); failures are noted, never fatal.  True
 * when the entry is in the store (ours or a winner's). */
static bool publish(struct nvcc_job *n, const struct run *r, const struct cjc_manifest_record *rec)
{
	struct cjc_jit *h = n->h;
	/* metadata.json names the request's source, as its command does, also
	 * where the record keys it for any name (ANY_SOURCE) */
	struct cjc_dep *inputs = cjc_xcalloc(rec->ndeps + 1, sizeof *inputs);
	memcpy(inputs, rec->deps, rec->ndeps * sizeof *inputs);
	for (size_t i = 0; i < rec->ndeps; i++)
		if (!strcmp(inputs[i].path, ANY_SOURCE))
			inputs[i].path = n->j->source;
	struct cjc_metadata md = {
		.argv = n->argv.v,
		.argc = n->argv.n,
		.cwd = n->cwd,
		.base_dir = h->cfg.base_dir,
		.dirs_shared = n->c.place.dirs_shared,
		.compiler_path = n->tools.nvcc.path,
		.compiler_realpath = n->tools.nvcc.realpath,
		.compiler_version = n->tools.nvcc.version,
		.host_path = n->tools.host.path,
		.host_version = n->tools.host.version,
		.options = n->c.options,
		.inputs = inputs,
		.ninputs = rec->ndeps,
		.environment = n->env.v,
		.nenvironment = n->env.n,
		.diagnostics = cjc_diagnostics_json(&n->diag),
		.options_files = n->c.options_files,
		.target = "jit",
		.duration_ms = r->duration_ms,
	};
	char *name = artifact_name(n);
	struct cjc_publish p = jit_publish_of(h, rec->entry_key, n->j->name, &md);
	struct cjc_publish_file source;
	jit_publish_request(n->j, &p, &source, &md);
	p.direct_key = n->direct_key;
	p.rec = rec;
	p.artifact = name;
	p.artifact_data = r->data.data;
	p.artifact_size = r->data.len;
	p.out = &r->out;
	p.err = &r->err;
	p.diag = &n->diag;
	p.keep_dir = r->keep_dir;
	p.output = r->tmp_out;
	p.ext = n->j->ext;
	bool won;
	enum cjc_published rc = cjc_publish(&p, &won);
	if (rc != CJC_PUBLISHED) /* as cjc counts it: the manifest not written is one too */
		jit_count(n->j, CJC_STAT_ERRORS, 0);
	json_decref(md.diagnostics);
	free(inputs);
	free(name);
	return rc != CJC_PUBLISH_FAILED;
}

static int compile_miss(struct nvcc_job *n)
{
	struct run r = { 0 };
	struct cjc_manifest_record rec = { 0 };
	struct cjc_buf why = CJC_BUF_INIT;
	struct cjc_jit_result *out = n->j->out;
	bool published = false;
	char *uncacheable = NULL; /* a time macro (miss.h) */
	cjc_remote_hang_up(n->remotes); /* no connection idles through the compile */
	int rc = run_nvcc(n, &r);
	out->log = log_of(&r.out, &r.err);
	if (!rc)
		rc = jit_run_hook(n->j, &r.data);
	if (rc) {
		if (r.status > 0)
			jit_count(n->j, CJC_STAT_COMPILE_FAILED, 0);
		jit_journal_compiled(n->j, rc, NULL, false, r.duration_ms, NULL);
		goto out;
	}
	bool recorded = n->cacheable && record_dependencies(n, &r, &rec, &why, &uncacheable);
	if (recorded && !uncacheable) {
		cjc_key_entry(n->direct_key, &rec, &n->c.place, rec.entry_key);
		published = !n->h->cfg.readonly && publish(n, &r, &rec);
	} else if (n->cacheable) {
		jit_note(n->h, "miss for %s, not published: %s", n->j->name,
			 uncacheable ? uncacheable : why.data);
	}
	if (uncacheable) {
		jit_count(n->j, CJC_STAT_UNCACHEABLE, 0);
		if (jit_store_open(n->h))
			(void)cjc_stats_bump_named(&n->h->store, CJC_STATS_BY_REASON, CJC_RULES_TIME_MACRO,
						   CJC_STAT_UNCACHEABLE, 0);
		jit_journal_uncacheable(n->j, uncacheable);
	} else {
		if (n->cacheable)
			jit_count(n->j, CJC_STAT_MISSES, 0);
		jit_journal_compiled(n->j, 0, &rec, published, r.duration_ms, why.data);
	}
	jit_print_miss(n->j, &r.err, &r.data, published ? rec.entry_key : NULL);
	if (published)
		memcpy(out->key, rec.entry_key, CJC_HEX_LEN + 1);
	out->size = r.data.len;
	out->data = cjc_buf_detach(&r.data);
	if (published)
		(void)cjc_remote_publish(n->remotes, rec.entry_key, n->direct_key, &rec);
	if (published)
		remember(n, &rec, r.duration_ms);
	jit_deps_save(n->h);
	rc = spilled(n, &r.err);
out:
	free(uncacheable);
	cjc_manifest_record_release(&rec);
	run_release(&r);
	cjc_buf_release(&why);
	return rc;
}

/* The request's format decides the output kind, and the library where the
 * output goes: an option that would choose either is refused, as it would
 * make nvcc write something else, or somewhere else, uncached. */
static int check_options(const struct jit_job *j)
{
	struct cjc_strvec given = CJC_STRVEC_INIT;
	for (size_t i = 0; i < j->req->noptions; i++)
		if (j->req->options[i])
			cjc_strvec_push(&given, j->req->options[i]);
	const char *bad = cjc_compile_output_option((int)given.n, given.v);
	int rc = bad ? jit_fail(j->h, "%s: option %s chooses the output kind or where an output "
				"goes; the request's format (%s) decides that: remove the option",
				j->name, bad, j->ext)
		     : 0;
	cjc_strvec_clear(&given);
	return rc;
}

int jit_nvcc_compile(struct jit_job *j)
{
	if (check_options(j))
		return -1;
	struct nvcc_job n = { .j = j, .h = j->h };
	build_command(&n);
	n.cacheable = !prepare(&n);
	struct cjc_lease lease = { .fd = -1 };
	int rc = n.cacheable ? try_hit(&n) : 0;
	if (rc == 0 && n.cacheable && (n.remotes = jit_remote_open(j->h)))
		rc = remote_hit(&n);
	if (rc == 0 && n.cacheable)
		rc = take_lease(&n, &lease);
	if (rc == 1)
		rc = spilled(&n, &(struct cjc_buf){ j->out->log, j->out->log ? strlen(j->out->log) : 0, 0 });
	else
		rc = compile_miss(&n);
	cjc_lease_release(&lease);
	cjc_remote_close(n.remotes);
	cjc_strvec_clear(&n.argv);
	cjc_compile_release(&n.c);
	jit_toolset_release(&n.tools);
	cjc_diagnostics_release(&n.diag);
	cjc_strvec_clear(&n.env);
	return rc;
}
