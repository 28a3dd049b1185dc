/*
 * An NVRTC compile for `cjc audit` (audit_nvrtc.h): the checked library,
 * its version, and the compile as the JIT library makes it (compile/nvrtc.h).
 */
#include "audit_nvrtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "compile/nvrtc.h"

/* Loads the checked library and its functions, if it is still the
 * recorded version; the library stays loaded (nvrtc.h). */
static void *load(const struct cjc_audit_nvrtc *in, struct cjc_nvrtc *n, struct cjc_buf *why)
{
	const char *missing;
	int major = 0, minor = 0;
	char version[64];
	void *lib = dlopen(in->library, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		cjc_buf_addf(why, "NVRTC %s cannot be loaded: %s", in->library, dlerror());
		return NULL;
	}
	if (cjc_nvrtc_resolve(lib, n, &missing)) {
		cjc_buf_addf(why, "NVRTC %s lacks %s", in->library, missing);
		return NULL;
	}
	n->nvrtcVersion(&major, &minor);
	snprintf(version, sizeof version, "NVRTC %d.%d", major, minor);
	if (strcmp(version, in->version)) {
		cjc_buf_addf(why, "NVRTC %s is now %s, not %s as recorded", in->library, version,
			     in->version);
		return NULL;
	}
	return lib;
}

int cjc_audit_nvrtc_compile(const struct cjc_audit_nvrtc *in, struct cjc_buf *output,
			    struct cjc_buf *log, struct cjc_buf *why)
{
	struct cjc_nvrtc n;
	if (!load(in, &n, why))
		return -1;
	return cjc_nvrtc_compile(&n, in->name, in->code, in->options, in->noptions, in->ptx, output,
				 log, why);
}

static void *symbol(void *lib, const char *name)
{
	return dlsym(lib, name);
}

int cjc_audit_nvrtc_program(const struct cjc_audit_nvrtc *in, const struct cjc_audit_program *p,
			    struct cjc_nvrtc_outputs *out, struct cjc_buf *why)
{
	struct cjc_nvrtc n;
	struct cjc_nvrtc_queries q;
	void *lib = load(in, &n, why);
	cjc_nvrtc_result (*add_name)(cjc_nvrtc_program, const char *) = NULL;
	if (lib)
		*(void **)&add_name = dlsym(lib, "nvrtcAddNameExpression");
	if (lib && (!add_name || cjc_nvrtc_queries_find(symbol, lib, &q)))
		cjc_buf_addf(why, "NVRTC %s lacks the calls that ask a program", in->library);
	if (!lib || why->len)
		return -1;
	cjc_nvrtc_program prog = NULL;
	cjc_nvrtc_result e = n.nvrtcCreateProgram(&prog, in->code, in->name, (int)p->headers.n,
						  (const char *const *)p->headers.v,
						  (const char *const *)p->header_names.v);
	for (size_t i = 0; !e && i < p->expressions.n; i++)
		e = add_name(prog, p->expressions.v[i]);
	if (!e)
		e = n.nvrtcCompileProgram(prog, (int)in->noptions, (const char *const *)in->options);
	if (prog)
		cjc_nvrtc_outputs_take(&q, prog, &p->expressions, out);
	if (prog)
		n.nvrtcDestroyProgram(&prog);
	if (e)
		cjc_buf_addf(why, "NVRTC failed: %s", n.nvrtcGetErrorString(e));
	return e ? -1 : 0;
}
