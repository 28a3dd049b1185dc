/*
 * An NVRTC compile for `cjc audit` (audit_nvrtc.h): the checked library,
 * its version, and the compile as the JIT library makes it (compile/nvrtc.h).
 */
#include "audit_nvrtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "compile/nvrtc.h"

int cjc_audit_nvrtc_compile(const struct cjc_audit_nvrtc *in, struct cjc_buf *output,
			    struct cjc_buf *log, struct cjc_buf *why)
{
	struct cjc_nvrtc n;
	const char *missing;
	int major = 0, minor = 0;
	char version[64];
	void *lib = dlopen(in->library, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		cjc_buf_addf(why, "NVRTC %s cannot be loaded: %s", in->library, dlerror());
		return -1;
	}
	if (cjc_nvrtc_resolve(lib, &n, &missing)) {
		cjc_buf_addf(why, "NVRTC %s lacks %s", in->library, missing);
		return -1;
	}
	n.nvrtcVersion(&major, &minor);
	snprintf(version, sizeof version, "NVRTC %d.%d", major, minor);
	if (strcmp(version, in->version)) {
		cjc_buf_addf(why, "NVRTC %s is now %s, not %s as recorded", in->library, version,
			     in->version);
		return -1;
	}
	return cjc_nvrtc_compile(&n, in->name, in->code, in->options, in->noptions, in->ptx, output,
				 log, why);
}
