/*
 * The public calls of <cudajitcache/jit.h>: handles, errors, results, and
 * what every compile does before its compiler's own path (nvcc.c, nvrtc.c):
 * check the request, find the arch, and name the source.
 *
 * The key binds the source's path (docs/key.md), so the path it is keyed by
 * is the same in every process and every copy of the store:
 * JIT_KEYED_SOURCE_DIR/<name>, where no file can be.  A hit needs no file:
 * the record's source is compared with the bytes in hand.  A miss writes
 * the code into a private directory of its own (jit_workdir_make), never
 * into the store, which others may share: there a member could swap the
 * source during a compile, plant a header beside it, or put a link where
 * nvcc writes its output (docs/trust.md).
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

#define MAX_ERROR 4096

/* How many fork()s this process descends from (pthread_atfork, below): a
 * handle whose lock was made in an ancestor makes its own, cheaper than
 * asking getpid() at every lock. */
static atomic_uint forks;

static void count_fork(void)
{
	atomic_fetch_add(&forks, 1);
}

void jit_lock(struct cjc_jit *h)
{
	/* A child of fork() may have inherited the lock held by a thread that
	 * does not exist there: it makes its own.  Its first call must not race
	 * with other threads of its own. */
	unsigned now = atomic_load(&forks);
	if (h->forks != now) {
		pthread_mutex_init(&h->lock, NULL);
		h->forks = now;
	}
	pthread_mutex_lock(&h->lock);
}

void jit_unlock(struct cjc_jit *h)
{
	pthread_mutex_unlock(&h->lock);
}

unsigned jit_fork_generation(void)
{
	return atomic_load(&forks);
}

int jit_fail(struct cjc_jit *h, const char *fmt, ...)
{
	char *msg = pthread_getspecific(h->error_key);
	if (!msg) {
		msg = cjc_xmalloc(MAX_ERROR);
		pthread_setspecific(h->error_key, msg);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, MAX_ERROR, fmt, ap);
	va_end(ap);
	return -1;
}

void jit_clear_error(struct cjc_jit *h)
{
	char *msg = pthread_getspecific(h->error_key);
	if (msg)
		msg[0] = '\0';
}

const char *cjc_jit_error(const cjc_jit *jit)
{
	const char *msg = jit ? pthread_getspecific(jit->error_key) : NULL;
	return msg ? msg : "";
}

void jit_note(const struct cjc_jit *h, const char *fmt, ...)
{
	if (!h->cfg.log && !h->cfg.debug)
		return;
	struct cjc_buf line = CJC_BUF_INIT;
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	va_list ap;
	va_start(ap, fmt);
	char *msg = cjc_xvasprintf(fmt, ap);
	va_end(ap);
	cjc_buf_addf(&line, "%s [%ld] jit: %s\n", stamp, (long)getpid(), msg);
	free(msg);
	int fd = h->cfg.log ? open(h->cfg.log, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC,
				   0666) : -1;
	if (fd >= 0) {
		(void)!cjc_write_all(fd, line.data, line.len);
		close(fd);
	}
	if (h->cfg.debug)
		(void)!cjc_write_all(2, line.data, line.len);
	cjc_buf_release(&line);
}

/*
 * fs.h's temporary-file registry would install handlers for SIGINT,
 * SIGTERM, SIGHUP, SIGPIPE and SIGQUIT the first time it is used, which
 * suits the cjc program but not a library inside someone else's process
 * (Python's KeyboardInterrupt, say): the library's temporaries are removed
 * at exit only, and staging a killed program leaves is reclaimed by `cjc
 * gc`, as for any killed writer.  It also counts forks, for jit_lock().
 */
static void once_per_process(void)
{
	pthread_atfork(NULL, NULL, count_fork);
	cjc_tempfile_without_signals();
	/* jansson's hash seed, which it would read from /dev/urandom (three
	 * system calls) at the first object; a no-op once it has one */
	size_t seed = 0;
	if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed && seed)
		json_object_seed(seed);
}

static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void fill_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

/* Variables that look like settings and are not: said once per handle,
 * in the log and on stderr, since a misspelt setting otherwise does nothing. */
static void warn_unknown(const cjc_jit *h, const char *prefix)
{
	struct cjc_strvec lines = CJC_STRVEC_INIT;
	jit_settings_unknown(prefix, &lines);
	for (size_t i = 0; i < lines.n; i++) {
		jit_note(h, "%s", lines.v[i]);
		fprintf(stderr, "cjc jit: warning: %s\n", lines.v[i]);
	}
	cjc_strvec_clear(&lines);
}

/* Settings only: the store, NVRTC and the driver wait for their first use
 * (jit_store_ready, nvrtc.c, driver.c), so that a program that opens a
 * handle and never compiles leaves nothing on disk. */
cjc_jit *cjc_jit_open(const char *prefix, char *err, size_t errlen)
{
	struct cjc_buf why = CJC_BUF_INIT;
	cjc_jit *h = cjc_xcalloc(1, sizeof *h);
	pthread_once(&process_once, once_per_process);
	if (cjc_config_load(&h->cfg, &why) || jit_settings_load(&h->set, prefix, &h->cfg, &why)) {
		fill_err(err, errlen, why.data ? why.data : "malformed settings");
		cjc_buf_release(&why);
		jit_settings_release(&h->set);
		cjc_config_release(&h->cfg);
		free(h);
		return NULL;
	}
	cjc_buf_release(&why);
	h->prefix = prefix ? cjc_xstrdup(prefix) : NULL; /* for the journal (journal.c) */
	cjc_log_setup(h->cfg.log, h->cfg.debug); /* for the store's own lines: remote.h, ... */
	pthread_key_create(&h->error_key, free);
	pthread_mutex_init(&h->lock, NULL);
	h->forks = atomic_load(&forks);
	/* What a settings file that is not trusted could not set (config.h):
	 * never a failure of the open, said where the JIT says things. */
	if (h->cfg.notes)
		jit_note(h, "%.*s", (int)strlen(h->cfg.notes) - 1, h->cfg.notes);
	warn_unknown(h, prefix);
	return h;
}

bool jit_store_ready(struct cjc_jit *h)
{
	int state = atomic_load(&h->store_state);
	if (state)
		return state > 0;
	/* opened outside the lock (it makes directories); a thread that loses
	 * the race closes its own */
	struct cjc_store store;
	const char *dir = h->set.text[JIT_CACHE_DIR];
	bool usable = !cjc_store_open(&store, dir);
	char *why = usable ? NULL : cjc_store_unusable(dir, errno);
	jit_lock(h);
	bool first = !atomic_load(&h->store_state);
	if (first) {
		if (usable)
			h->store = store;
		h->store_why = why;
		atomic_store(&h->store_state, usable ? 1 : -1);
	}
	state = atomic_load(&h->store_state);
	jit_unlock(h);
	if (!first && usable)
		cjc_store_close(&store);
	if (!first)
		free(why);
	else if (usable && !h->cfg.disable) /* broken settings: counted once per handle */
		cjc_config_count_in(&h->cfg, &h->store);
	return state > 0;
}

bool jit_cacheable(struct jit_job *j)
{
	struct cjc_jit *h = j->h;
	if (!h->cfg.disable && jit_store_ready(h))
		return j->cached = true;
	jit_note(h, "%s: compiling without the cache: %s", j->name,
		 h->cfg.disable ? "disable is set" : h->store_why);
	return false;
}

void cjc_jit_close(cjc_jit *h)
{
	if (!h)
		return;
	jit_memory_release_all(h); /* both take the lock: before it is destroyed */
	jit_deps_save(h);
	free(pthread_getspecific(h->error_key));
	pthread_setspecific(h->error_key, NULL);
	pthread_key_delete(h->error_key);
	pthread_mutex_destroy(&h->lock);
	jit_deps_release(&h->deps);
	jit_changes_release(h);
	jit_tools_release(h);
	jit_driver_release(h->driver);
	jit_nvrtc_release(h->nvrtc);
	free(h->nvrtc_error);
	if (jit_store_open(h))
		cjc_store_close(&h->store);
	free(h->store_why);
	jit_settings_release(&h->set);
	cjc_config_release(&h->cfg);
	free(h->prefix);
	free(h);
}

void cjc_jit_result_free(struct cjc_jit_result *res)
{
	if (!res)
		return;
	free(res->data);
	free(res->log);
	memset(res, 0, sizeof *res);
}

void jit_count(struct jit_job *j, int counter, uint64_t saved_ms)
{
	if (!jit_store_open(j->h))
		return;
	/* the NVRTC shim's compiles are also counted as a target of their own */
	if (cjc_stats_bump(&j->h->store, (enum cjc_counter)counter, saved_ms) ||
	    (j->compiler && cjc_stats_bump_named(&j->h->store, CJC_STATS_BY_TARGET, j->compiler,
						 (enum cjc_counter)counter, saved_ms)))
		jit_note(j->h, "cannot update the counters: %s", strerror(errno));
}

int jit_serve_entry(struct jit_job *j, const char *key, jit_entry_reader read, void *ctx,
		    int64_t *duration_ms)
{
	struct cjc_jit *h = j->h;
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	int served = 0;
	jit_deps_load_meta(h);
	enum cjc_lookup r = cjc_store_open_entry(&h->store, key, &e, &why);
	if (r == CJC_ENTRY_FOUND && cjc_sign_check_local_entry(&e, h->cfg.trusted_keys, &why)) {
		jit_note(h, "entry %s not served: %s", key, why.data);
		jit_count(j, CJC_STAT_UNTRUSTED, 0);
	} else if (r == CJC_ENTRY_FOUND && !read(ctx, &e, &why)) {
		if (!h->cfg.readonly)
			cjc_evict_touch(&e);
		jit_count(j, CJC_STAT_HITS, (uint64_t)e.duration_ms);
		jit_journal_hit(j, key, e.duration_ms);
		*duration_ms = e.duration_ms;
		served = 1;
	} else if (r != CJC_ENTRY_ABSENT) {
		jit_note(h, "damaged entry %s: %s; compiling instead (run `cjc verify --fix`)", key,
			 why.data ? why.data : "");
		jit_count(j, CJC_STAT_DAMAGED, 0);
	}
	if (r == CJC_ENTRY_FOUND)
		cjc_entry_release(&e);
	cjc_buf_release(&why);
	return served;
}

static void publish_note(void *ctx, const char *line)
{
	jit_note(ctx, "%s", line);
}

struct cjc_publish jit_publish_of(struct cjc_jit *h, const char *key, const char *name,
				  const struct cjc_metadata *md)
{
	return (struct cjc_publish){
		.store = &h->store, .key = key, .what = name, .md = md,
		.sign_key = h->cfg.sign_key, .sign_setting = cjc_config_env(CJC_SET_SIGN_KEY),
		.max_size = h->cfg.max_size, .note = publish_note, .warn = publish_note, .ctx = h,
	};
}

void jit_keep_within_limit(struct cjc_jit *h, const char *key, uint64_t bytes)
{
	struct cjc_publish p = jit_publish_of(h, key, NULL, NULL);
	if (bytes)
		cjc_publish_keep_within_limit(&p, bytes);
}

static void report_remote(const char *store, const char *message)
{
	fprintf(stderr, "cjc jit: remote store %s (setting remote, %s): %s; going on without it\n",
		store, cjc_config_env(CJC_SET_REMOTE), message);
}

struct cjc_remotes *jit_remote_open(struct cjc_jit *h)
{
	if (!h->cfg.remote || !*h->cfg.remote || h->cfg.readonly)
		return NULL;
	return cjc_remote_open(h->cfg.remote, &h->store, h->cfg.sign_key, h->cfg.trusted_keys,
			       report_remote);
}

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

static void name_source(struct jit_job *j)
{
	const struct cjc_jit_request *req = j->req;
	j->source = cjc_xasprintf("%s/%s", JIT_KEYED_SOURCE_DIR, j->name);
	cjc_hash_buf(req->code, strlen(req->code), j->code_sha);
	j->meta = json_pack("{s:o, s:s}", "name", cjc_json_bytes(j->name), "source", JIT_SOURCE_FILE);
	if (req->extra_signature)
		json_object_set_new(j->meta, "extra_signature", cjc_json_bytes(req->extra_signature));
	if (req->hook)
		json_object_set_new(j->meta, "hook", cjc_json_bytes(req->hook_id));
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
	struct cjc_jit_bytes kept = { CJC_BUF_INIT, false };
	int rc = j->req->hook(j->req->hook_ctx, data->data, data->len, &kept);
	if (rc)
		jit_fail(j->h, "%s: the post-compile hook %s failed (it returned %d); nothing was kept",
			 j->name, j->req->hook_id, rc);
	else if (kept.set) {
		cjc_buf_release(data);
		*data = kept.buf;
		kept.buf = (struct cjc_buf)CJC_BUF_INIT;
	}
	cjc_buf_release(&kept.buf);
	return rc ? -1 : 0;
}

int cjc_jit_compile(cjc_jit *h, const struct cjc_jit_request *req, struct cjc_jit_result *out)
{
	static const char *const exts[] = { [CJC_JIT_CUBIN] = "cubin", [CJC_JIT_FATBIN] = "fatbin",
					    [CJC_JIT_PTX] = "ptx" };
	if (out)
		memset(out, 0, sizeof *out);
	if (!h)
		return -1;
	jit_clear_error(h);
	if (!out)
		return jit_fail(h, "no result to fill");
	if (!req)
		return jit_fail(h, "no request");
	struct jit_job j = { .h = h, .req = req, .out = out,
			     .name = req->name ? req->name : "kernel.cu" };
	char arch[32];
	if (!req->code)
		return jit_fail(h, "the request has no code");
	if (req->noptions && !req->options)
		return jit_fail(h, "the request has noptions = %zu but options = NULL: give the "
			       "options, or noptions = 0", req->noptions);
	if (!cjc_jit_name_ok(j.name))
		return jit_fail(h, "name %s: expected a file name ending in .cu, of letters, digits "
			       "and ._-+", j.name);
	if ((unsigned)req->format > CJC_JIT_PTX)
		return jit_fail(h, "format %d: expected CJC_JIT_CUBIN, CJC_JIT_FATBIN or CJC_JIT_PTX",
				(int)req->format);
	if (req->hook && (!req->hook_id || !*req->hook_id))
		return jit_fail(h, "the request has a hook but no hook_id: give the hook's identity "
			       "(its name and version), which is part of the key");
	if (!req->hook && req->hook_id)
		return jit_fail(h, "the request has a hook_id (%s) but no hook", req->hook_id);
	if (!req->arch && jit_driver_arch(h, arch, sizeof arch))
		return -1;
	j.arch = req->arch ? req->arch : arch;
	j.ext = exts[req->format];
	name_source(&j);
	int rc = h->set.compiler == JIT_NVRTC ? jit_nvrtc_compile(&j) : jit_nvcc_compile(&j);
	free(j.source);
	json_decref(j.meta);
	return rc;
}

int cjc_jit_device_arch(cjc_jit *h, char *arch, size_t len)
{
	jit_clear_error(h);
	return jit_driver_arch(h, arch, len);
}

int cjc_jit_bytes_set(cjc_jit_bytes *out, const void *data, size_t size)
{
	if (!out || (!data && size) || size > JIT_OUTPUT_MAX)
		return -1; /* as bounded as the compiler's own output */
	cjc_buf_reset(&out->buf);
	cjc_buf_add(&out->buf, data, size);
	out->set = true;
	return 0;
}

int cjc_jit_drop(cjc_jit *h, const char *key)
{
	if (!h)
		return -1;
	jit_clear_error(h);
	if (!key || strlen(key) != CJC_HEX_LEN || strspn(key, "0123456789abcdef") != CJC_HEX_LEN)
		return jit_fail(h, "drop: %s is not an entry's key (64 hex digits)", key ? key : "NULL");
	jit_memory_forget(h, key);
	if (!jit_store_ready(h))
		return 0;
	if (h->cfg.readonly)
		return jit_fail(h, "drop %s: readonly is set", key);
	if (cjc_evict_remove(&h->store, key, NULL) && errno != ENOENT)
		return jit_fail(h, "drop %s: %s", key, strerror(errno));
	jit_note(h, "dropped %s at the caller's request", key);
	return 0;
}
