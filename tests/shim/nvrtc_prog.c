/*
 * A program that compiles with NVRTC and knows nothing of the cache: the
 * shim suite (tests/shim_test.sh) runs it as is, with and without `cjc
 * run`, and compares what NVRTC gave it.
 *
 *   nvrtc_prog HOW OUT [--threads N] [--fork] [-I DIR] [--header TEXT] [--option OPT] CASE...
 *
 * HOW is how it reaches NVRTC: "linked" (built with -lnvrtc: nvrtc_prog_linked),
 * "soname:NAME" (dlopen by soname, symbols by dlsym), "path:FILE" (dlopen by
 * path).  Each CASE compiles one program and writes OUT/<case>.txt (the
 * compile's result, each kind's size result, the log, each name
 * expression's lowered name) and OUT/<case>.<kind> (the code).  With
 * --threads N, N threads each compile variant i % 4 of the case into
 * OUT/<case>-<i>.*.  --header replaces the text of the header the case
 * "header" gives as a string; --option adds an option to NVRTC's.  With
 * --fork, after each case a child process compiles it again into
 * OUT/<case>-child.*.  Exit status: 0, or 1 when NVRTC could not be reached.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult;
typedef void *nvrtcProgram;

struct api {
	nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
			      const char *const *);
	nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*destroy)(nvrtcProgram *);
	nvrtcResult (*add_name)(nvrtcProgram, const char *);
	nvrtcResult (*lowered)(nvrtcProgram, const char *, const char **);
	nvrtcResult (*log_size)(nvrtcProgram, size_t *);
	nvrtcResult (*log)(nvrtcProgram, char *);
	nvrtcResult (*size[2])(nvrtcProgram, size_t *);
	nvrtcResult (*code[2])(nvrtcProgram, char *);
};
static const char *const kinds[2] = { "ptx", "cubin" };

#ifdef LINKED
nvrtcResult nvrtcCreateProgram(nvrtcProgram *, const char *, const char *, int,
			       const char *const *, const char *const *);
nvrtcResult nvrtcCompileProgram(nvrtcProgram, int, const char *const *);
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *);
nvrtcResult nvrtcAddNameExpression(nvrtcProgram, const char *);
nvrtcResult nvrtcGetLoweredName(nvrtcProgram, const char *, const char **);
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram, size_t *);
nvrtcResult nvrtcGetProgramLog(nvrtcProgram, char *);
nvrtcResult nvrtcGetPTXSize(nvrtcProgram, size_t *);
nvrtcResult nvrtcGetPTX(nvrtcProgram, char *);
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram, size_t *);
nvrtcResult nvrtcGetCUBIN(nvrtcProgram, char *);

static int load(const char *how, struct api *a)
{
	(void)how;
	*a = (struct api){ nvrtcCreateProgram, nvrtcCompileProgram, nvrtcDestroyProgram,
			   nvrtcAddNameExpression, nvrtcGetLoweredName, nvrtcGetProgramLogSize,
			   nvrtcGetProgramLog, { nvrtcGetPTXSize, nvrtcGetCUBINSize },
			   { nvrtcGetPTX, nvrtcGetCUBIN } };
	return 0;
}
#else
static int load(const char *how, struct api *a)
{
	const char *colon = strchr(how, ':');
	void *lib = colon ? dlopen(colon + 1, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!lib) {
		fprintf(stderr, "nvrtc_prog: cannot load NVRTC (%s): %s\n", how, dlerror());
		return -1;
	}
	*(void **)&a->create = dlsym(lib, "nvrtcCreateProgram");
	*(void **)&a->compile = dlsym(lib, "nvrtcCompileProgram");
	*(void **)&a->destroy = dlsym(lib, "nvrtcDestroyProgram");
	*(void **)&a->add_name = dlsym(lib, "nvrtcAddNameExpression");
	*(void **)&a->lowered = dlsym(lib, "nvrtcGetLoweredName");
	*(void **)&a->log_size = dlsym(lib, "nvrtcGetProgramLogSize");
	*(void **)&a->log = dlsym(lib, "nvrtcGetProgramLog");
	*(void **)&a->size[0] = dlsym(lib, "nvrtcGetPTXSize");
	*(void **)&a->code[0] = dlsym(lib, "nvrtcGetPTX");
	*(void **)&a->size[1] = dlsym(lib, "nvrtcGetCUBINSize");
	*(void **)&a->code[1] = dlsym(lib, "nvrtcGetCUBIN");
	return a->create && a->compile && a->destroy && a->add_name && a->lowered && a->log_size &&
			       a->log && a->size[0] && a->code[0] && a->size[1] && a->code[1]
		       ? 0 : -1;
}
#endif

struct kase {
	const char *name, *source;
	const char *header_name, *header;
	const char *exprs[2];
	const char *options[3];
};

static const struct kase cases[] = {
	{ "saxpy", /* a warning in the log */
	  "extern \"C\" __global__ void saxpy(float a, float *x, float *y, int n)\n"
	  "{\n  int unused;\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	  "  if (i < n) y[i] = a * x[i] + y[i] + VARIANT;\n}\n",
	  NULL, NULL, { NULL }, { "-arch=sm_80", NULL } },
	{ "template",
	  "template <typename T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }\n",
	  NULL, NULL, { "scale<float>", "scale<double>" }, { "-arch=sm_80", "-std=c++17", NULL } },
	{ "header",
	  "#include \"consts.h\"\nextern \"C\" __global__ void fill(float *x) { x[threadIdx.x] = SCALE; }\n",
	  "consts.h", "#define SCALE 2.5f\n", { NULL }, { "-arch=sm_80", NULL } },
	{ "disk", /* -I DIR given on the command line */
	  "#include \"disk.h\"\nextern \"C\" __global__ void k(int *x) { x[0] = DISK_VALUE; }\n",
	  NULL, NULL, { NULL }, { "-arch=sm_80", NULL } },
	{ "ptx", /* a virtual arch: no cubin */
	  "extern \"C\" __global__ void twice(int *x) { x[threadIdx.x] *= 2; }\n",
	  NULL, NULL, { NULL }, { "-arch=compute_80", NULL } },
	{ "fail", "__global__ void broken( { }\n", NULL, NULL, { NULL }, { "-arch=sm_80", NULL } },
};

static struct api api;
static const char *out_dir, *include_dirs[4], *header_text, *extra_option;
static int ninclude_dirs;

static void write_file(const char *name, const char *suffix, const void *data, size_t size)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.%s", out_dir, name, suffix);
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(data, 1, size, f);
		fclose(f);
	}
}

static void run_case(const struct kase *c, const char *label, int variant)
{
	nvrtcProgram prog;
	const char *names[1] = { c->header_name };
	const char *texts[1] = { c->header && header_text ? header_text : c->header };
	char source[4096], inc[4][4200];
	snprintf(source, sizeof source, "#define VARIANT %d\n%s", variant, c->source);
	FILE *txt = NULL;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.txt", out_dir, label);
	txt = fopen(path, "w");
	if (!txt)
		return;
	nvrtcResult rc = api.create(&prog, source, c->name, c->header ? 1 : 0, texts, names);
	fprintf(txt, "create %d\n", rc);
	for (int i = 0; i < 2 && c->exprs[i]; i++)
		fprintf(txt, "add %s %d\n", c->exprs[i], api.add_name(prog, c->exprs[i]));
	const char *options[8];
	int n = 0;
	for (; c->options[n]; n++)
		options[n] = c->options[n];
	for (int i = 0; i < ninclude_dirs; i++) {
		snprintf(inc[i], sizeof inc[i], "-I%s", include_dirs[i]);
		options[n++] = inc[i];
	}
	if (extra_option)
		options[n++] = extra_option;
	fprintf(txt, "compile %d\n", api.compile(prog, n, options));
	size_t size = 0;
	fprintf(txt, "log size %d\n", api.log_size(prog, &size));
	char *log = calloc(1, size + 1);
	fprintf(txt, "log %d [%s]\n", api.log(prog, log), log);
	free(log);
	for (int k = 0; k < 2; k++) {
		size = 0;
		nvrtcResult r = api.size[k](prog, &size);
		fprintf(txt, "%s size %d %zu\n", kinds[k], r, size);
		if (r || !size)
			continue;
		char *code = malloc(size);
		fprintf(txt, "%s %d\n", kinds[k], api.code[k](prog, code));
		write_file(label, kinds[k], code, size);
		free(code);
	}
	for (int i = 0; i < 2 && c->exprs[i]; i++) {
		const char *lowered = NULL;
		nvrtcResult r = api.lowered(prog, c->exprs[i], &lowered);
		fprintf(txt, "lowered %s %d %s\n", c->exprs[i], r, r ? "-" : lowered);
	}
	fprintf(txt, "destroy %d\n", api.destroy(&prog));
	fclose(txt);
}

struct thread_arg {
	const struct kase *c;
	int i;
};

static void *thread_main(void *p)
{
	struct thread_arg *t = p;
	char label[256];
	snprintf(label, sizeof label, "%s-%d", t->c->name, t->i);
	run_case(t->c, label, t->i % 4);
	return NULL;
}

static const struct kase *find_case(const char *name);

/* The case again, in a child process (after the parent compiled it). */
static void fork_case(const char *name)
{
	char label[256];
	snprintf(label, sizeof label, "%s-child", name);
	pid_t pid = fork();
	if (pid == 0) {
		run_case(find_case(name), label, 0);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static const struct kase *find_case(const char *name)
{
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		if (!strcmp(cases[i].name, name))
			return &cases[i];
	fprintf(stderr, "nvrtc_prog: no case %s\n", name);
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: nvrtc_prog HOW OUT [--threads N] [-I DIR] [--fork] [--header TEXT] [--option OPT] CASE...\n");
		return 2;
	}
	if (load(argv[1], &api))
		return 1;
	out_dir = argv[2];
	int threads = 0, forks = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			threads = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--fork")) {
			forks = 1;
		} else if (!strcmp(argv[i], "--option") && i + 1 < argc) {
			extra_option = argv[++i];
		} else if (!strcmp(argv[i], "--header") && i + 1 < argc) {
			header_text = argv[++i];
		} else if (!strcmp(argv[i], "-I") && i + 1 < argc && ninclude_dirs < 4) {
			include_dirs[ninclude_dirs++] = argv[++i];
		} else if (!threads) {
			run_case(find_case(argv[i]), argv[i], 0);
			if (forks)
				fork_case(argv[i]);
		} else {
			pthread_t t[64];
			struct thread_arg args[64];
			int n = threads < 64 ? threads : 64;
			for (int k = 0; k < n; k++) {
				args[k] = (struct thread_arg){ find_case(argv[i]), k };
				pthread_create(&t[k], NULL, thread_main, &args[k]);
			}
			for (int k = 0; k < n; k++)
				pthread_join(t[k], NULL);
		}
	}
	return 0;
}
