/*
 * NVRTC's calls, as the shim answers them (shim.h, "shim.c").
 *
 * The shim defines the calls that create, compile, query and destroy a
 * program; every other NVRTC call is NVRTC's own (the shim needs NVRTC's
 * library, so the loader finds them there).  A program stays NVRTC's: the
 * shim creates each one with NVRTC and keeps, beside it, what it was made
 * of (source, headers, name expressions).  A compile goes through the cache
 * (src/jit/program.h); when it was served from the cache, the queries
 * (code, log, lowered names) are answered from the entry, and otherwise by
 * NVRTC.
 * Programs the shim does not know (none should exist) go to NVRTC.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/oom.h"
#include "shim.h"
#include "watch.h"

/* ---- NVRTC itself: the library after the shim ---- */

static struct {
	nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
			      const char *const *);
	nvrtcResult (*destroy)(nvrtcProgram *);
	nvrtcResult (*add_name)(nvrtcProgram, const char *);
	struct jit_nvrtc n;
} real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void *next(void *ctx, const char *name)
{
	(void)ctx;
	return dlsym(RTLD_NEXT, name);
}

static int whole;

/* Whether the audit module answers the handshake (watch.h): the shim's own
 * cjc_nvrtc_audit_hello (hello.c) answers 0, and the module binds this
 * call to its own, which binds NVRTC's file calls to the recorder. */
static bool watch_available(void)
{
	return cjc_nvrtc_audit_hello(cjc_watch_functions()) == CJC_WATCH_VERSION;
}

static void find_real(void)
{
	*(void **)&real.create = next(NULL, "nvrtcCreateProgram");
	*(void **)&real.destroy = next(NULL, "nvrtcDestroyProgram");
	*(void **)&real.add_name = next(NULL, "nvrtcAddNameExpression");
	*(void **)&real.n.version = next(NULL, "nvrtcVersion");
	*(void **)&real.n.compile = next(NULL, "nvrtcCompileProgram");
	whole = !cjc_nvrtc_queries_find(next, NULL, &real.n.q) && real.create && real.destroy &&
		real.add_name && real.n.version && real.n.compile;
	real.n.watched = watch_available();
}

/* NVRTC's functions, or NULL when the shim is not in front of an NVRTC. */
static const struct jit_nvrtc *nvrtc(void)
{
	pthread_once(&real_once, find_real);
	return whole ? &real.n : NULL;
}

/* ---- the programs the shim knows ---- */

#define BUCKETS 256
static struct known {
	struct known *next;
	struct jit_program p;
} *known[BUCKETS];
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned bucket(nvrtcProgram prog)
{
	uintptr_t v = (uintptr_t)prog;
	return (unsigned)((v >> 4) ^ (v >> 12)) % BUCKETS;
}

/* The program the shim knows as prog, or NULL.  A program is used by one
 * thread at a time (NVRTC's rule), so it is not locked once found. */
static struct jit_program *find(nvrtcProgram prog)
{
	cjc_oom_lock(&known_lock);
	struct known *k = known[bucket(prog)];
	for (; k && k->p.real != prog; k = k->next)
		;
	cjc_oom_unlock(&known_lock);
	return k ? &k->p : NULL;
}

static void add(struct known *k)
{
	unsigned b = bucket(k->p.real);
	cjc_oom_lock(&known_lock);
	k->next = known[b];
	known[b] = k;
	cjc_oom_unlock(&known_lock);
}

static void forget(nvrtcProgram prog)
{
	struct known *gone = NULL;
	cjc_oom_lock(&known_lock);
	for (struct known **k = &known[bucket(prog)]; *k; k = &(*k)->next)
		if ((*k)->p.real == prog) {
			gone = *k;
			*k = gone->next;
			break;
		}
	cjc_oom_unlock(&known_lock);
	if (!gone)
		return;
	free(gone->p.name);
	free(gone->p.source);
	cjc_strvec_clear(&gone->p.header_names);
	cjc_strvec_clear(&gone->p.headers);
	cjc_strvec_clear(&gone->p.expressions);
	cjc_nvrtc_outputs_release(&gone->p.out);
	free(gone);
}

/* A child forked while another thread held the lock gets it free. */
static void lock_before_fork(void) { pthread_mutex_lock(&known_lock); }
static void unlock_after_fork(void) { pthread_mutex_unlock(&known_lock); }
__attribute__((constructor)) static void shim_init(void)
{
	pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork);
}

/* ---- NVRTC's calls ----
 *
 * The shim's own work in them runs under a guard (base/oom.h): out of
 * memory, it is abandoned and NVRTC's answer stands, or the compile
 * answers NVRTC_ERROR_OUT_OF_MEMORY. */

struct create_call {
	nvrtcProgram prog;
	const char *src, *name;
	int numHeaders;
	const char *const *headers, *const *includeNames;
};

/* The program is known (add) only once whole. */
static int create_call(void *ctx)
{
	const struct create_call *c = ctx;
	struct known *k = cjc_xcalloc(1, sizeof *k);
	k->p.real = c->prog;
	k->p.name = cjc_xstrdup(c->name ? c->name : "default_program");
	k->p.source = cjc_xstrdup(c->src);
	for (int i = 0; i < c->numHeaders && c->headers && c->includeNames; i++) {
		cjc_strvec_push(&k->p.header_names, c->includeNames[i] ? c->includeNames[i] : "");
		cjc_strvec_push(&k->p.headers, c->headers[i] ? c->headers[i] : "");
	}
	add(k);
	return 0;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
			       int numHeaders, const char *const *headers,
			       const char *const *includeNames)
{
	if (!nvrtc())
		return NVRTC_ERROR_INTERNAL_ERROR;
	nvrtcResult rc = real.create(prog, src, name, numHeaders, headers, includeNames);
	if (rc != NVRTC_SUCCESS || !src)
		return rc;
	struct create_call c = { *prog, src, name, numHeaders, headers, includeNames };
	(void)cjc_oom_run(create_call, &c); /* out of memory: not known, compiled uncached */
	return rc;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog)
{
	if (!nvrtc())
		return NVRTC_ERROR_INTERNAL_ERROR;
	if (prog)
		forget(*prog);
	return real.destroy(prog);
}

nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char *name)
{
	if (!nvrtc())
		return NVRTC_ERROR_INTERNAL_ERROR;
	nvrtcResult rc = real.add_name(prog, name);
	struct jit_program *p = find(prog);
	/* a name it could not note: the program is compiled uncached */
	if (rc == NVRTC_SUCCESS && p && name && !cjc_strvec_try_push(&p->expressions, name))
		p->unnoted = true;
	return rc;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options)
{
	const struct jit_nvrtc *n = nvrtc();
	if (!n)
		return NVRTC_ERROR_INTERNAL_ERROR;
	struct jit_program *p = find(prog);
	return p && !p->unnoted ? jit_program_compile(n, p, numOptions, options)
				: jit_program_compile_uncached(n, prog, numOptions, options);
}

/* The program when a compile of it was served from the cache; else NULL
 * (NVRTC answers). */
static const struct jit_program *served(nvrtcProgram prog)
{
	const struct jit_program *p = nvrtc() ? find(prog) : NULL;
	return p && p->served ? p : NULL;
}

static nvrtcResult code_size(enum cjc_nvrtc_kind k, nvrtcProgram prog, size_t *size)
{
	const struct jit_program *p = served(prog);
	if (!p)
		return real.n.q.code_size[k] ? real.n.q.code_size[k](prog, size) : NVRTC_ERROR_INVALID_INPUT;
	if (p->out.result[k] != NVRTC_SUCCESS)
		return p->out.result[k];
	if (!size)
		return NVRTC_ERROR_INVALID_INPUT;
	*size = p->out.code[k].len;
	return NVRTC_SUCCESS;
}

static nvrtcResult code(enum cjc_nvrtc_kind k, nvrtcProgram prog, char *out)
{
	const struct jit_program *p = served(prog);
	if (!p)
		return real.n.q.code[k] ? real.n.q.code[k](prog, out) : NVRTC_ERROR_INVALID_INPUT;
	if (p->out.result[k] != NVRTC_SUCCESS)
		return p->out.result[k];
	if (!out)
		return NVRTC_ERROR_INVALID_INPUT;
	memcpy(out, p->out.code[k].data, p->out.code[k].len);
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *s) { return code_size(CJC_NVRTC_PTX, p, s); }
nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *o) { return code(CJC_NVRTC_PTX, p, o); }
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t *s) { return code_size(CJC_NVRTC_CUBIN, p, s); }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char *o) { return code(CJC_NVRTC_CUBIN, p, o); }
nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram p, size_t *s) { return code_size(CJC_NVRTC_LTOIR, p, s); }
nvrtcResult nvrtcGetLTOIR(nvrtcProgram p, char *o) { return code(CJC_NVRTC_LTOIR, p, o); }
nvrtcResult nvrtcGetOptiXIRSize(nvrtcProgram p, size_t *s) { return code_size(CJC_NVRTC_OPTIXIR, p, s); }
nvrtcResult nvrtcGetOptiXIR(nvrtcProgram p, char *o) { return code(CJC_NVRTC_OPTIXIR, p, o); }

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *size)
{
	const struct jit_program *p = served(prog);
	if (!p)
		return nvrtc() ? real.n.q.log_size(prog, size) : NVRTC_ERROR_INTERNAL_ERROR;
	if (!size)
		return NVRTC_ERROR_INVALID_INPUT;
	*size = p->out.log.len + 1;
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log)
{
	const struct jit_program *p = served(prog);
	if (!p)
		return nvrtc() ? real.n.q.log(prog, log) : NVRTC_ERROR_INTERNAL_ERROR;
	if (!log)
		return NVRTC_ERROR_INVALID_INPUT;
	memcpy(log, p->out.log.data ? p->out.log.data : "", p->out.log.len);
	log[p->out.log.len] = '\0';
	return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char *expression, const char **lowered)
{
	const struct jit_program *p = served(prog);
	if (!p)
		return nvrtc() ? real.n.q.lowered(prog, expression, lowered) : NVRTC_ERROR_INTERNAL_ERROR;
	if (!expression || !lowered)
		return NVRTC_ERROR_INVALID_INPUT;
	for (size_t i = 0; i < p->expressions.n; i++)
		if (!strcmp(p->expressions.v[i], expression)) {
			if (p->out.lowered_result[i] == NVRTC_SUCCESS)
				*lowered = p->out.lowered.v[i];
			return p->out.lowered_result[i];
		}
	return NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
}
