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

#include "base/fs.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/run.h"
#include "base/util.h"
#include "compile/config.h"
#include "compile/diagnostics.h"
#include "compile/lease.h"
#include "compile/lookup.h"
#include "compile/miss.h"
#include "compile/publish.h"
#include "compile/watcher.h"
#include "compile/why.h"
#include "keys/depfile.h"
#include "keys/filehash.h"
#include "keys/includescan.h"
#include "keys/key.h"
#include "keys/manifest.h"
#include "keys/metadata.h"
#include "keys/metamemo.h"
#include "keys/nvcc_args.h"
#include "keys/place.h"
#include "keys/rules.h"
#include "once.h"
#include "output.h"
#include "remote/helper.h"
#include "remote/remote.h"
#include "store/evict.h"
#include "store/identity.h"
#include "store/journal.h"
#include "store/records.h"
#include "store/sign.h"
#include "store/stats.h"
#include "store/store.h"
#include "verify.h"

/* Everything one compile through the cache works with. */
struct job {
	const char *target;
	char *const *wrap; /* a launcher to put in front of nvcc (NULL-terminated) */
	int argc;
	char **argv; /* argv[0] is the compiler */
	struct cjc_config cfg;
	struct cjc_store store;
	bool have_store;
	bool store_readonly; /* the store cannot be written by this user: said on a miss */
	struct cjc_compile c;
	struct cjc_identity nvcc, host;
	char cwd[PATH_MAX];
	char *deliver;    /* where the output is written: through symbolic links */
	char direct_key[CJC_HEX_LEN + 1];
	unsigned char source_sha[CJC_DIGEST_LEN]; /* the source as keyed, before nvcc ran */
	char *hash_cache; /* this translation unit's hash-cache file (filehash.h) */
	char *shared_cache; /* the store's shared one, when this unit had none */
	char *meta_memo;  /* and its checked metadata (metamemo.h) */
	mode_t user_umask;
	struct cjc_strvec env;        /* the key-relevant variables that are set, NAME=value */
	struct cjc_diagnostics diag;
	struct cjc_remotes *remotes; /* the remote stores, or NULL (remote.h) */
	char *lookup;     /* on a miss: what the lookup found */
	json_t *record;   /* this compile's journal record (why.h) */
	struct cjc_lease lease; /* on a miss: this key's lease (lease.h) */
	struct cjc_staging staged; /* remote_only: the entry made, never published */
	bool spilled;            /* check_spills: the entry served reports spills */
	bool hit;                /* an entry was served (verify.h samples it) */
	char served_key[CJC_HEX_LEN + 1];
	char *root;              /* path-free keys: the root (place.h), or NULL */
	const char *paths_keyed; /* how paths are keyed, and why, for `cjc why` */
	char *paths_exact;       /* a miss that keeps its paths: which reach the output */
	const char *served_meta; /* how the served entry's metadata was checked, for the log */
	struct cjc_watcher watcher; /* the watching helper, asked before a record is stat'ed */
};

/* remote_only (config.h): entries only in the remote stores. */
static bool remote_only(const struct job *j)
{
	return j->cfg.remote_only && j->remotes;
}

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
	if (!j->have_store)
		return;
	if (cjc_stats_bump(&j->store, what, saved_ms) ||
	    (j->target && cjc_stats_bump_named(&j->store, CJC_STATS_BY_TARGET, j->target, what, saved_ms)))
		cjc_log("cannot update the counters: %s", strerror(errno));
}

/* An uncacheable compile, counted under its reason (stats/uncacheable). */
static void count_uncacheable(struct job *j, const char *reason)
{
	count(j, CJC_STAT_UNCACHEABLE, 0);
	if (j->have_store && cjc_stats_bump_named(&j->store, CJC_STATS_BY_REASON, reason,
						  CJC_STAT_UNCACHEABLE, 0))
		cjc_log("cannot update the counters: %s", strerror(errno));
}

/* Starts this compile's journal record; written by record_write(). */
static void record_start(struct job *j, const char *result, const char *reason)
{
	json_decref(j->record);
	j->record = cjc_why_record(result, j->cwd[0] ? j->cwd : NULL, j->c.source,
				       j->c.output, j->target);
	if (reason)
		json_object_set_new(j->record, "reason", cjc_json_bytes(reason));
}

static void record_facts(struct job *j)
{
	json_object_set_new(j->record, "facts", cjc_why_facts(&j->c, j->cwd, &j->nvcc, &j->host,
								  j->env.v, j->env.n));
	if (j->paths_keyed)
		json_object_set_new(j->record, "paths",
				    cjc_why_paths(j->root, j->paths_keyed, j->paths_exact));
}

static void record_write(struct job *j)
{
	if (!j->record || !j->have_store)
		return;
	store_umask(j, true);
	if (cjc_journal_append(&j->store, j->record))
		cjc_log("cannot write the journal: %s", strerror(errno));
	json_decref(j->record);
	j->record = NULL;
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
	record_write(j);
	store_umask(j, false);
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	push_wrapper(j, &argv);
	cjc_strvec_pushv(&argv, j->argv, (size_t)j->argc);
	if (j->cfg.print_commands)
		cjc_diagnostics_print_command(argv.v);
	cjc_exec(argv.v);
	cjc_strvec_clear(&argv);
	fprintf(stderr, "cjc: cannot run %s: %s\n", j->argv[0], strerror(errno));
	return 127;
}

static int compute_direct_key(struct job *j, struct cjc_buf *why)
{
	struct cjc_key_input in = {
		.kind = cjc_kind_name(j->c.kind),
		.nvcc_digest = j->nvcc.digest,
		.host_digest = j->host.digest,
		.args = j->c.key_args.v,
		.nargs = j->c.key_args.n,
		.cwd = j->c.place.keys_cwd ? j->cwd : "",
		.env = &j->c.env,
	};
	uint64_t size;
	if (cjc_filehash_get(j->c.source, &size, in.source_sha)) {
		cjc_buf_addf(why, "cannot read %s: %s", j->c.source, strerror(errno));
		return -1;
	}
	cjc_key_direct(&in, j->direct_key);
	memcpy(j->source_sha, in.source_sha, CJC_DIGEST_LEN);
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
/* Writes the user's dependency file, the same on a hit as on a miss. */
static int write_depfile(const struct job *j, const struct cjc_dep *deps, size_t n)
{
	if (!j->c.dep_requested)
		return 0;
	struct cjc_toolkit_dirs t;
	cjc_toolkit_dirs_find(deps, n, &t);
	struct cjc_strvec names = CJC_STRVEC_INIT;
	for (size_t i = 0; i < n; i++)
		if (!j->c.dep_nonsystem || i == 0 || !is_system_header(j, deps[i].path, t.cccl))
			cjc_strvec_push(&names, deps[i].path);
	struct cjc_buf text = CJC_BUF_INIT;
	cjc_depfile_format(&text, j->c.dep_target, names.v, names.n, j->c.dep_phony);
	int rc = cjc_replace_file(j->c.dep_file, text.data, text.len);
	int e = errno;
	cjc_buf_release(&text);
	cjc_strvec_clear(&names);
	cjc_toolkit_dirs_release(&t);
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

static char *artifact_name(const struct job *j)
{
	return cjc_xasprintf("output.%s", cjc_kind_ext(j->c.kind));
}

/* check_spills (diagnostics.h): the compile fails as nvcc -Werror would. */
static int fail_on_spills(void)
{
	fputs("cjc: error: ptxas reported spills or local memory use and check_spills is set "
	      "(CJC_CHECK_SPILLS)\n", stderr);
	return 255;
}

static void set_exact(struct job *j, char *why)
{
	free(j->paths_exact);
	j->paths_exact = why;
}

/*
 * lookup.h's deliver: the verified output beside the target, the dependency
 * file, the replayed messages.  -1: the entry is damaged;
 * CJC_LOOKUP_UNWRITTEN: it is fine but the output or dependency file could
 * not be written here.  With check_spills, an entry whose warnings report
 * spills has its messages replayed but no output written (j->spilled).
 */
static int deliver(void *ctx, const struct cjc_entry *e, const struct cjc_manifest_record *rec,
		   struct cjc_buf *why)
{
	struct job *j = ctx;
	struct cjc_buf out = CJC_BUF_INIT, err = CJC_BUF_INIT;
	char *name = artifact_name(j);
	char *tmp = cjc_unique_name(j->deliver);
	int result = 0;
	cjc_tempfile_add(tmp);
	store_umask(j, false);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	store_umask(j, true);
	if (fd < 0) {
		cjc_buf_addf(why, "cannot create %s: %s", tmp, strerror(errno));
		result = CJC_LOOKUP_UNWRITTEN;
	} else {
		int copied = cjc_entry_copy(e, name, fd, why);
		if (copied == -2)
			result = CJC_LOOKUP_UNWRITTEN;
		else if (copied ||
			 (cjc_entry_artifact(e, "stdout") && cjc_entry_read(e, "stdout", &out, why)) ||
			 (cjc_entry_artifact(e, "stderr") && cjc_entry_read(e, "stderr", &err, why)))
			result = -1;
	}
	if (fd >= 0 && close(fd) && !result)
		result = CJC_LOOKUP_UNWRITTEN, cjc_buf_addf(why, "cannot write %s: %s", tmp, strerror(errno));
	if (rec->exact && j->root)
		set_exact(j, cjc_xstrdup("the entry served was recorded exact: a path reaches its "
					 "output, and it was made in this directory"));
	j->spilled = !result && j->diag.check_spills && cjc_diagnostics_spilled(err.data, err.len);
	if (!result && !j->spilled && write_user_depfile(j, rec->deps, rec->ndeps))
		result = CJC_LOOKUP_UNWRITTEN, cjc_buf_addf(why, "cannot write %s: %s", j->c.dep_file, strerror(errno));
	if (!result && !j->spilled && rename(tmp, j->deliver))
		result = CJC_LOOKUP_UNWRITTEN, cjc_buf_addf(why, "cannot write %s: %s", j->c.output, strerror(errno));
	if (!result && !j->spilled)
		cjc_tempfile_forget(tmp);
	else
		cjc_tempfile_remove(tmp);
	if (!result)
		cjc_replay(&out, &err);
	j->served_meta = e->meta ? "parsed" : e->unread ? "recognised by its stamp" : "recognised by its hash";
	free(tmp);
	free(name);
	cjc_buf_release(&out);
	cjc_buf_release(&err);
	return result;
}

static void set_lookup(struct job *j, char *text)
{
	free(j->lookup);
	j->lookup = text;
}

/* lookup.h's count, and its and publish.h's note. */
static void count_event(void *ctx, enum cjc_counter what, uint64_t saved_ms)
{
	count(ctx, what, saved_ms);
}

static void note(void *ctx, const char *line)
{
	(void)ctx;
	cjc_log("%s", line);
}

/* Whether the watching helper vouches for r's files (watcher.h). */
static bool vouched(void *ctx, const struct cjc_manifest_record *r)
{
	struct job *j = ctx;
	return j->cfg.watcher && cjc_watcher_unchanged(&j->watcher, j->cwd, r);
}

/* The record of a manifest whose files are unchanged here. */
static long match(void *ctx, const struct cjc_manifest *m)
{
	struct job *j = ctx;
	return cjc_manifest_match_vouched(m, j->direct_key, &j->c.place, vouched, j);
}

/* This compile as the one lookup sees it (lookup.h). */
static struct cjc_lookup_request request_of(struct job *j)
{
	return (struct cjc_lookup_request){
		.store = &j->store, .direct_key = j->direct_key, .trusted_keys = j->cfg.trusted_keys,
		.touch = !j->cfg.readonly, .remotes = j->remotes, .remote_only = remote_only(j),
		.max_size = j->cfg.max_size, .match = match, .deliver = deliver,
		.ctx = j, .count = count_event, .note = note, .events = j,
	};
}

/* The lookup's answer: -1 for a miss (what it found kept for the journal),
 * else the compile's exit status after the hit's bookkeeping. */
static int answer(struct job *j, struct cjc_lookup_result *r)
{
	int rc = -1;
	if (r->why)
		set_lookup(j, cjc_xstrdup(r->why));
	if (r->status == CJC_LOOKUP_HIT) {
		uint64_t reused, hashed, gone;
		cjc_filehash_counts(&reused, &hashed, &gone);
		cjc_log("hit %s for %s (%llu file hashes remembered, %llu files read, %llu absent "
			"names known by their directory, metadata %s)", r->entry_key, j->c.source,
			(unsigned long long)reused, (unsigned long long)hashed,
			(unsigned long long)gone, j->served_meta);
		record_start(j, "hit", NULL);
		json_object_set_new(j->record, "entry", json_string(r->entry_key));
		json_object_set_new(j->record, "saved_ms", json_integer(r->duration_ms));
		record_facts(j);
		j->hit = true;
		memcpy(j->served_key, r->entry_key, CJC_HEX_LEN + 1);
		rc = j->spilled ? fail_on_spills() : 0;
		cjc_watcher_checked(&j->watcher, j->cwd,
				    &r->rec); /* served: the next hit may skip stats */
	}
	cjc_lookup_result_release(r);
	return rc;
}

/* Looks for an entry in the store; -1 for a miss, else the compile's exit status. */
static int try_hit(struct job *j)
{
	if (remote_only(j)) {
		set_lookup(j, cjc_xstrdup("remote_only is set: the local store is not searched"));
		return -1;
	}
	struct cjc_lookup_request q = request_of(j);
	struct cjc_lookup_result r = { 0 };
	cjc_lookup_local(&q, &r);
	return answer(j, &r);
}

/* What one nvcc run produced. */
struct compile_result {
	int status;
	int64_t duration_ms;
	struct timespec started; /* the file system's clock, one tick early (see below) */
	char *tmp_out;
	char *tmp_dep;
	char *keep_dir; /* where nvcc -keep writes */
	struct cjc_buf out, err;
};

/* The command a miss runs, less -o and -M*. */
static void miss_command(const struct job *j, struct cjc_strvec *argv)
{
	push_wrapper(j, argv);
	cjc_strvec_push(argv, j->argv[0]);
	cjc_strvec_pushv(argv, j->c.nvcc_args.v, j->c.nvcc_args.n);
}

static int run_nvcc(struct job *j, struct compile_result *r)
{
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	r->tmp_out = cjc_unique_name(j->deliver);
	r->tmp_dep = cjc_xasprintf("%s.d", r->tmp_out);
	cjc_tempfile_add(r->tmp_out);
	cjc_tempfile_add(r->tmp_dep);
	/* the preprocessor's outputs tell whether it expanded a time macro (miss.h) */
	r->keep_dir = cjc_xasprintf("%s.keep", r->tmp_out);
	if (mkdir(r->keep_dir, 0700)) {
		free(r->keep_dir);
		r->keep_dir = NULL;
	} else {
		cjc_tempfile_add(r->keep_dir); /* an interrupted build leaves no 30 MB behind */
	}
	miss_command(j, &argv);
	cjc_diagnostics_add_args(&j->diag, r->keep_dir, &argv);
	char *extra[] = { "-o", r->tmp_out, "-MD", "-MF", r->tmp_dep };
	cjc_strvec_pushv(&argv, extra, 5);
	if (j->cfg.print_commands)
		cjc_diagnostics_print_command(argv.v);
	int out_fd = memfd_create("cjc-stdout", MFD_CLOEXEC);
	int err_fd = memfd_create("cjc-stderr", MFD_CLOEXEC);
	cjc_miss_start(&r->started);
	int64_t t0 = cjc_now_ms();
	store_umask(j, false);
	r->status = out_fd < 0 || err_fd < 0 ? -1 : cjc_run(argv.v, out_fd, err_fd);
	store_umask(j, true);
	r->duration_ms = cjc_now_ms() - t0;
	if (out_fd >= 0)
		cjc_read_memfd(out_fd, &r->out);
	if (err_fd >= 0)
		cjc_read_memfd(err_fd, &r->err);
	cjc_strvec_clear(&argv);
	return r->status < 0 ? -1 : 0;
}

static void result_release(struct compile_result *r)
{
	if (r->tmp_out)
		cjc_tempfile_remove(r->tmp_out);
	if (r->tmp_dep)
		cjc_tempfile_remove(r->tmp_dep);
	if (r->keep_dir)
		cjc_tempfile_remove(r->keep_dir);
	free(r->tmp_out);
	free(r->tmp_dep);
	free(r->keep_dir);
	cjc_buf_release(&r->out);
	cjc_buf_release(&r->err);
}

static int hash_dependency(void *ctx, const char *path, uint64_t *size,
			   unsigned char sha[CJC_DIGEST_LEN])
{
	(void)ctx;
	return cjc_filehash_get(path, size, sha);
}

/* The manifest record of what nvcc read (miss.h). */
static int record_dependencies(struct job *j, const struct compile_result *r,
			       struct cjc_manifest_record *rec, bool *stable, struct cjc_buf *why,
			       char **uncacheable)
{
	struct cjc_miss m = { .c = &j->c,
			      .started = r->started,
			      .source_sha = j->source_sha,
			      .hash = hash_dependency,
			      .uncacheable = uncacheable,
			      .kept = r->keep_dir };
	cjc_filehash_recheck(); /* nvcc ran since the lookup hashed them */
	return cjc_miss_record(&m, r->tmp_dep, rec, stable, why);
}

/* What nvcc ran when base_dir rewrote it: as given, paths relative. */
static void command_run(const struct job *j, struct cjc_strvec *argv)
{
	char *output[] = { "-o", j->c.output };
	cjc_strvec_push(argv, j->argv[0]);
	cjc_strvec_pushv(argv, j->c.nvcc_args.v, j->c.nvcc_args.n);
	cjc_strvec_pushv(argv, output, 2);
}

static void warn(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "cjc: %s\n", line);
}

/* Publishes the entry (publish.h); failures are logged, never fatal.
 * Returns whether the entry is in the store (ours or a winner's). */
static bool publish(struct job *j, const struct compile_result *r,
		    const struct cjc_manifest_record *rec)
{
	struct cjc_strvec run = CJC_STRVEC_INIT;
	if (j->c.rewritten)
		command_run(j, &run);
	struct cjc_metadata md = {
		.argv = j->argv,
		.argc = (size_t)j->argc,
		.cwd = j->cwd,
		.base_dir = j->cfg.base_dir,
		.dirs_shared = j->c.place.dirs_shared,
		.argv_run = run.v,
		.argc_run = run.n,
		.compiler_path = j->nvcc.path,
		.compiler_realpath = j->nvcc.realpath,
		.compiler_version = j->nvcc.version,
		.host_path = j->host.path,
		.host_version = j->host.version,
		.options = j->c.options,
		.inputs = rec->deps,
		.ninputs = rec->ndeps,
		.environment = j->env.v,
		.nenvironment = j->env.n,
		.diagnostics = cjc_diagnostics_json(&j->diag),
		.options_files = j->c.options_files,
		.target = j->target,
		.duration_ms = r->duration_ms,
	};
	char *name = artifact_name(j);
	struct cjc_publish p = {
		.store = &j->store, .key = rec->entry_key, .what = j->c.source,
		.direct_key = j->direct_key, .rec = rec,
		.artifact = name, .artifact_path = r->tmp_out, .out = &r->out, .err = &r->err,
		.diag = &j->diag, .keep_dir = r->keep_dir, .output = r->tmp_out,
		.ext = cjc_kind_ext(j->c.kind), .md = &md,
		.sign_key = j->cfg.sign_key, .sign_setting = cjc_config_env(CJC_SET_SIGN_KEY),
		.max_size = j->cfg.max_size, .note = note, .warn = warn,
		.unpublished = remote_only(j) ? &j->staged : NULL,
	};
	bool won;
	enum cjc_published rc = cjc_publish(&p, &won);
	if (rc == CJC_PUBLISH_FAILED || rc == CJC_PUBLISHED_NO_MANIFEST)
		count(j, CJC_STAT_ERRORS, 0);
	json_decref(md.diagnostics);
	cjc_strvec_clear(&run);
	free(name);
	return rc != CJC_PUBLISH_FAILED;
}

static void record_miss(struct job *j, const struct compile_result *r,
			const struct cjc_manifest_record *rec, bool stable, bool published,
			const char *unstable)
{
	record_start(j, "miss", j->lookup);
	json_object_set_new(j->record, "entry", stable ? json_string(rec->entry_key) : json_null());
	json_object_set_new(j->record, "published", json_boolean(published));
	if (!published)
		json_object_set_new(j->record, "not_published", cjc_json_bytes(
			!stable ? unstable : j->store_readonly ? "the store is read-only for this user"
			: j->cfg.readonly ? "readonly is set" : "the store refused it (see the log)"));
	json_object_set_new(j->record, "duration_ms", json_integer(r->duration_ms));
	record_facts(j);
	cjc_why_miss(&j->store, j->record, rec->deps, rec->ndeps);
}

/*
 * A store this user cannot write (its directory read-only for them, or on a
 * read-only file system) still serves hits, and everything else goes on as
 * before; without the readonly setting that is taken for a mistake, and
 * each miss that could not be published says so (say_readonly).
 */
static void check_writable(struct job *j)
{
	if (j->cfg.readonly || !faccessat(AT_FDCWD, j->store.dir, W_OK, AT_EACCESS) ||
	    (errno != EACCES && errno != EROFS && errno != EPERM))
		return;
	cjc_log("cache directory %s is read-only for this user: %s", j->store.dir, strerror(errno));
	j->store_readonly = true;
}

/* Lines said once per build (once.h): the troubles of a whole build. */
static void say_once(const char *lines)
{
	if (cjc_say_once(lines))
		fputs(lines, stderr);
}

/* What the watching helper found that is not ours (a socket, a directory). */
static void say_watcher_news(const struct job *j)
{
	const char *news = cjc_watcher_news(&j->watcher);
	char *line = news ? cjc_xasprintf("cjc: %s\n", news) : NULL;
	if (line)
		say_once(line);
	free(line);
}

static void say_readonly(const struct job *j)
{
	char *dir = cjc_printable(j->store.dir);
	char *message = cjc_xasprintf("cjc: cache directory %s is read-only for you: what is "
				      "compiled is not kept; make it writable, or set readonly "
				      "(CJC_READONLY=1) if that is meant\n", dir);
	say_once(message);
	free(dir);
	free(message);
}

static void warn_no_sass(const struct job *j)
{
	if (j->diag.keep_sass && !j->diag.cuobjdump)
		fprintf(stderr, "cjc: keep_sass is set but cuobjdump is not installed (beside %s or "
			"on PATH); no SASS was kept\n", j->nvcc.realpath ? j->nvcc.realpath : j->argv[0]);
}

/* Whether key_args' word i holds a path value (nvcc_args.h). */
static bool path_word(const struct cjc_compile *c, size_t i)
{
	for (size_t k = 0; k < c->npath_words; k++)
		if (c->path_words[k] == i)
			return true;
	return false;
}

/* The option words and keyed variables, one a line, for rules.h; not the
 * path values, which ask for nothing ("cmake-build-debug" is no -g). */
static void options_text(const struct job *j, struct cjc_buf *out)
{
	for (size_t i = 0; i < j->c.key_args.n; i++)
		if (!path_word(&j->c, i))
			cjc_buf_addf(out, "%s\n", j->c.key_args.v[i]);
	for (size_t i = 0; i < j->env.n; i++)
		cjc_buf_addf(out, "%s\n", j->env.v[i]);
}

/* Whether the working directory bears on what the compile reads: a relative
 * source or path value resolves against it. */
static bool cwd_bears(const struct cjc_compile *c)
{
	return c->names_relative || c->source[0] != '/';
}

/* Path-free keys (place.h): a root when no option can put a path in the
 * output and base_dir (which has its own rule) is unset. */
static void choose_root(struct job *j)
{
	const struct cjc_place *p = &j->c.place;
	struct cjc_buf options = CJC_BUF_INIT;
	options_text(j, &options);
	if (j->cfg.base_dir)
		j->paths_keyed = "exact: base_dir is set (paths under it are keyed relative to the "
				 "working directory)";
	else if (p->records_dirs || p->dirs_shared || p->keys_cwd ||
		 cjc_rules_path_reaches(NULL, 0, options.data, options.len))
		j->paths_keyed = "exact: an option puts paths in the output (-g, -G, -lineinfo, or "
				 "__FILE__ in a -D)";
	else if (!(j->root = cjc_place_root(cwd_bears(&j->c) ? j->cwd : NULL, j->c.source)))
		j->paths_keyed = "exact: the working directory and the source share no directory "
				 "but /";
	else
		j->paths_keyed = "relative to the root: no option puts a path in the output";
	if (j->root)
		cjc_compile_set_root(&j->c, j->root);
	cjc_buf_release(&options);
}

/* Whether the preprocessor shows a relocated file's name (names) in the
 * output (miss.h); the miss's -E runs write beside its output. */
static bool preprocessed_names(const struct job *j, const struct compile_result *r,
			       char *const *names, size_t n)
{
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	miss_command(j, &argv);
	char *out = cjc_xasprintf("%s.preprocessed.ii", r->tmp_out);
	cjc_tempfile_add(out);
	bool host = j->c.kind == CJC_KIND_OBJECT || j->c.kind == CJC_KIND_RDC_OBJECT;
	struct cjc_miss_preprocess p = {
		.command = &argv, .out = out, .host = host, .names = names, .n = n
	};
	bool named = cjc_miss_preprocessed_names(&p);
	cjc_tempfile_remove(out);
	free(out);
	cjc_strvec_clear(&argv);
	return named;
}

/* Whether a file nvcc read names a path that reaches the output (rules.h):
 * __FILE__ and the like in one keyed relative to the root, where the
 * preprocessor shows it. */
static bool files_name_path(const struct job *j, const struct compile_result *r,
			    const struct cjc_manifest_record *rec)
{
	struct cjc_buf *texts = cjc_xcalloc(rec->ndeps + 1, sizeof *texts), options = CJC_BUF_INIT;
	bool *relocated = cjc_xcalloc(rec->ndeps + 1, sizeof *relocated);
	char **names = cjc_xcalloc(rec->ndeps + 1, sizeof *names);
	size_t nnames = 0;
	for (size_t i = 0; i < rec->ndeps; i++) {
		char *keyed = cjc_place_key_path(&j->c.place, rec->deps[i].path);
		relocated[i] = keyed != NULL;
		const char *slash = strrchr(rec->deps[i].path, '/');
		if (keyed)
			names[nnames++] = slash ? (char *)slash + 1 : rec->deps[i].path;
		free(keyed);
		(void)cjc_read_file(rec->deps[i].path, &texts[i]);
	}
	options_text(j, &options);
	bool named = cjc_rules_paths_reach(texts, rec->ndeps, relocated, options.data,
					   options.len) &&
		     preprocessed_names(j, r, names, nnames);
	for (size_t i = 0; i < rec->ndeps; i++)
		cjc_buf_release(&texts[i]);
	free(names);
	free(texts);
	free(relocated);
	cjc_buf_release(&options);
	return named;
}

static const char internal_named[] = "the output names an _INTERNAL_ symbol, whose prefix nvcc "
				     "derives from the source's absolute path (or cannot be read)";
static const char file_named[] = "a file names __FILE__, __FILE_NAME__, assert, __BASE_FILE__ or "
				 "__builtin_FILE (or a macro naming them)";

static const char kept_named[] = "the preprocessor wrote the directory into the code it "
				 "compiled (a __FILE__ pasted together, or __builtin_FILE)";

/* On a miss: whether a path can reach this output, from the output itself
 * and from the files nvcc read; such a record is exact (key.h). */
static void decide_exact(struct job *j, const struct compile_result *r,
			 struct cjc_manifest_record *rec)
{
	struct cjc_buf output = CJC_BUF_INIT;
	if (cjc_read_file(r->tmp_out, &output) ||
	    cjc_rules_output_names_path(output.data, output.len))
		set_exact(j, cjc_xstrdup(internal_named));
	else if (j->root && files_name_path(j, r, rec))
		set_exact(j, cjc_xstrdup(file_named));
	else if (j->root && r->keep_dir && cjc_miss_kept_names(r->keep_dir, j->root))
		set_exact(j, cjc_xstrdup(kept_named));
	cjc_buf_release(&output);
	rec->exact = j->paths_exact != NULL;
	rec->root = j->root ? cjc_xstrdup(j->root) : NULL;
}

static int compile_miss(struct job *j)
{
	struct compile_result r = { 0 };
	struct cjc_manifest_record rec = { 0 };
	struct cjc_buf why = CJC_BUF_INIT;
	bool stable = false, published = false;
	char *uncacheable = NULL; /* a time macro (miss.h) */
	int rc = run_nvcc(j, &r);
	if (!rc && r.status != 0) {
		cjc_replay(&r.out, &r.err);
		count(j, CJC_STAT_COMPILE_FAILED, 0);
		record_start(j, "failed", NULL);
		rc = r.status;
		goto out;
	}
	if (!rc)
		rc = record_dependencies(j, &r, &rec, &stable, &why, &uncacheable);
	if (!rc && stable)
		decide_exact(j, &r, &rec);
	if (!rc && stable)
		cjc_key_entry(j->direct_key, &rec, &j->c.place, rec.entry_key);
	if (!rc && stable && !uncacheable && !j->cfg.readonly)
		published = publish(j, &r, &rec);
	if (!rc && j->store_readonly && !published)
		say_readonly(j);
	bool spilled = !rc && j->diag.check_spills && cjc_diagnostics_spilled(r.err.data, r.err.len);
	if (!rc && !spilled && write_user_depfile(j, rec.deps, rec.ndeps))
		rc = -1, cjc_buf_addf(&why, "cannot write %s: %s", j->c.dep_file, strerror(errno));
	if (!rc && !spilled && rename(r.tmp_out, j->deliver))
		rc = -1, cjc_buf_addf(&why, "cannot write %s: %s", j->c.output, strerror(errno));
	if (rc) {
		/* Nothing was delivered: let nvcc do the whole job itself. */
		cjc_staging_abort(&j->staged); /* run_uncached execs: no exit handlers */
		cjc_lease_release(&j->lease);
		count(j, CJC_STAT_ERRORS, 0);
		record_start(j, "error", why.len ? why.data : "cannot run nvcc");
		result_release(&r);
		cjc_manifest_record_release(&rec);
		free(uncacheable);
		rc = run_uncached(j, why.len ? why.data : "cannot run nvcc");
		cjc_buf_release(&why);
		return rc;
	}
	if (!spilled)
		cjc_tempfile_forget(r.tmp_out);
	cjc_replay(&r.out, &r.err);
	warn_no_sass(j);
	if (published && remote_only(j))
		published = cjc_remote_publish_staged(j->remotes, &j->staged, rec.entry_key,
						      j->direct_key, &rec) > 0;
	else if (published)
		(void)cjc_remote_publish(j->remotes, rec.entry_key, j->direct_key, &rec);
	cjc_staging_abort(&j->staged);
	uint64_t reused, hashed, gone;
	cjc_filehash_counts(&reused, &hashed, &gone);
	cjc_log("miss for %s (%llu file hashes remembered, %llu files read)%s%s", j->c.source,
		(unsigned long long)reused, (unsigned long long)hashed,
		stable ? "" : ", not published: ", stable ? "" : why.data);
	if (uncacheable) {
		cjc_log("not cached: %s", uncacheable);
		count_uncacheable(j, CJC_RULES_TIME_MACRO);
		record_start(j, "uncacheable", uncacheable);
		record_facts(j);
	} else {
		count(j, CJC_STAT_MISSES, 0);
		record_miss(j, &r, &rec, stable, published, why.len ? why.data : "");
	}
	if (spilled)
		rc = fail_on_spills();
out:
	free(uncacheable);
	cjc_manifest_record_release(&rec);
	result_release(&r);
	cjc_buf_release(&why);
	return rc;
}

/* The hashes remembered for this translation unit (by cwd and source
 * path); for a unit new to the store, the store's shared ones (filehash.h). */
static void load_hash_cache(struct job *j)
{
	j->hash_cache = cjc_store_hash_cache_name(j->cwd, j->c.source);
	j->meta_memo = cjc_xasprintf("%s.meta", j->hash_cache);
	if (cjc_filehash_load(&j->store, j->hash_cache)) {
		j->shared_cache = cjc_store_hash_cache_name("", "the toolkit's and the system's headers");
		(void)cjc_filehash_load_shared(&j->store, j->shared_cache);
	}
	(void)cjc_metamemo_load(&j->store, j->meta_memo);
}

/* What the shared hash cache holds: files under the system's include
 * directories and the toolkit's.  nvcc names its headers through the
 * directory above its bin/, as called or as resolved; that directory is
 * the toolkit's when it has include/cuda_runtime.h (a wrapper script in
 * ~/bin is not: its ~ would put every header in the shared cache). */
static void share_hashes_under(const struct job *j)
{
	struct cjc_strvec dirs = CJC_STRVEC_INIT;
	cjc_strvec_push(&dirs, "/usr/include/");
	cjc_strvec_push(&dirs, "/usr/lib/gcc/");
	const char *nvcc[] = { j->nvcc.path, j->nvcc.realpath };
	for (size_t i = 0; i < 2; i++) {
		char *bin = nvcc[i] ? cjc_dirname(nvcc[i]) : NULL;
		char *root = bin ? cjc_dirname(bin) : NULL;
		char *header = root ? cjc_xasprintf("%s/include/cuda_runtime.h", root) : NULL;
		/* not /usr: a packaged toolkit's headers are /usr/include's */
		if (header && root[0] == '/' && root[1] && strcmp(root, "/usr") &&
		    !access(header, F_OK)) {
			char *dir = cjc_xasprintf("%s/", root);
			cjc_strvec_push(&dirs, dir);
			free(dir);
		}
		free(header);
		free(root);
		free(bin);
	}
	cjc_filehash_share_under(dirs.v, dirs.n);
	cjc_strvec_clear(&dirs);
}

static void save_hash_cache(struct job *j)
{
	if (!j->hash_cache || j->cfg.readonly)
		return;
	if (cjc_filehash_save(&j->store, j->hash_cache))
		cjc_log("cannot write hash cache %s: %s", j->hash_cache, cjc_untrusted_error(errno));
	if (j->shared_cache && cjc_filehash_save_shared(&j->store, j->shared_cache))
		cjc_log("cannot write hash cache %s: %s", j->shared_cache, cjc_untrusted_error(errno));
	if (cjc_metamemo_save(&j->store, j->meta_memo))
		cjc_log("cannot write %s: %s", j->meta_memo, cjc_untrusted_error(errno));
}

/* nvcc's and the host compiler's identities (identity.h); 0 or -1 with why. */
static int identify_compilers(struct job *j, struct cjc_buf *why)
{
	char *host = cjc_compile_host(&j->c);
	int rc = 0;
	if (cjc_identity_nvcc(&j->store, j->argv[0], &j->nvcc))
		rc = -1, cjc_buf_addf(why, "cannot identify %s: %s", j->argv[0], strerror(errno));
	else if (cjc_identity_host(&j->store, host, &j->host))
		rc = -1, cjc_buf_addf(why, "cannot identify host compiler %s: %s", host, strerror(errno));
	free(host);
	if (!rc && (j->nvcc.save_errno || j->host.save_errno)) {
		cjc_log("cannot remember a compiler identity: %s",
			strerror(j->nvcc.save_errno ? j->nvcc.save_errno : j->host.save_errno));
		count(j, CJC_STAT_ERRORS, 0);
	}
	return rc;
}

/* The file a path names once symbolic links are followed (nvcc writes
 * through a link to the output; so do we, and the link stays). */
static char *through_links(const char *path)
{
	char *at = cjc_xstrdup(path);
	for (int hops = 0; hops < 40; hops++) {
		char target[PATH_MAX];
		ssize_t n = readlink(at, target, sizeof target - 1);
		if (n < 0)
			break;
		target[n] = '\0';
		char *dir = cjc_dirname(at);
		char *next = target[0] == '/' ? cjc_xstrdup(target) : cjc_path_join(dir, target);
		free(dir);
		free(at);
		at = next;
	}
	return at;
}

/* Why the output or dependency file cannot be served from an entry, or
 * NULL.  A missing directory: nvcc's own message is better than ours
 * naming a temporary file.  Not a regular file (/dev/null, a FIFO, a
 * device): a hit renames a new file into place, which would replace it, so
 * nvcc writes into it itself, uncached. */
static const char *output_trouble(const struct job *j)
{
	const char *files[] = { j->deliver, j->c.dep_requested ? j->c.dep_file : NULL };
	static const char *const missing[] = { "the output's directory does not exist",
					       "the dependency file's directory does not exist" };
	static const char *const special[] = { "the output is not a regular file",
					       "the dependency file is not a regular file" };
	for (size_t i = 0; i < 2; i++) {
		struct stat st;
		char *dir = files[i] ? cjc_dirname(files[i]) : NULL;
		bool is_missing = dir && !cjc_is_dir(dir);
		free(dir);
		if (is_missing)
			return missing[i];
		if (files[i] && !stat(files[i], &st) && !S_ISREG(st.st_mode))
			return special[i];
	}
	return NULL;
}

/* A remote store's settings failed (refused credentials, a bad URL): said
 * once per store and build; the build goes on. */
static void report_remote(const char *store, const char *message)
{
	char *said = cjc_xasprintf("cjc: remote store %s (setting remote, %s): %s; going on "
				   "without it\n", store, cjc_config_env(CJC_SET_REMOTE), message);
	say_once(said);
	free(said);
}

/* Everything before the lookup; -1 means compile uncached. */
static int prepare(struct job *j, struct cjc_buf *why)
{
	store_umask(j, true);
	if (cjc_store_open(&j->store, j->cfg.dir)) {
		char *unusable = cjc_store_unusable(j->cfg.dir, errno);
		cjc_buf_adds(why, unusable);
		free(unusable);
		char *said = cjc_xasprintf("cjc: %s; compiling without the cache (set CJC_DIR to a "
					   "directory you can write, or CJC_DISABLE=1)\n", why->data);
		say_once(said);
		free(said);
		return -1;
	}
	j->have_store = true;
	j->store.compression_level = j->cfg.compression_level;
	check_writable(j);
	if (!cjc_getpwd(j->cwd, sizeof j->cwd)) {
		j->cwd[0] = '\0';
		cjc_buf_addf(why, "cannot tell the working directory");
		count(j, CJC_STAT_ERRORS, 0);
		return -1;
	}
	struct cjc_place where = { .cwd = j->cwd, .base_dir = j->cfg.base_dir,
				   .share_dirs = !j->cfg.hash_dir };
	cjc_compile_parse(j->argc - 1, j->argv + 1, &where, &j->c);
	cjc_compile_resolve_native(&j->c, j->argv[0]);
	if (!j->c.uncacheable) {
		j->deliver = through_links(j->c.output);
		const char *trouble = output_trouble(j);
		if (trouble)
			j->c.uncacheable = cjc_xstrdup(trouble);
	}
	if (j->c.uncacheable) {
		cjc_buf_addf(why, "uncacheable: %s", j->c.uncacheable);
		count_uncacheable(j, j->c.uncacheable);
		record_start(j, "uncacheable", j->c.uncacheable);
		return -1;
	}
	cjc_key_environment(&j->c.env, &j->env);
	j->c.place.source = j->c.source;
	choose_root(j);
	load_hash_cache(j);
	int rc = identify_compilers(j, why);
	if (!rc && j->shared_cache)
		share_hashes_under(j);
	if (!rc) {
		/* ptx has no SASS to list */
		cjc_diagnostics_init(&j->diag, j->cfg.keep_ptx,
				     j->cfg.keep_sass && j->c.kind != CJC_KIND_PTX,
				     j->cfg.check_spills, j->nvcc.realpath);
		cjc_diagnostics_add_key(&j->diag, &j->c);
		rc = compute_direct_key(j, why);
	}
	if (!rc && !j->cfg.readonly) {
#ifdef CJC_HAVE_CURL
		if (j->cfg.remote_helper)
			cjc_helper_allow(); /* only here: not in `cjc remote`, nor in users' processes */
#endif
		j->remotes = cjc_remote_open(j->cfg.remote, &j->store, j->cfg.sign_key, j->cfg.trusted_keys,
					     report_remote);
	}
	if (rc) {
		count(j, CJC_STAT_ERRORS, 0);
		record_start(j, "error", why->data);
	}
	return rc;
}

/* After a local miss: an entry from a remote store, published here and
 * served (with remote_only, served from its staging, which is then
 * removed); -1 when none could be, else the compile's exit status. */
static int fetch_remote(struct job *j)
{
	struct cjc_lookup_request q = request_of(j);
	struct cjc_lookup_result r = { 0 };
	cjc_lookup_remote(&q, &r);
	return answer(j, &r);
}

/* lease.h: the entry another compile of this key published, when it is there. */
static int look_again(void *ctx, bool remote)
{
	struct job *j = ctx;
	int rc = try_hit(j);
	return rc < 0 && remote && j->remotes ? fetch_remote(j) : rc;
}

/* After a miss everywhere: the key's lease, or, when another compile holds
 * it, its entry once it is there; -1: compile (holding the lease if it
 * could be had), else the compile's exit status. */
static int take_lease(struct job *j)
{
	int served = -1;
	struct cjc_lease_wait w = {
		.store = j->cfg.readonly ? NULL : &j->store, .remotes = j->remotes,
		.direct_key = j->direct_key, .look = look_again, .ctx = j,
	};
	enum cjc_lease_result r = cjc_lease_take(&w, j->cfg.lease_wait, &j->lease, &served);
	if (j->lease.waited)
		count(j, CJC_STAT_LEASE_WAITS, 0);
	if (j->lease.timed_out)
		count(j, CJC_STAT_LEASE_TIMEOUTS, 0);
	if (j->lease.error)
		count(j, CJC_STAT_ERRORS, 0);
	return r == CJC_LEASE_SERVED ? served : -1;
}

/* What the lease cost, in the journal's record (why.h). */
static void record_lease(struct job *j)
{
	if (j->record && j->lease.waited)
		json_object_set_new(j->record, "lease", json_pack("{s:I, s:b}", "waited_ms",
			(json_int_t)j->lease.waited_ms, "timed_out", j->lease.timed_out));
}

/* verify_rate: a sampled hit compiled again, apart from the build (verify.h). */
static void verify_hit(struct job *j)
{
	if (!j->hit || j->cfg.verify_rate <= 0 || remote_only(j))
		return;
	struct cjc_strvec argv = CJC_STRVEC_INIT;
	cjc_strvec_push(&argv, j->argv[0]);
	cjc_strvec_pushv(&argv, j->c.nvcc_args.v, j->c.nvcc_args.n);
	char *artifact = artifact_name(j);
	struct cjc_verify v = {
		.store = &j->store, .rate = j->cfg.verify_rate, .key = j->served_key,
		.argv = argv.v, .artifact = artifact, .object = j->c.kind == CJC_KIND_OBJECT ||
		j->c.kind == CJC_KIND_RDC_OBJECT, .device_debug = j->c.device_debug,
		.cwd = j->cwd, .source = j->c.source, .output = j->c.output, .target = j->target,
	};
	cjc_verify_sample(&v);
	free(artifact);
	cjc_strvec_clear(&argv);
}

static void job_release(struct job *j)
{
	cjc_staging_abort(&j->staged);
	cjc_remote_close(j->remotes);
	cjc_compile_release(&j->c);
	cjc_identity_release(&j->nvcc);
	cjc_identity_release(&j->host);
	cjc_store_close(&j->store);
	cjc_config_release(&j->cfg);
	cjc_filehash_forget();
	cjc_metamemo_forget();
	free(j->hash_cache);
	free(j->shared_cache);
	free(j->meta_memo);
	free(j->deliver);
	free(j->lookup);
	free(j->root);
	free(j->paths_exact);
	json_decref(j->record);
	cjc_strvec_clear(&j->env);
	cjc_diagnostics_release(&j->diag);
	cjc_watcher_close(&j->watcher);
}

int cjc_launch(const char *target, char *const *wrap, int argc, char **argv)
{
	struct job j = { .target = target,
			 .wrap = wrap,
			 .argc = argc,
			 .argv = argv,
			 .lease.fd = -1,
			 .watcher = CJC_WATCHER_INIT };
	struct cjc_buf why = CJC_BUF_INIT;
	int rc;
	j.user_umask = umask(0);
	umask(j.user_umask);
	int bad = cjc_config_load(&j.cfg, &why);
	if (j.cfg.notes)
		say_once(j.cfg.notes);
	cjc_config_count(&j.cfg); /* broken settings: counted, so stats and the report say so */
	if (bad) {
		cjc_buf_adds(&why, "cjc: compiling without the cache until the setting is fixed\n");
		say_once(why.data);
		cjc_log_setup(j.cfg.log, j.cfg.debug);
		rc = run_uncached(&j, "malformed configuration");
	} else if (cjc_log_setup(j.cfg.log, j.cfg.debug), j.cfg.disable) {
		rc = run_uncached(&j, "disabled by configuration");
	} else if (prepare(&j, &why)) {
		rc = run_uncached(&j, why.data);
	} else {
		rc = try_hit(&j);
		say_watcher_news(&j);
		if (rc < 0 && j.remotes)
			rc = fetch_remote(&j);
		if (rc < 0)
			rc = take_lease(&j);
		cjc_remote_hang_up(j.remotes);
		if (rc < 0)
			rc = compile_miss(&j);
		cjc_lease_release(&j.lease);
		save_hash_cache(&j);
		record_lease(&j);
		record_write(&j);
		verify_hit(&j);
	}
	job_release(&j);
	cjc_buf_release(&why);
	return rc;
}
