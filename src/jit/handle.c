/*
 * The handle's own machinery, which every module of the library uses and
 * which uses none of them: its lock (fork-safe), this thread's error, the
 * log, the store opened at first use, the counters, and a publication's
 * and the remote stores' settings.  The modules above it (jit.c's public
 * calls, the compilers' paths, programs, the memory tier, deps, changes,
 * tools, driver, journal) call in;
 * nothing here calls out (tests/layers_test.sh: no circles).
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
#include "base/oom.h"
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
	cjc_oom_lock(&h->lock);
}

void jit_unlock(struct cjc_jit *h)
{
	cjc_oom_unlock(&h->lock);
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

/* The handle whose last call on this thread ran out of memory: its error,
 * which then needs no memory. */
static __thread const struct cjc_jit *ran_out;

void jit_clear_error(struct cjc_jit *h)
{
	char *msg = pthread_getspecific(h->error_key);
	if (msg)
		msg[0] = '\0';
	if (ran_out == h)
		ran_out = NULL;
}

int jit_out_of_memory(struct cjc_jit *h)
{
	if (h)
		jit_clear_error(h);
	ran_out = h;
	return -1;
}

const char *cjc_jit_error(const cjc_jit *jit)
{
	if (jit && ran_out == jit)
		return "out of memory: the call was abandoned";
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

void jit_process_once(void)
{
	pthread_once(&process_once, once_per_process);
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
	if (usable)
		store.compression_level = h->cfg.compression_level; /* settings.md */
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
