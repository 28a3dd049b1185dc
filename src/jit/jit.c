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
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "jit_internal.h"
#include "keys/metadata.h"
#include "store/evict.h"
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
 * fs.h's temporary-file registry installs handlers for SIGINT, SIGTERM,
 * SIGHUP, SIGPIPE and SIGQUIT the first time it is used, which suits the
 * cjc program but not a library inside someone else's process (Python's
 * KeyboardInterrupt, say).  So the library makes that first use itself,
 * once, and puts the program's own handlers back: staging a killed program
 * leaves is reclaimed by `cjc gc`, as for any killed writer.  It also
 * counts forks, for jit_lock().
 */
static void once_per_process(void)
{
	pthread_atfork(NULL, NULL, count_fork);
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT };
	struct sigaction old[sizeof sigs / sizeof *sigs];
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		sigaction(sigs[i], NULL, &old[i]);
	cjc_tempfile_add("");
	cjc_tempfile_forget("");
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		sigaction(sigs[i], &old[i], NULL);
}

static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void fill_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

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
	const char *dir = h->set.text[JIT_CACHE_DIR];
	h->have_store = !cjc_store_open(&h->store, dir);
	if (!h->have_store)
		jit_note(h, "cache directory %s is unusable: %s; compiling without the cache", dir,
			 strerror(errno));
	return h;
}

void cjc_jit_close(cjc_jit *h)
{
	if (!h)
		return;
	free(pthread_getspecific(h->error_key));
	pthread_setspecific(h->error_key, NULL);
	pthread_key_delete(h->error_key);
	pthread_mutex_destroy(&h->lock);
	jit_memory_release_all(h);
	jit_deps_release(&h->deps);
	jit_driver_release(h->driver);
	jit_nvrtc_release(h->nvrtc);
	free(h->nvrtc_error);
	if (h->have_store)
		cjc_store_close(&h->store);
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
	if (j->h->have_store && cjc_stats_bump(&j->h->store, (enum cjc_counter)counter, saved_ms))
		jit_note(j->h, "cannot update the counters: %s", strerror(errno));
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

/* Prints an entry's files whose names pass `want` under a heading. */
static void print_kept(struct jit_job *j, const char *key, bool (*want)(const char *),
		       const char *what)
{
	struct cjc_entry e;
	struct cjc_buf why = CJC_BUF_INIT;
	if (!key || cjc_store_read_entry(&j->h->store, key, &e, &why) != CJC_ENTRY_FOUND) {
		fprintf(stderr, "cjc jit: %s of %s: not kept (%s)\n", what, j->name,
			key && why.data ? why.data : "the entry was not published");
		cjc_buf_release(&why);
		return;
	}
	for (size_t i = 0; i < e.nfiles; i++) {
		struct cjc_buf text = CJC_BUF_INIT;
		if (want(e.files[i].name) && !cjc_entry_read(&e, e.files[i].name, &text, &why)) {
			fprintf(stderr, "== %s of %s (%s/%s)\n", what, j->name, e.dir, e.files[i].name);
			(void)!cjc_write_all(2, text.data, text.len);
		}
		cjc_buf_release(&text);
	}
	cjc_entry_release(&e);
	cjc_buf_release(&why);
}

static bool kept_ptx(const char *name)
{
	return cjc_starts_with(name, "kept-") && cjc_ends_with(name, ".ptx");
}

static bool kept_sass(const char *name)
{
	return !strcmp(name, "sass.txt");
}

void jit_print_miss(struct jit_job *j, const struct cjc_buf *err, const char *key)
{
	const struct jit_settings *s = &j->h->set;
	if (s->flag[JIT_PTXAS_VERBOSE] && err->len)
		(void)!cjc_write_all(2, err->data, err->len);
	if (s->flag[JIT_DUMP_PTX])
		print_kept(j, key, kept_ptx, "PTX");
	if (s->flag[JIT_DUMP_SASS])
		print_kept(j, key, kept_sass, "SASS");
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
	if (!out || (!data && size))
		return -1;
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
	if (!h->have_store)
		return 0;
	if (h->cfg.readonly)
		return jit_fail(h, "drop %s: readonly is set", key);
	if (cjc_evict_remove(&h->store, key, NULL) && errno != ENOENT)
		return jit_fail(h, "drop %s: %s", key, strerror(errno));
	jit_note(h, "dropped %s at the caller's request", key);
	return 0;
}
