/*
 * The compile path.  On every call: settings, the parse of nvcc's arguments,
 * the compiler identities, and the direct key (everything known before nvcc
 * runs).  A manifest maps the direct key to the entry keys of earlier misses
 * with their dependency sets; the first record whose files are unchanged
 * names the entry, which is verified byte for byte as it is served.  On a
 * miss nvcc runs with its dependency output sent to us, the files it read
 * are hashed and scanned for include candidates (includescan.h), and the
 * result is published under entry key = H(direct key, each dependency's path
 * and hash).  See store.h for the layout and manifest.h for the manifest.
 */
#include "launcher.h"

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

#include "cudajitcache.h"
#include "nvcc_args.h"

/* The environment nvcc reads (SPEC §3): part of the key. */
static const char *const key_env[] = {
	"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN",
	"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
};
#define NKEY_ENV (sizeof key_env / sizeof *key_env)

/* Everything one compile through the cache works with. */
struct job {
	const char *target;
	char *const *wrap; /* a launcher to put in front of nvcc (NULL-terminated) */
	int argc;
	char **argv; /* argv[0] is the compiler */
	struct cjc_config cfg;
	struct cjc_store store;
	bool have_store;
	struct cjc_compile c;
	struct cjc_identity nvcc, host;
	char cwd[PATH_MAX];
	char direct_key[CJC_HEX_LEN + 1];
	char *hash_cache; /* this translation unit's hash-cache file (filehash.h) */
	char *meta_memo;  /* and its checked metadata (metamemo.h) */
	mode_t user_umask;
};

/*
 * With the umask setting, the store's files get the store's umask and the
 * user's files (outputs, dependency files, whatever nvcc writes) the user's.
 */
static void store_umask(struct job *j, bool store)
{
	if (j->cfg.umask >= 0)
		umask(store ? (mode_t)j->cfg.umask : j->user_umask);
}

static void count(struct job *j, enum cjc_counter what, uint64_t saved_ms)
{
	if (j->have_store && cjc_stats_bump(&j->store, what, saved_ms))
		cjc_log("cannot update the counters: %s", strerror(errno));
}

/* The launcher the build already had (--wrap), which goes in front of nvcc. */
static void push_wrapper(const struct job *j, struct cjc_strvec *argv)
{
	for (char *const *w = j->wrap; w && *w; w++)
		cjc_strvec_push(argv, *w);
}

/* Runs nvcc as the user asked, replacing this process. */
static int run_uncached(struct job *j, const char *why)
{
	if (why)
		cjc_log("running uncached: %s", why);
	store_umask(j, false);
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	push_wrapper(j, &argv);
	cjc_strvec_pushv(&argv, j->argv, (size_t)j->argc);
	cjc_exec(argv.v);
	cjc_strvec_clear(&argv);
	fprintf(stderr, "cjc: cannot run %s: %s\n", j->argv[0], strerror(errno));
	return 127;
}

static char *host_compiler_name(const struct cjc_compile *c)
{
	const char *ccbin = c->ccbin ? c->ccbin : getenv("NVCC_CCBIN");
	if (!ccbin || !*ccbin)
		return cjc_xstrdup("gcc");
	if (cjc_is_dir(ccbin))
		return cjc_path_join(ccbin, "gcc");
	return cjc_xstrdup(ccbin);
}

static int compute_direct_key(struct job *j, struct cjc_buf *why)
{
	struct cjc_key_input in = {
		.kind = cjc_kind_name(j->c.kind),
		.nvcc_digest = j->nvcc.digest,
		.host_digest = j->host.digest,
		.args = j->c.key_args.v,
		.nargs = j->c.key_args.n,
		.env_names = (char *const *)key_env,
		.nenv = NKEY_ENV,
		.cwd = j->c.embeds_cwd ? j->cwd : "",
	};
	uint64_t size;
	if (cjc_filehash_get(j->c.source, &size, in.source_sha)) {
		cjc_buf_addf(why, "cannot read %s: %s", j->c.source, strerror(errno));
		return -1;
	}
	cjc_key_direct(&in, j->direct_key);
	return 0;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && (path[n] == '/' || (n && dir[n - 1] == '/'));
}

static bool is_system_header(const struct job *j, const char *path, const char *cccl)
{
	static const char *const dirs[] = { "/usr/include/", "/usr/lib/gcc/", "/usr/local/include/" };
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
		if (cjc_starts_with(path, dirs[i]))
			return true;
	for (size_t i = 0; i < j->c.isystem.n; i++)
		if (under(path, j->c.isystem.v[i]))
			return true;
	return cccl && under(path, cccl);
}

/* The toolkit's include directories, as nvcc named them in the dependency list. */
struct toolkit_dirs {
	char *include; /* .../targets/<arch>/include, or NULL */
	char *cccl;    /* its cccl/ subdirectory (an -isystem of nvcc's own), or NULL */
};

static void find_toolkit_dirs(const struct cjc_dep *deps, size_t n, struct toolkit_dirs *t)
{
	t->include = t->cccl = NULL;
	for (size_t i = 0; i < n && !t->include; i++)
		if (cjc_ends_with(deps[i].path, "/cuda_runtime.h"))
			t->include = cjc_dirname(deps[i].path);
	if (t->include)
		t->cccl = cjc_path_join(t->include, "cccl");
}

static void toolkit_dirs_release(struct toolkit_dirs *t)
{
	free(t->include);
	free(t->cccl);
}

/* Writes the user's dependency file, the same on a hit as on a miss. */
static int write_depfile(const struct job *j, const struct cjc_dep *deps, size_t n)
{
	if (!j->c.dep_requested)
		return 0;
	struct toolkit_dirs t;
	find_toolkit_dirs(deps, n, &t);
	struct cjc_strvec names = CJC_STRVEC_INIT;
	for (size_t i = 0; i < n; i++)
		if (!j->c.dep_nonsystem || i == 0 || !is_system_header(j, deps[i].path, t.cccl))
			cjc_strvec_push(&names, deps[i].path);
	struct cjc_buf text = CJC_BUF_INIT;
	cjc_depfile_format(&text, j->c.dep_target, names.v, names.n, j->c.dep_phony);
	int rc = cjc_replace_file(j->c.dep_file, text.data, text.len, false);
	int e = errno;
	cjc_buf_release(&text);
	cjc_strvec_clear(&names);
	toolkit_dirs_release(&t);
	errno = e;
	return rc;
}

static int write_user_depfile(struct job *j, const struct cjc_dep *deps, size_t n)
{
	store_umask(j, false);
	int rc = write_depfile(j, deps, n);
	int e = errno;
	store_umask(j, true);
	errno = e;
	return rc;
}

static void replay(const struct cjc_buf *out, const struct cjc_buf *err)
{
	if (out->len)
		(void)!cjc_write_all(1, out->data, out->len);
	if (err->len)
		(void)!cjc_write_all(2, err->data, err->len);
}

static char *artifact_name(const struct job *j)
{
	return cjc_xasprintf("output.%s", cjc_kind_ext(j->c.kind));
}

enum served { SERVED, DAMAGED, NOT_WRITTEN };

/*
 * Serves an entry: verified output beside the target, dependency file,
 * replay.  DAMAGED: the entry failed verification.  NOT_WRITTEN: the entry
 * is fine but the output or dependency file could not be written here.
 */
static enum served serve(struct job *j, const struct cjc_entry *e,
			 const struct cjc_manifest_record *rec, struct cjc_buf *why)
{
	struct cjc_buf out = CJC_BUF_INIT, err = CJC_BUF_INIT;
	char *name = artifact_name(j);
	char *tmp = cjc_unique_name(j->c.output);
	enum served result = SERVED;
	cjc_tempfile_add(tmp);
	store_umask(j, false);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	store_umask(j, true);
	if (fd < 0) {
		cjc_buf_addf(why, "cannot create %s: %s", tmp, strerror(errno));
		result = NOT_WRITTEN;
	} else {
		int copied = cjc_entry_copy(e, name, fd, why);
		if (copied == -2)
			result = NOT_WRITTEN;
		else if (copied ||
			 (cjc_entry_artifact(e, "stdout") && cjc_entry_read(e, "stdout", &out, why)) ||
			 (cjc_entry_artifact(e, "stderr") && cjc_entry_read(e, "stderr", &err, why)))
			result = DAMAGED;
	}
	if (fd >= 0 && close(fd) && result == SERVED)
		result = NOT_WRITTEN, cjc_buf_addf(why, "cannot write %s: %s", tmp, strerror(errno));
	if (result == SERVED && write_user_depfile(j, rec->deps, rec->ndeps))
		result = NOT_WRITTEN, cjc_buf_addf(why, "cannot write %s: %s", j->c.dep_file, strerror(errno));
	if (result == SERVED && rename(tmp, j->c.output))
		result = NOT_WRITTEN, cjc_buf_addf(why, "cannot write %s: %s", j->c.output, strerror(errno));
	if (result == SERVED) {
		cjc_tempfile_forget(tmp);
		replay(&out, &err);
	} else {
		cjc_tempfile_remove(tmp);
	}
	free(tmp);
	free(name);
	cjc_buf_release(&out);
	cjc_buf_release(&err);
	return result;
}

/* Looks for an entry; returns 0 once the compile has been served from it. */
static int try_hit(struct job *j)
{
	struct cjc_manifest m;
	char *path = cjc_store_manifest_path(&j->store, j->direct_key);
	int found = cjc_manifest_read(path, &m);
	if (found && errno == EBADMSG)
		cjc_log("damaged manifest %s: ignored", path);
	free(path);
	if (found)
		return -1;
	long i = cjc_manifest_match(&m);
	int rc = -1;
	if (i >= 0) {
		const struct cjc_manifest_record *rec = &m.recs[i];
		struct cjc_entry e;
		struct cjc_buf why = CJC_BUF_INIT;
		enum cjc_lookup r = cjc_store_open_entry(&j->store, rec->entry_key, &e, &why);
		enum served s = r == CJC_ENTRY_FOUND ? serve(j, &e, rec, &why) : DAMAGED;
		if (s == SERVED) {
			if (!j->cfg.readonly)
				cjc_evict_touch(e.dir);
			uint64_t reused, hashed;
			cjc_filehash_counts(&reused, &hashed);
			cjc_log("hit %s for %s (%llu file hashes remembered, %llu files read, "
				"metadata %s)", rec->entry_key, j->c.source, (unsigned long long)reused,
				(unsigned long long)hashed, e.meta ? "parsed" : "recognised");
			count(j, CJC_STAT_HITS, (uint64_t)e.duration_ms);
			rc = 0;
		} else if (s == NOT_WRITTEN) {
			cjc_log("cannot serve %s: %s; compiling instead", rec->entry_key, why.data);
		} else if (r == CJC_ENTRY_FOUND && access(e.dir, F_OK) && errno == ENOENT) {
			cjc_log("entry %s was evicted while being read; compiling instead", rec->entry_key);
		} else if (r != CJC_ENTRY_ABSENT) {
			cjc_log("damaged entry %s: %s; compiling instead (run `cjc verify --fix`)",
				rec->entry_key, why.data);
			count(j, CJC_STAT_DAMAGED, 0);
		}
		if (r == CJC_ENTRY_FOUND)
			cjc_entry_release(&e);
		cjc_buf_release(&why);
	}
	cjc_manifest_release(&m);
	return rc;
}

static void read_memfd(int fd, struct cjc_buf *out)
{
	lseek(fd, 0, SEEK_SET);
	(void)cjc_read_fd(fd, out);
	close(fd);
}

/* What one nvcc run produced. */
struct compile_result {
	int status;
	int64_t duration_ms;
	struct timespec started; /* the file system's clock */
	char *tmp_out;
	char *tmp_dep;
	struct cjc_buf out, err;
};

static int run_nvcc(struct job *j, struct compile_result *r)
{
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	r->tmp_out = cjc_unique_name(j->c.output);
	r->tmp_dep = cjc_xasprintf("%s.d", r->tmp_out);
	cjc_tempfile_add(r->tmp_out);
	cjc_tempfile_add(r->tmp_dep);
	push_wrapper(j, &argv);
	cjc_strvec_push(&argv, j->argv[0]);
	cjc_strvec_pushv(&argv, j->c.nvcc_args.v, j->c.nvcc_args.n);
	char *extra[] = { "-o", r->tmp_out, "-MD", "-MF", r->tmp_dep };
	cjc_strvec_pushv(&argv, extra, 5);
	int out_fd = memfd_create("cjc-stdout", MFD_CLOEXEC);
	int err_fd = memfd_create("cjc-stderr", MFD_CLOEXEC);
	clock_gettime(CLOCK_REALTIME_COARSE, &r->started);
	int64_t t0 = cjc_now_ms();
	store_umask(j, false);
	r->status = out_fd < 0 || err_fd < 0 ? -1 : cjc_run(argv.v, out_fd, err_fd);
	store_umask(j, true);
	r->duration_ms = cjc_now_ms() - t0;
	if (out_fd >= 0)
		read_memfd(out_fd, &r->out);
	if (err_fd >= 0)
		read_memfd(err_fd, &r->err);
	cjc_strvec_clear(&argv);
	return r->status < 0 ? -1 : 0;
}

static void result_release(struct compile_result *r)
{
	if (r->tmp_out)
		cjc_tempfile_remove(r->tmp_out);
	if (r->tmp_dep)
		cjc_tempfile_remove(r->tmp_dep);
	free(r->tmp_out);
	free(r->tmp_dep);
	cjc_buf_release(&r->out);
	cjc_buf_release(&r->err);
}

static bool newer_than(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* Records the include candidates that must stay absent (includescan.h). */
static void scan_includes(const struct job *j, struct cjc_manifest_record *rec)
{
	struct cjc_search_path sp = CJC_SEARCH_PATH_INIT;
	struct toolkit_dirs t;
	find_toolkit_dirs(rec->deps, rec->ndeps, &t);
	/* nvcc's order: -I, the toolkit's include, -isystem, the toolkit's cccl. */
	cjc_strvec_pushv(&sp.dirs, j->c.search.dirs.v, j->c.search.dirs.n);
	if (t.include)
		cjc_strvec_push(&sp.dirs, t.include);
	cjc_strvec_pushv(&sp.dirs, j->c.isystem.v, j->c.isystem.n);
	if (t.cccl)
		cjc_strvec_push(&sp.dirs, t.cccl);
	for (size_t i = 0; i < rec->ndeps; i++) {
		struct cjc_buf content = CJC_BUF_INIT;
		if (!cjc_read_file(rec->deps[i].path, &content))
			cjc_includescan(rec->deps[i].path, content.data, content.len, &sp, &rec->absent);
		cjc_buf_release(&content);
	}
	cjc_strvec_sort_unique(&rec->absent);
	cjc_strvec_clear(&sp.dirs);
	toolkit_dirs_release(&t);
}

/*
 * Fills a manifest record from nvcc's dependency file: each file's size and
 * hash, and the include candidates that were absent.  Returns -1 when the
 * dependency file cannot be read.  Sets *stable to false, with the reason,
 * when a file cannot be hashed or was modified after nvcc started: what we
 * hash might not be what nvcc read, so the result must not be published.
 */
static int record_dependencies(struct job *j, const struct compile_result *r,
			       struct cjc_manifest_record *rec, bool *stable, struct cjc_buf *why)
{
	struct cjc_buf text = CJC_BUF_INIT;
	struct cjc_strvec deps = CJC_STRVEC_INIT;
	*stable = true;
	if (cjc_read_file(r->tmp_dep, &text) || cjc_depfile_parse(text.data, text.len, &deps)) {
		cjc_buf_addf(why, "cannot read nvcc's dependency output: %s", strerror(errno));
		cjc_buf_release(&text);
		return -1;
	}
	rec->deps = cjc_xcalloc(deps.n + 1, sizeof *rec->deps);
	for (size_t i = 0; i < deps.n; i++) {
		struct cjc_dep *d = &rec->deps[rec->ndeps++];
		struct stat st;
		d->path = cjc_xstrdup(deps.v[i]);
		if (*stable && (stat(d->path, &st) || cjc_filehash_get(d->path, &d->size, d->sha))) {
			cjc_buf_addf(why, "cannot read %s: %s", d->path, strerror(errno));
			*stable = false;
		} else if (*stable && (newer_than(&st.st_mtim, &r->started) ||
				       newer_than(&st.st_ctim, &r->started))) {
			cjc_buf_addf(why, "%s changed during the compile", d->path);
			*stable = false;
		}
	}
	if (*stable)
		scan_includes(j, rec);
	cjc_strvec_clear(&deps);
	cjc_buf_release(&text);
	return 0;
}

static void collect_environment(struct cjc_strvec *env)
{
	for (size_t i = 0; i < NKEY_ENV; i++) {
		const char *v = getenv(key_env[i]);
		if (v) {
			char *kv = cjc_xasprintf("%s=%s", key_env[i], v);
			cjc_strvec_push(env, kv);
			free(kv);
		}
	}
}

static int format_metadata(struct job *j, const struct compile_result *r,
			   const struct cjc_manifest_record *rec, const struct cjc_staging *st,
			   struct cjc_buf *out)
{
	struct cjc_strvec env = CJC_STRVEC_INIT;
	collect_environment(&env);
	struct cjc_metadata md = {
		.key = rec->entry_key,
		.argv = j->argv,
		.argc = (size_t)j->argc,
		.cwd = j->cwd,
		.compiler_path = j->nvcc.path,
		.compiler_realpath = j->nvcc.realpath,
		.compiler_version = j->nvcc.version,
		.host_path = j->host.path,
		.host_version = j->host.version,
		.options = j->c.options,
		.inputs = rec->deps,
		.ninputs = rec->ndeps,
		.environment = env.v,
		.nenvironment = env.n,
		.target = j->target,
		.duration_ms = r->duration_ms,
		.files = st->files,
		.nfiles = st->nfiles,
	};
	int rc = cjc_metadata_format(&md, out);
	cjc_strvec_clear(&env);
	return rc;
}

static uint64_t staged_bytes(const struct cjc_staging *st, const struct cjc_buf *meta)
{
	uint64_t n = meta->len;
	for (size_t i = 0; i < st->nfiles; i++)
		n += st->files[i].size;
	return n;
}

/* Counts a new entry and, past the size limit, evicts from its shard. */
static void keep_within_limit(struct job *j, const char *key, uint64_t bytes)
{
	struct cjc_evict_report r;
	cjc_evict_account(&j->store, key, bytes);
	if (cjc_evict_after_publish(&j->store, key, j->cfg.max_size, &r))
		cjc_log("eviction failed: %s", strerror(errno));
	else if (r.evicted)
		cjc_log("evicted %llu entries (%llu bytes) to stay under max_size",
			(unsigned long long)r.evicted, (unsigned long long)r.evicted_bytes);
}

/* Stages, publishes and records the entry; failures are logged, never fatal. */
static void publish(struct job *j, const struct compile_result *r,
		    const struct cjc_manifest_record *rec)
{
	struct cjc_staging st;
	struct cjc_buf meta = CJC_BUF_INIT;
	char *name = artifact_name(j);
	bool won = false;
	int rc = cjc_staging_begin(&j->store, &st);
	if (!rc)
		rc = cjc_staging_add_file(&st, name, r->tmp_out);
	if (!rc && r->out.len)
		rc = cjc_staging_add_data(&st, "stdout", r->out.data, r->out.len);
	if (!rc && r->err.len)
		rc = cjc_staging_add_data(&st, "stderr", r->err.data, r->err.len);
	if (!rc)
		rc = format_metadata(j, r, rec, &st, &meta);
	uint64_t bytes = staged_bytes(&st, &meta);
	if (!rc)
		rc = cjc_staging_publish(&j->store, &st, rec->entry_key, &meta, &won);
	if (rc) {
		cjc_log("cannot publish %s: %s", rec->entry_key, strerror(errno));
		cjc_staging_abort(&st);
		count(j, CJC_STAT_ERRORS, 0);
	} else {
		cjc_log("%s %s for %s", won ? "published" : "already published", rec->entry_key,
			j->c.source);
		if (won)
			keep_within_limit(j, rec->entry_key, bytes);
		char *mpath = cjc_store_manifest_path(&j->store, j->direct_key);
		char *mdir = cjc_dirname(mpath);
		if (cjc_store_make_subdir(mdir) || cjc_manifest_add(mpath, rec)) {
			cjc_log("cannot update manifest %s: %s", mpath, strerror(errno));
			count(j, CJC_STAT_ERRORS, 0);
		}
		free(mdir);
		free(mpath);
	}
	cjc_buf_release(&meta);
	free(name);
}

static int compile_miss(struct job *j)
{
	struct compile_result r = { 0 };
	struct cjc_manifest_record rec = { 0 };
	struct cjc_buf why = CJC_BUF_INIT;
	bool stable = false;
	int rc = run_nvcc(j, &r);
	if (!rc && r.status != 0) {
		replay(&r.out, &r.err);
		count(j, CJC_STAT_COMPILE_FAILED, 0);
		rc = r.status;
		goto out;
	}
	if (!rc)
		rc = record_dependencies(j, &r, &rec, &stable, &why);
	if (!rc && stable && !j->cfg.readonly) {
		cjc_key_entry(j->direct_key, rec.deps, rec.ndeps, rec.entry_key);
		publish(j, &r, &rec);
	}
	if (!rc && write_user_depfile(j, rec.deps, rec.ndeps))
		rc = -1, cjc_buf_addf(&why, "cannot write %s: %s", j->c.dep_file, strerror(errno));
	if (!rc && rename(r.tmp_out, j->c.output))
		rc = -1, cjc_buf_addf(&why, "cannot write %s: %s", j->c.output, strerror(errno));
	if (rc) {
		/* Nothing was delivered: let nvcc do the whole job itself. */
		count(j, CJC_STAT_ERRORS, 0);
		result_release(&r);
		cjc_manifest_record_release(&rec);
		rc = run_uncached(j, why.len ? why.data : "cannot run nvcc");
		cjc_buf_release(&why);
		return rc;
	}
	cjc_tempfile_forget(r.tmp_out);
	replay(&r.out, &r.err);
	if (!stable)
		cjc_log("miss for %s, not published: %s", j->c.source, why.data);
	else
		cjc_log("miss for %s", j->c.source);
	count(j, CJC_STAT_MISSES, 0);
out:
	cjc_manifest_record_release(&rec);
	result_release(&r);
	cjc_buf_release(&why);
	return rc;
}

/* The hashes remembered for this translation unit (by cwd and source path). */
static void load_hash_cache(struct job *j)
{
	struct cjc_buf id = CJC_BUF_INIT;
	char hex[CJC_HEX_LEN + 1];
	cjc_buf_addf(&id, "%s", j->cwd);
	cjc_buf_add(&id, "", 1);
	cjc_buf_addf(&id, "%s", j->c.source);
	cjc_hash_buf_hex(id.data, id.len, hex);
	char *sub = cjc_xasprintf("hashes/%.2s/%s", hex, hex);
	j->hash_cache = cjc_store_path(&j->store, sub);
	j->meta_memo = cjc_xasprintf("%s.meta", j->hash_cache);
	free(sub);
	cjc_buf_release(&id);
	(void)cjc_filehash_load(j->hash_cache);
	(void)cjc_metamemo_load(j->meta_memo);
}

static void save_hash_cache(struct job *j)
{
	if (!j->hash_cache || j->cfg.readonly)
		return;
	if (cjc_filehash_save(j->hash_cache))
		cjc_log("cannot write hash cache %s: %s", j->hash_cache, strerror(errno));
	if (cjc_metamemo_save(j->meta_memo))
		cjc_log("cannot write %s: %s", j->meta_memo, strerror(errno));
}

/* Everything before the lookup; -1 means compile uncached. */
static int prepare(struct job *j, struct cjc_buf *why)
{
	store_umask(j, true);
	if (cjc_store_open(&j->store, j->cfg.dir)) {
		cjc_buf_addf(why, "cache directory %s is unusable: %s", j->cfg.dir, strerror(errno));
		return -1;
	}
	j->have_store = true;
	cjc_compile_parse(j->argc - 1, j->argv + 1, &j->c);
	if (j->c.uncacheable) {
		cjc_buf_addf(why, "uncacheable: %s", j->c.uncacheable);
		count(j, CJC_STAT_UNCACHEABLE, 0);
		return -1;
	}
	char *host = host_compiler_name(&j->c);
	int rc = 0;
	if (!getcwd(j->cwd, sizeof j->cwd)) {
		free(host);
		cjc_buf_addf(why, "cannot tell the working directory");
		count(j, CJC_STAT_ERRORS, 0);
		return -1;
	}
	load_hash_cache(j);
	if (cjc_identity_nvcc(&j->store, j->argv[0], &j->nvcc))
		rc = -1, cjc_buf_addf(why, "cannot identify %s: %s", j->argv[0], strerror(errno));
	else if (cjc_identity_host(&j->store, host, &j->host))
		rc = -1, cjc_buf_addf(why, "cannot identify host compiler %s: %s", host, strerror(errno));
	else
		rc = compute_direct_key(j, why);
	free(host);
	if (!rc && (j->nvcc.save_errno || j->host.save_errno)) {
		cjc_log("cannot remember a compiler identity: %s",
			strerror(j->nvcc.save_errno ? j->nvcc.save_errno : j->host.save_errno));
		count(j, CJC_STAT_ERRORS, 0);
	}
	if (rc)
		count(j, CJC_STAT_ERRORS, 0);
	return rc;
}

static void job_release(struct job *j)
{
	cjc_compile_release(&j->c);
	cjc_identity_release(&j->nvcc);
	cjc_identity_release(&j->host);
	cjc_store_close(&j->store);
	cjc_config_release(&j->cfg);
	cjc_filehash_forget();
	cjc_metamemo_forget();
	free(j->hash_cache);
	free(j->meta_memo);
}

int cjc_launch(const char *target, char *const *wrap, int argc, char **argv)
{
	struct job j = { .target = target, .wrap = wrap, .argc = argc, .argv = argv };
	struct cjc_buf why = CJC_BUF_INIT;
	int rc;
	j.user_umask = umask(0);
	umask(j.user_umask);
	if (cjc_config_load(&j.cfg, &why)) {
		fputs(why.data, stderr);
		fputs("cjc: compiling without the cache until the setting is fixed\n", stderr);
		cjc_log_setup(j.cfg.log, j.cfg.debug);
		rc = run_uncached(&j, "malformed configuration");
	} else if (cjc_log_setup(j.cfg.log, j.cfg.debug), j.cfg.disable) {
		rc = run_uncached(&j, "disabled by configuration");
	} else if (prepare(&j, &why)) {
		rc = run_uncached(&j, why.data);
	} else {
		rc = try_hit(&j) ? compile_miss(&j) : 0;
		save_hash_cache(&j);
	}
	job_release(&j);
	cjc_buf_release(&why);
	return rc;
}
