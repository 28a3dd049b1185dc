/* NVRTC's functions and one compile (nvrtc.h). */
#include "compile/nvrtc.h"

#include <string.h>

#include "base/dl.h"

#define SYM(name) CJC_DL_SYMBOL(struct cjc_nvrtc, name, #name)
static const struct cjc_dl_symbol symbols[] = {
	SYM(nvrtcVersion), SYM(nvrtcGetErrorString), SYM(nvrtcCreateProgram),
	SYM(nvrtcCompileProgram), SYM(nvrtcGetProgramLogSize), SYM(nvrtcGetProgramLog),
	SYM(nvrtcGetCUBINSize), SYM(nvrtcGetCUBIN), SYM(nvrtcGetPTXSize), SYM(nvrtcGetPTX),
	SYM(nvrtcDestroyProgram),
};

int cjc_nvrtc_resolve(void *lib, struct cjc_nvrtc *n, const char **missing)
{
	return cjc_dl_resolve(lib, symbols, sizeof symbols / sizeof *symbols, n, missing);
}

/* The compiled program's log, then its cubin or ptx; -1 when it has none. */
static int take_output(const struct cjc_nvrtc *n, cjc_nvrtc_program prog, bool ptx,
		       struct cjc_buf *output, struct cjc_buf *log)
{
	size_t size = 0;
	if (!n->nvrtcGetProgramLogSize(prog, &size) && size > 1) {
		cjc_buf_grow(log, size);
		if (!n->nvrtcGetProgramLog(prog, log->data))
			log->len = strlen(log->data);
	}
	size = 0;
	cjc_nvrtc_result e = ptx ? n->nvrtcGetPTXSize(prog, &size) : n->nvrtcGetCUBINSize(prog, &size);
	if (e || !size)
		return -1;
	cjc_buf_grow(output, size);
	e = ptx ? n->nvrtcGetPTX(prog, output->data) : n->nvrtcGetCUBIN(prog, output->data);
	output->len = ptx ? size - 1 : size;
	output->data[output->len] = '\0';
	return e || !output->len ? -1 : 0;
}

int cjc_nvrtc_compile(const struct cjc_nvrtc *n, const char *name, const char *code,
		      char *const *options, size_t noptions, bool ptx, struct cjc_buf *output,
		      struct cjc_buf *log, struct cjc_buf *why)
{
	cjc_nvrtc_program prog = NULL;
	cjc_nvrtc_result e = n->nvrtcCreateProgram(&prog, code, name, 0, NULL, NULL);
	if (e) {
		cjc_buf_addf(why, "nvrtcCreateProgram: %s", n->nvrtcGetErrorString(e));
		return -1;
	}
	e = n->nvrtcCompileProgram(prog, (int)noptions, (const char *const *)options);
	int rc = take_output(n, prog, ptx, output, log);
	n->nvrtcDestroyProgram(&prog);
	if (e)
		cjc_buf_addf(why, "NVRTC failed: %s", n->nvrtcGetErrorString(e));
	else if (rc)
		cjc_buf_adds(why, "NVRTC made no output");
	return e || rc ? -1 : 0;
}
