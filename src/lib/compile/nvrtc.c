/* NVRTC's functions and one compile (nvrtc.h). */
#include "compile/nvrtc.h"

#include <stdlib.h>
#include <string.h>

#include "base/dl.h"
#include "keys/metadata.h"

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

const char *const cjc_nvrtc_kind_name[CJC_NVRTC_KINDS] = { "ptx", "cubin", "ltoir", "optixir" };

int cjc_nvrtc_queries_find(void *(*lookup)(void *ctx, const char *name), void *ctx,
			   struct cjc_nvrtc_queries *q)
{
	static const char *const size_fn[CJC_NVRTC_KINDS] = {
		"nvrtcGetPTXSize", "nvrtcGetCUBINSize", "nvrtcGetLTOIRSize", "nvrtcGetOptiXIRSize"
	};
	static const char *const code_fn[CJC_NVRTC_KINDS] = { "nvrtcGetPTX", "nvrtcGetCUBIN",
							      "nvrtcGetLTOIR", "nvrtcGetOptiXIR" };
	*(void **)&q->log_size = lookup(ctx, "nvrtcGetProgramLogSize");
	*(void **)&q->log = lookup(ctx, "nvrtcGetProgramLog");
	*(void **)&q->lowered = lookup(ctx, "nvrtcGetLoweredName");
	for (int k = 0; k < CJC_NVRTC_KINDS; k++) {
		*(void **)&q->code_size[k] = lookup(ctx, size_fn[k]);
		*(void **)&q->code[k] = lookup(ctx, code_fn[k]);
		if (!q->code[k])
			q->code_size[k] = NULL;
	}
	return q->log_size && q->log && q->lowered ? 0 : -1;
}

void cjc_nvrtc_outputs_take(const struct cjc_nvrtc_queries *q, cjc_nvrtc_program prog,
			    const struct cjc_strvec *expressions, struct cjc_nvrtc_outputs *o)
{
	size_t size = 0;
	if (!q->log_size(prog, &size) && size > 1) {
		cjc_buf_grow(&o->log, size);
		if (!q->log(prog, o->log.data))
			o->log.len = strnlen(o->log.data, size);
	}
	for (int k = 0; k < CJC_NVRTC_KINDS; k++) {
		size = 0;
		o->result[k] = q->code_size[k] ? q->code_size[k](prog, &size) : CJC_NVRTC_INVALID_INPUT;
		if (o->result[k] == CJC_NVRTC_SUCCESS && size) {
			cjc_buf_grow(&o->code[k], size);
			o->result[k] = q->code[k](prog, o->code[k].data);
			o->code[k].len = o->result[k] == CJC_NVRTC_SUCCESS ? size : 0;
		}
	}
	o->lowered_result = cjc_xcalloc(expressions->n + 1, sizeof *o->lowered_result);
	for (size_t i = 0; i < expressions->n; i++) {
		const char *lowered = NULL;
		o->lowered_result[i] = q->lowered(prog, expressions->v[i], &lowered);
		cjc_strvec_push(&o->lowered, o->lowered_result[i] || !lowered ? "" : lowered);
	}
}

json_t *cjc_nvrtc_outputs_json(const struct cjc_nvrtc_outputs *o,
			       const struct cjc_strvec *expressions)
{
	json_t *results = json_object(), *names = json_array();
	for (int k = 0; k < CJC_NVRTC_KINDS; k++)
		json_object_set_new(results, cjc_nvrtc_kind_name[k], json_integer(o->result[k]));
	for (size_t i = 0; i < expressions->n; i++)
		json_array_append_new(names, json_pack("{s:o, s:i, s:o}", "expression",
						       cjc_json_bytes(expressions->v[i]), "result",
						       o->lowered_result[i], "lowered",
						       cjc_json_bytes(o->lowered.v[i])));
	return json_pack("{s:i, s:o, s:o}", "version", 1, "results", results, "names", names);
}

static bool result_of(json_t *v, cjc_nvrtc_result *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > CJC_NVRTC_LAST_RESULT)
		return false;
	*out = (cjc_nvrtc_result)json_integer_value(v);
	return true;
}

int cjc_nvrtc_outputs_parse(const char *text, size_t len, const struct cjc_strvec *expressions,
			    struct cjc_nvrtc_outputs *o)
{
	json_t *doc = json_loadb(text ? text : "", len, 0, NULL);
	json_t *results = json_object_get(doc, "results"), *names = json_object_get(doc, "names");
	bool ok = json_integer_value(json_object_get(doc, "version")) == 1 &&
		  json_is_object(results) && json_is_array(names) &&
		  json_array_size(names) == expressions->n;
	for (int k = 0; ok && k < CJC_NVRTC_KINDS; k++)
		ok = result_of(json_object_get(results, cjc_nvrtc_kind_name[k]), &o->result[k]);
	o->lowered_result = cjc_xcalloc(expressions->n + 1, sizeof *o->lowered_result);
	for (size_t i = 0; ok && i < expressions->n; i++) {
		json_t *e = json_array_get(names, i);
		const char *expr = json_string_value(json_object_get(e, "expression"));
		const char *lowered = json_string_value(json_object_get(e, "lowered"));
		ok = expr && lowered && !strcmp(expr, expressions->v[i]) &&
		     result_of(json_object_get(e, "result"), &o->lowered_result[i]);
		if (ok)
			cjc_strvec_push(&o->lowered, lowered);
	}
	json_decref(doc);
	return ok ? 0 : -1;
}

void cjc_nvrtc_outputs_release(struct cjc_nvrtc_outputs *o)
{
	for (int k = 0; k < CJC_NVRTC_KINDS; k++)
		cjc_buf_release(&o->code[k]);
	cjc_buf_release(&o->log);
	cjc_strvec_clear(&o->lowered);
	free(o->lowered_result);
	memset(o, 0, sizeof *o);
}
