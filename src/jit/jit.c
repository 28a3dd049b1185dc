/*
 * The public calls of <cudajitcache/jit.h>: handles, errors, results, and
 * what every compile does before its compiler's own path (nvcc.c, nvrtc.c):
 * check the request, find the arch, and name the source.
 *
 * The key binds the source's path (docs/key.md), so the path it is keyed by
 * is the same in every process and every copy of the store:
 * JIT_KEYED_SOURCE_DIR/<name>, where no file can be.  A hit needs no file:
 * the record's source is compared with the bytes in hand.  A miss writes
 * the code into a private directory of its own (job.c).
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
static cjc_jit *open_handle(const char *prefix, char *err, size_t errlen)
{
	struct cjc_buf why = CJC_BUF_INIT;
	cjc_jit *h = cjc_xcalloc(1, sizeof *h);
	jit_process_once();
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
	pthread_mutex_init(&h->lock, NULL);
	h->forks = jit_fork_generation();
	/* What a settings file that is not trusted could not set (config.h):
	 * never a failure of the open, said where the JIT says things. */
	if (h->cfg.notes)
		jit_note(h, "%.*s", (int)strlen(h->cfg.notes) - 1, h->cfg.notes);
	warn_unknown(h, prefix);
	/* last: an open abandoned for want of memory (base/oom.h) leaks no key */
	if (pthread_key_create(&h->error_key, free)) {
		fill_err(err, errlen, "no thread-specific key left for the handle's errors");
		pthread_mutex_destroy(&h->lock);
		jit_settings_release(&h->set);
		cjc_config_release(&h->cfg);
		free(h->prefix);
		free(h);
		return NULL;
	}
	return h;
}

/*
 * Every public call that allocates runs under a guard (base/oom.h): out of
 * memory, its work is abandoned and it answers -1 (NULL), with "out of
 * memory" as the error, instead of ending the caller's program.
 */
struct open_call {
	const char *prefix;
	char *err;
	size_t errlen;
	cjc_jit *h;
};

static int open_call(void *ctx)
{
	struct open_call *c = ctx;
	c->h = open_handle(c->prefix, c->err, c->errlen);
	return 0;
}

cjc_jit *cjc_jit_open(const char *prefix, char *err, size_t errlen)
{
	struct open_call c = { prefix, err, errlen, NULL };
	if (cjc_oom_run(open_call, &c) == CJC_OOM_RAN_OUT) {
		fill_err(err, errlen, "out of memory");
		return NULL;
	}
	return c.h;
}

/* What close writes: the memory's hit counts, the remembered hashes. */
static int flush_call(void *h)
{
	jit_memory_release_all(h); /* both take the lock: before it is destroyed */
	jit_deps_save(h);
	return 0;
}

void cjc_jit_close(cjc_jit *h)
{
	if (!h)
		return;
	(void)cjc_oom_run(flush_call, h); /* out of memory: counts lost, hashes found again */
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

static int compile(cjc_jit *h, const struct cjc_jit_request *req, struct cjc_jit_result *out)
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
	if (!cjc_request_name_ok(j.name))
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

struct compile_call {
	cjc_jit *h;
	const struct cjc_jit_request *req;
	struct cjc_jit_result *out;
};

static int compile_call(void *ctx)
{
	struct compile_call *c = ctx;
	return compile(c->h, c->req, c->out);
}

int cjc_jit_compile(cjc_jit *h, const struct cjc_jit_request *req, struct cjc_jit_result *out)
{
	struct compile_call c = { h, req, out };
	int rc = cjc_oom_run(compile_call, &c);
	if (rc != CJC_OOM_RAN_OUT)
		return rc;
	if (out)
		memset(out, 0, sizeof *out); /* what it held is lost */
	return jit_out_of_memory(h);
}

struct arch_call {
	cjc_jit *h;
	char *arch;
	size_t len;
};

static int arch_call(void *ctx)
{
	struct arch_call *c = ctx;
	jit_clear_error(c->h);
	return jit_driver_arch(c->h, c->arch, c->len);
}

int cjc_jit_device_arch(cjc_jit *h, char *arch, size_t len)
{
	struct arch_call c = { h, arch, len };
	int rc = cjc_oom_run(arch_call, &c);
	return rc == CJC_OOM_RAN_OUT ? jit_out_of_memory(h) : rc;
}

int cjc_jit_bytes_set(cjc_jit_bytes *out, const void *data, size_t size)
{
	if (!out)
		return -1;
	cjc_buf_reset(&out->buf);
	/* in the caller's hook, which nothing may jump over (base/oom.h);
	 * bounded as the compiler's own output */
	out->set = (data || !size) && size <= JIT_OUTPUT_MAX &&
		   cjc_buf_try_add(&out->buf, data, size);
	out->failed = !out->set;
	return out->set ? 0 : -1;
}

static int drop(cjc_jit *h, const char *key)
{
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

struct drop_call {
	cjc_jit *h;
	const char *key;
};

static int drop_call(void *ctx)
{
	struct drop_call *c = ctx;
	return drop(c->h, c->key);
}

bool cjc_jit_name_ok(const char *name)
{
	return cjc_request_name_ok(name);
}

int cjc_jit_drop(cjc_jit *h, const char *key)
{
	if (!h)
		return -1;
	struct drop_call c = { h, key };
	int rc = cjc_oom_run(drop_call, &c);
	return rc == CJC_OOM_RAN_OUT ? jit_out_of_memory(h) : rc;
}
