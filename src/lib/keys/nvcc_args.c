#include "keys/nvcc_args.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/run.h"
#include "base/util.h"
#include "keys/key.h"
#include "keys/rules.h"
#include "keys/metadata.h"
#include "keys/place.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * What an option does to the key and to the command run on a miss.  An
 * option is KEY when it can change the output and cjc can still produce
 * that output from one compile (every flag, define, architecture and
 * host-compiler option: when in doubt, KEY, which costs at most a needless
 * miss).  It is UNCACHEABLE when the command is not a one-source compile to
 * one output cjc can publish: it links, only preprocesses, queries, runs a
 * program, or writes files cjc would not capture; nvcc then runs as is.
 */
enum action {
	KEY,         /* part of the key, passed to nvcc */
	MODE,        /* selects the output kind */
	UNCACHEABLE, /* we run nvcc unchanged */
	OUTPUT,      /* -o: where the output goes, not in the key */
	ODIR,        /* -odir */
	DEP_MD,      /* -MD */
	DEP_MMD,     /* -MMD */
	DEP_MF,      /* -MF */
	DEP_MT,      /* -MT */
	DEP_MP,      /* -MP */
	OPTFILE,     /* --options-file: read, hashed, parsed */
	CCBIN,       /* host compiler */
	INCLUDE,     /* -I: key, and the include search path */
	ISYSTEM,     /* -isystem: likewise */
	PREINCLUDE,  /* -include: key; the file gcc includes first (includescan.h) */
	HOST_DEBUG,  /* -g: key; the host compiler records the working directory */
	DEVICE_DEBUG,/* -G: key; the device debug information records it */
	LINE_INFO,   /* -lineinfo: key; records each file's directory */
	RDC,         /* -rdc=true|false */
	FORWARD,     /* -forward-unknown-to-host-compiler */
	LANGUAGE,    /* -x: the input's language, whatever its extension */
	HOST_OPTIONS,/* -Xcompiler: key; none may make the host compiler run a program */
};

/* Which field of metadata.json "options" the value feeds ("extra" if none). */
enum field { F_EXTRA, F_ARCH, F_DEFINE, F_INCLUDE, F_STD, F_OPT, F_DEBUG, F_LINEINFO, F_FASTMATH, F_NONE };

#define VALUE 1   /* takes a value */
#define ATTACH 2  /* the value may follow the name directly (-Ifoo) */
#define PATH 4    /* the value is a path: rewritten under base_dir, keyed by where it resolves */

struct nvcc_option {
	const char *name;
	unsigned flags;
	enum action action;
	enum field field;
	int detail; /* MODE: the kind; UNCACHEABLE: the reason */
};

/* Why an UNCACHEABLE option's command is run as is (its `detail`). */
enum reason {
	R_PREPROCESS, R_DEPS_ONLY, R_LINK, R_DEVICE_LINK, R_KEEPS_FILES, R_DRY_RUN, R_QUERY,
	R_EXTRA_FILES, R_RUNS, R_OTHER_KIND, R_HOST_PROGRAM, R_NATIVE, R_NATIVE_UNKNOWN,
	R_INCLUDES_SYNTAX, R_INCLUDES_OPTION, R_STAGE_FILE, R_STAGE_OPTIONS_FILE, R_HOST_INCLUDE,
};

static const char *const reasons[] = {
	[R_PREPROCESS] = "preprocessing only (-E)",
	[R_DEPS_ONLY] = "dependency generation only (-M/-MM)",
	[R_LINK] = "linking or archiving",
	[R_DEVICE_LINK] = "device linking",
	[R_KEEPS_FILES] = "keeps intermediate files (-keep, -save-temps)",
	[R_DRY_RUN] = "dry run",
	[R_QUERY] = "a query (--version, --help, --list-gpu-*)",
	[R_EXTRA_FILES] = "writes extra files (--time, -fdevice-time-trace)",
	[R_RUNS] = "runs the program (--run)",
	[R_OTHER_KIND] = "an output kind cjc does not cache (-cuda, -optix-ir, -dw, -lto)",
	[R_HOST_PROGRAM] = "a host-compiler option names a program, plugin or specs file (-Xcompiler -B, -specs, -fplugin, ...)",
	[R_NATIVE] = "-arch=native, not resolved to this machine's GPUs",
	[R_NATIVE_UNKNOWN] = "-arch=native, and __nvcc_device_query beside nvcc names no GPU",
	[R_INCLUDES_SYNTAX] = "INCLUDES or SYSTEM_INCLUDES holds a $, backquote, backslash or unbalanced quote",
	[R_INCLUDES_OPTION] = "INCLUDES or SYSTEM_INCLUDES holds an option other than -I, -isystem, -include, -D or -U",
	[R_STAGE_FILE] = "a stage's flags variable (PTXAS_FLAGS, CUDAFE_FLAGS, ...) may name a file, whose contents are not keyed",
	[R_STAGE_OPTIONS_FILE] = "a stage's options name an options file (-Xptxas -optf, --ptxas-options=--options-file), whose contents are not keyed",
	[R_HOST_INCLUDE] = "a host-compiler option adds an include directory or file (-Xcompiler -I, -iquote, -isystem, -include, ...), whose shadowing is not followed",
};

/* Host-compiler (and linker) options whose value names a program to run, or
 * something that can name one.  Sorted by prefix. */
static const struct {
	const char *prefix;
	const char *names;
} program_options[] = {
	{ "--gcc-install-dir", "a GCC installation the compiler takes its programs from" },
	{ "--gcc-toolchain", "a GCC installation the compiler takes its programs from" },
	{ "--ld-path", "a linker" },
	{ "--plugin", "a linker plugin" },
	{ "--specs", "a specs file, which can run any program" },
	{ "--sysroot", "where clang looks for a GCC installation and its programs" },
	{ "-B", "a directory the compiler takes its programs from" },
	{ "-Xclang", "front-end options, which can load plugins" },
	{ "-ccc-", "programs for clang's driver" },
	{ "-fcompare-debug", "options for a second compile" },
	{ "-fpass-plugin", "a compiler plugin" },
	{ "-fplugin", "a compiler plugin" },
	{ "-fuse-ld", "a linker" },
	{ "-iplugindir", "a directory of compiler plugins" },
	{ "-load", "a compiler plugin" },
	{ "-plugin", "a linker plugin" },
	{ "-specs", "a specs file, which can run any program" },
	{ "-wrapper", "a program to run the compiler's programs under" },
	{ "@", "a response file, whose options nobody checked" },
};

const char *cjc_host_program_option(const char *word, const char **names)
{
	char *copy = cjc_xstrdup(word), *save = NULL;
	const char *found = NULL;
	for (char *t = strtok_r(copy, ", \t\n", &save); t && !found; t = strtok_r(NULL, ", \t\n", &save))
		for (const char *v = t; v && !found; v = strchr(v, '=') ? strchr(v, '=') + 1 : NULL)
			for (size_t i = 0; i < sizeof program_options / sizeof *program_options; i++)
				if (cjc_starts_with(v, program_options[i].prefix)) {
					found = program_options[i].prefix;
					if (names)
						*names = program_options[i].names;
					break;
				}
	free(copy);
	return found;
}

/* Sorted by name (strcmp order): a unit test checks it. */
static const struct nvcc_option options[] = {
	{ "D", VALUE | ATTACH, KEY, F_DEFINE, 0 },
	{ "E", 0, UNCACHEABLE, F_NONE, R_PREPROCESS },
	{ "G", 0, DEVICE_DEBUG, F_DEBUG, 0 },
	{ "I", VALUE | ATTACH | PATH, INCLUDE, F_INCLUDE, 0 },
	{ "L", VALUE | ATTACH | PATH, KEY, F_EXTRA, 0 },
	{ "M", 0, UNCACHEABLE, F_NONE, R_DEPS_ONLY },
	{ "MD", 0, DEP_MD, F_NONE, 0 },
	{ "MF", VALUE, DEP_MF, F_NONE, 0 },
	{ "MM", 0, UNCACHEABLE, F_NONE, R_DEPS_ONLY },
	{ "MMD", 0, DEP_MMD, F_NONE, 0 },
	{ "MP", 0, DEP_MP, F_NONE, 0 },
	{ "MT", VALUE, DEP_MT, F_NONE, 0 },
	{ "O", VALUE | ATTACH, KEY, F_OPT, 0 },
	{ "Ofast-compile", VALUE, KEY, F_EXTRA, 0 },
	{ "Ofc", VALUE, KEY, F_EXTRA, 0 },
	{ "U", VALUE | ATTACH, KEY, F_EXTRA, 0 },
	{ "V", 0, UNCACHEABLE, F_NONE, R_QUERY },
	{ "Wdefault-stream-launch", 0, KEY, F_EXTRA, 0 },
	{ "Werror", VALUE, KEY, F_EXTRA, 0 },
	{ "Wext-lambda-captures-this", 0, KEY, F_EXTRA, 0 },
	{ "Wmissing-launch-bounds", 0, KEY, F_EXTRA, 0 },
	{ "Wno-deprecated-declarations", 0, KEY, F_EXTRA, 0 },
	{ "Wno-deprecated-gpu-targets", 0, KEY, F_EXTRA, 0 },
	{ "Wreorder", 0, KEY, F_EXTRA, 0 },
	{ "Xarchive", VALUE, KEY, F_EXTRA, 0 },
	{ "Xcompiler", VALUE, HOST_OPTIONS, F_EXTRA, 0 },
	{ "Xcudafe", VALUE, KEY, F_EXTRA, 0 },
	{ "Xfatbin", VALUE, KEY, F_EXTRA, 0 },
	{ "Xlinker", VALUE, KEY, F_EXTRA, 0 },
	{ "Xnvlink", VALUE, KEY, F_EXTRA, 0 },
	{ "Xptxas", VALUE, KEY, F_EXTRA, 0 },
	{ "allow-unsupported-compiler", 0, KEY, F_EXTRA, 0 },
	{ "arch", VALUE, KEY, F_ARCH, 0 },
	{ "archive-options", VALUE, KEY, F_EXTRA, 0 },
	{ "brief-diag", VALUE, KEY, F_EXTRA, 0 },
	{ "brief-diagnostics", VALUE, KEY, F_EXTRA, 0 },
	{ "c", 0, MODE, F_NONE, CJC_KIND_OBJECT },
	{ "ccbin", VALUE, CCBIN, F_EXTRA, 0 },
	{ "code", VALUE, KEY, F_ARCH, 0 },
	{ "compile", 0, MODE, F_NONE, CJC_KIND_OBJECT },
	{ "compiler-bindir", VALUE, CCBIN, F_EXTRA, 0 },
	{ "compiler-options", VALUE, HOST_OPTIONS, F_EXTRA, 0 },
	{ "compress-mode", VALUE, KEY, F_EXTRA, 0 },
	{ "cubin", 0, MODE, F_NONE, CJC_KIND_CUBIN },
	{ "cuda", 0, UNCACHEABLE, F_NONE, R_OTHER_KIND },
	{ "cudadevrt", VALUE, KEY, F_EXTRA, 0 },
	{ "cudafe-options", VALUE, KEY, F_EXTRA, 0 },
	{ "cudart", VALUE, KEY, F_EXTRA, 0 },
	{ "dc", 0, MODE, F_NONE, CJC_KIND_RDC_OBJECT },
	{ "debug", 0, HOST_DEBUG, F_DEBUG, 0 },
	{ "default-stream", VALUE, KEY, F_EXTRA, 0 },
	{ "define-macro", VALUE, KEY, F_DEFINE, 0 },
	{ "dependency-output", VALUE, DEP_MF, F_NONE, 0 },
	{ "dependency-target-name", VALUE, DEP_MT, F_NONE, 0 },
	{ "device-c", 0, MODE, F_NONE, CJC_KIND_RDC_OBJECT },
	{ "device-debug", 0, DEVICE_DEBUG, F_DEBUG, 0 },
	{ "device-link", 0, UNCACHEABLE, F_NONE, R_DEVICE_LINK },
	{ "device-stack-protector", VALUE, KEY, F_EXTRA, 0 },
	{ "device-w", 0, UNCACHEABLE, F_NONE, R_OTHER_KIND },
	{ "diag-error", VALUE, KEY, F_EXTRA, 0 },
	{ "diag-suppress", VALUE, KEY, F_EXTRA, 0 },
	{ "diag-warn", VALUE, KEY, F_EXTRA, 0 },
	{ "disable-warnings", 0, KEY, F_EXTRA, 0 },
	{ "display-error-number", 0, KEY, F_EXTRA, 0 },
	{ "dlink", 0, UNCACHEABLE, F_NONE, R_DEVICE_LINK },
	{ "dlink-time-opt", 0, KEY, F_EXTRA, 0 },
	{ "dlto", 0, KEY, F_EXTRA, 0 },
	{ "dopt", VALUE, KEY, F_EXTRA, 0 },
	{ "dryrun", 0, UNCACHEABLE, F_NONE, R_DRY_RUN },
	{ "dw", 0, UNCACHEABLE, F_NONE, R_OTHER_KIND },
	{ "e", VALUE, KEY, F_EXTRA, 0 },
	{ "entries", VALUE, KEY, F_EXTRA, 0 },
	{ "err-no", 0, KEY, F_EXTRA, 0 },
	{ "ewp", 0, KEY, F_EXTRA, 0 },
	{ "expt-extended-lambda", 0, KEY, F_EXTRA, 0 },
	{ "expt-relaxed-constexpr", 0, KEY, F_EXTRA, 0 },
	{ "extended-lambda", 0, KEY, F_EXTRA, 0 },
	{ "extensible-whole-program", 0, KEY, F_EXTRA, 0 },
	{ "extra-device-vectorization", 0, KEY, F_EXTRA, 0 },
	{ "fatbin", 0, MODE, F_NONE, CJC_KIND_FATBIN },
	{ "fatbin-options", VALUE, KEY, F_EXTRA, 0 },
	{ "fdevice-sanitize", VALUE, KEY, F_EXTRA, 0 },
	{ "fdevice-syntax-only", 0, KEY, F_EXTRA, 0 },
	{ "fdevice-time-trace", VALUE, UNCACHEABLE, F_NONE, R_EXTRA_FILES },
	{ "fmad", VALUE, KEY, F_EXTRA, 0 },
	{ "forward-unknown-opts", 0, FORWARD, F_EXTRA, 0 },
	{ "forward-unknown-to-host-compiler", 0, FORWARD, F_EXTRA, 0 },
	{ "forward-unknown-to-host-linker", 0, KEY, F_EXTRA, 0 },
	{ "ftemplate-backtrace-limit", VALUE, KEY, F_EXTRA, 0 },
	{ "ftemplate-depth", VALUE, KEY, F_EXTRA, 0 },
	{ "ftz", VALUE, KEY, F_EXTRA, 0 },
	{ "g", 0, HOST_DEBUG, F_DEBUG, 0 },
	{ "gencode", VALUE, KEY, F_ARCH, 0 },
	{ "generate-code", VALUE, KEY, F_ARCH, 0 },
	{ "generate-dependencies", 0, UNCACHEABLE, F_NONE, R_DEPS_ONLY },
	{ "generate-dependencies-with-compile", 0, DEP_MD, F_NONE, 0 },
	{ "generate-dependency-targets", 0, DEP_MP, F_NONE, 0 },
	{ "generate-line-info", 0, LINE_INFO, F_LINEINFO, 0 },
	{ "generate-nonsystem-dependencies", 0, UNCACHEABLE, F_NONE, R_DEPS_ONLY },
	{ "generate-nonsystem-dependencies-with-compile", 0, DEP_MMD, F_NONE, 0 },
	{ "gpu-architecture", VALUE, KEY, F_ARCH, 0 },
	{ "gpu-code", VALUE, KEY, F_ARCH, 0 },
	{ "h", 0, UNCACHEABLE, F_NONE, R_QUERY },
	{ "help", 0, UNCACHEABLE, F_NONE, R_QUERY },
	{ "host-linker-script", VALUE, KEY, F_EXTRA, 0 },
	{ "include", VALUE | PATH, PREINCLUDE, F_EXTRA, 0 },
	{ "include-path", VALUE | PATH, INCLUDE, F_INCLUDE, 0 },
	{ "isystem", VALUE | PATH, ISYSTEM, F_EXTRA, 0 },
	{ "jump-table-density", VALUE, KEY, F_EXTRA, 0 },
	{ "keep", 0, UNCACHEABLE, F_NONE, R_KEEPS_FILES },
	{ "keep-device-functions", 0, KEY, F_EXTRA, 0 },
	{ "keep-dir", VALUE, UNCACHEABLE, F_NONE, R_KEEPS_FILES },
	{ "l", VALUE | ATTACH, KEY, F_EXTRA, 0 },
	{ "lib", 0, UNCACHEABLE, F_NONE, R_LINK },
	{ "library", VALUE, KEY, F_EXTRA, 0 },
	{ "library-path", VALUE | PATH, KEY, F_EXTRA, 0 },
	{ "lineinfo", 0, LINE_INFO, F_LINEINFO, 0 },
	{ "link", 0, UNCACHEABLE, F_NONE, R_LINK },
	{ "linker-options", VALUE, KEY, F_EXTRA, 0 },
	{ "list-gpu-arch", 0, UNCACHEABLE, F_NONE, R_QUERY },
	{ "list-gpu-code", 0, UNCACHEABLE, F_NONE, R_QUERY },
	{ "lto", 0, UNCACHEABLE, F_NONE, R_OTHER_KIND },
	{ "m", VALUE | ATTACH, KEY, F_EXTRA, 0 },
	{ "machine", VALUE, KEY, F_EXTRA, 0 },
	{ "maxrregcount", VALUE, KEY, F_EXTRA, 0 },
	{ "minimal", 0, KEY, F_EXTRA, 0 },
	{ "no-compress", 0, KEY, F_EXTRA, 0 },
	{ "no-device-link", 0, KEY, F_EXTRA, 0 },
	{ "no-display-error-number", 0, KEY, F_EXTRA, 0 },
	{ "no-exceptions", 0, KEY, F_EXTRA, 0 },
	{ "no-host-device-initializer-list", 0, KEY, F_EXTRA, 0 },
	{ "no-host-device-move-forward", 0, KEY, F_EXTRA, 0 },
	{ "nodlink", 0, KEY, F_EXTRA, 0 },
	{ "noeh", 0, KEY, F_EXTRA, 0 },
	{ "nvlink-options", VALUE, KEY, F_EXTRA, 0 },
	{ "o", VALUE | ATTACH, OUTPUT, F_NONE, 0 },
	{ "objdir-as-tempdir", 0, KEY, F_EXTRA, 0 },
	{ "objtemp", 0, KEY, F_EXTRA, 0 },
	{ "odir", VALUE, ODIR, F_NONE, 0 },
	{ "optf", VALUE, OPTFILE, F_NONE, 0 },
	{ "optimize", VALUE, KEY, F_OPT, 0 },
	{ "options-file", VALUE, OPTFILE, F_NONE, 0 },
	{ "optix-ir", 0, UNCACHEABLE, F_NONE, R_OTHER_KIND },
	{ "output-directory", VALUE, ODIR, F_NONE, 0 },
	{ "output-file", VALUE, OUTPUT, F_NONE, 0 },
	{ "pre-include", VALUE | PATH, PREINCLUDE, F_EXTRA, 0 },
	{ "prec-div", VALUE, KEY, F_EXTRA, 0 },
	{ "prec-sqrt", VALUE, KEY, F_EXTRA, 0 },
	{ "preprocess", 0, UNCACHEABLE, F_NONE, R_PREPROCESS },
	{ "ptx", 0, MODE, F_NONE, CJC_KIND_PTX },
	{ "ptxas-options", VALUE, KEY, F_EXTRA, 0 },
	{ "qpp-config", VALUE, KEY, F_EXTRA, 0 },
	{ "rdc", VALUE, RDC, F_NONE, 0 },
	{ "relocatable-device-code", VALUE, RDC, F_NONE, 0 },
	{ "res-usage", 0, KEY, F_EXTRA, 0 },
	{ "resource-usage", 0, KEY, F_EXTRA, 0 },
	{ "restrict", 0, KEY, F_EXTRA, 0 },
	{ "run", 0, UNCACHEABLE, F_NONE, R_RUNS },
	{ "run-args", VALUE, UNCACHEABLE, F_NONE, R_RUNS },
	{ "save-temps", 0, UNCACHEABLE, F_NONE, R_KEEPS_FILES },
	{ "source-in-ptx", 0, KEY, F_EXTRA, 0 },
	{ "split-compile", VALUE, KEY, F_EXTRA, 0 },
	{ "split-compile-extended", VALUE, KEY, F_EXTRA, 0 },
	{ "src-in-ptx", 0, KEY, F_EXTRA, 0 },
	{ "static-global-template-stub", VALUE, KEY, F_EXTRA, 0 },
	{ "std", VALUE, KEY, F_STD, 0 },
	{ "system-include", VALUE | PATH, ISYSTEM, F_EXTRA, 0 },
	{ "t", VALUE, KEY, F_EXTRA, 0 },
	{ "threads", VALUE, KEY, F_EXTRA, 0 },
	{ "time", VALUE, UNCACHEABLE, F_NONE, R_EXTRA_FILES },
	{ "undefine-macro", VALUE, KEY, F_EXTRA, 0 },
	{ "use-local-env", 0, KEY, F_EXTRA, 0 },
	{ "use_fast_math", 0, KEY, F_FASTMATH, 0 },
	{ "version", 0, UNCACHEABLE, F_NONE, R_QUERY },
	{ "w", 0, KEY, F_EXTRA, 0 },
	{ "x", VALUE, LANGUAGE, F_EXTRA, 0 },
};

#define NOPTIONS (sizeof options / sizeof *options)

static int cmp_option(const void *key, const void *elem)
{
	return strcmp(key, ((const struct nvcc_option *)elem)->name);
}

const struct nvcc_option *cjc_nvcc_option_find(const char *name)
{
	return bsearch(name, options, NOPTIONS, sizeof *options, cmp_option);
}

size_t cjc_nvcc_option_count(void)
{
	return NOPTIONS;
}

const char *cjc_nvcc_option_name(size_t i)
{
	return options[i].name;
}

bool cjc_nvcc_option_takes_value(const struct nvcc_option *o)
{
	return o->flags & VALUE;
}

const char *cjc_kind_name(enum cjc_kind k)
{
	static const char *const names[] = { "none", "object", "relocatable-object", "cubin", "fatbin", "ptx" };
	return names[k];
}

const char *cjc_kind_ext(enum cjc_kind k)
{
	static const char *const exts[] = { "", "o", "o", "cubin", "fatbin", "ptx" };
	return exts[k];
}

/* Where the words being parsed come from. */
enum origin {
	ARGV,         /* the command line: nvcc gets them (rewritten under base_dir) */
	FILE_KEPT,    /* an options file nvcc reads itself: keyed by its contents */
	FILE_INLINED, /* an options file naming paths under base_dir: nvcc gets its
			 words, rewritten, on the command line instead */
};

/* State of one parse: the compile being filled in and the metadata fields. */
struct parser {
	struct cjc_compile *c;
	bool forward_unknown;
	bool rdc;
	bool host_debug;
	bool device_debug;
	bool line_info;
	bool fast_math;
	bool language_given;
	char *odir;
	struct cjc_strvec inputs;
	struct cjc_strvec relative; /* relative paths, as nvcc gets them */
	json_t *archs, *defines, *include_dirs, *extra;
	json_t *std, *optimize;
	int depth;
	int private_depth; /* inside an options file that others cannot read */
	bool epoch;        /* SOURCE_DATE_EPOCH is set (rules.h) */
	bool in_env;       /* parsing NVCC_PREPEND_FLAGS or NVCC_APPEND_FLAGS */
};

static void uncacheable(struct cjc_compile *c, const char *reason)
{
	if (!c->uncacheable)
		c->uncacheable = cjc_xstrdup(reason);
}

/* Finds the option argv[i] names; sets its value and how many words it used. */
static const struct nvcc_option *lookup(char *const *argv, int argc, int i, const char **value,
					int *used, bool *missing)
{
	const char *a = argv[i];
	const char *name = a + (a[1] == '-' ? 2 : 1);
	const struct nvcc_option *o;
	*value = NULL;
	*used = 1;
	*missing = false;
	const char *eq = strchr(name, '=');
	if (eq) {
		char *n = cjc_xstrndup(name, (size_t)(eq - name));
		o = cjc_nvcc_option_find(n);
		free(n);
		if (o && (o->flags & VALUE)) {
			*value = eq + 1;
			return o;
		}
	}
	o = cjc_nvcc_option_find(name);
	if (o) {
		if (o->flags & VALUE) {
			if (i + 1 >= argc)
				*missing = true;
			else
				*value = argv[i + 1], *used = 2;
		}
		return o;
	}
	if (a[1] != '-' && name[0] && name[1]) {
		char one[2] = { name[0], '\0' };
		o = cjc_nvcc_option_find(one);
		if (o && (o->flags & ATTACH)) {
			*value = name + 1;
			return o;
		}
	}
	return NULL;
}

static void add_archs(json_t *archs, const char *value)
{
	char *copy = cjc_xstrdup(value), *save = NULL;
	for (char *t = strtok_r(copy, ",=[] ", &save); t; t = strtok_r(NULL, ",=[] ", &save)) {
		if (!strcmp(t, "arch") || !strcmp(t, "code"))
			continue;
		json_t *arch = cjc_json_bytes(t), *v;
		bool seen = false;
		size_t i;
		json_array_foreach(archs, i, v)
			seen |= json_equal(v, arch);
		if (seen)
			json_decref(arch);
		else
			json_array_append_new(archs, arch);
	}
	free(copy);
}

/* Whether an architecture value (-arch, -code, -gencode) names "native". */
static bool names_native(const char *value)
{
	char *copy = cjc_xstrdup(value), *save = NULL;
	bool native = false;
	for (char *t = strtok_r(copy, ",=[] ", &save); t && !native; t = strtok_r(NULL, ",=[] ", &save))
		native = !strcmp(t, "native");
	free(copy);
	return native;
}

static void record_field(struct parser *p, const struct nvcc_option *o, char *const *words,
			 int used, const char *value)
{
	switch (o->field) {
	case F_ARCH: add_archs(p->archs, value); break;
	case F_DEFINE: json_array_append_new(p->defines, cjc_json_bytes(value)); break;
	case F_INCLUDE: json_array_append_new(p->include_dirs, cjc_json_bytes(value)); break;
	case F_STD: json_decref(p->std); p->std = cjc_json_bytes(value); break;
	case F_OPT: json_decref(p->optimize); p->optimize = cjc_json_bytes(value); break;
	case F_DEBUG: break;
	case F_LINEINFO: p->line_info = true; break;
	case F_FASTMATH: p->fast_math = true; break;
	case F_NONE: break;
	case F_EXTRA:
		for (int k = 0; k < used; k++)
			json_array_append_new(p->extra, cjc_json_bytes(words[k]));
		break;
	}
}

static void push_unit(struct cjc_compile *c, char *const *words, int used)
{
	char *unit = used == 2 ? cjc_xasprintf("%s %s", words[0], words[1]) : cjc_xstrdup(words[0]);
	cjc_strvec_push(&c->key_units, unit);
	free(unit);
}

/* Splits an options file into words: blanks separate, quotes group. */
static void split_options_file(const char *text, struct cjc_strvec *words)
{
	struct cjc_buf w = CJC_BUF_INIT;
	bool in_word = false;
	char quote = 0;
	for (const char *s = text; *s; s++) {
		if (quote) {
			if (*s == quote)
				quote = 0;
			else if (*s == '\\' && quote == '"' && (s[1] == '"' || s[1] == '\\'))
				cjc_buf_add(&w, ++s, 1);
			else
				cjc_buf_add(&w, s, 1);
		} else if (*s == '"' || *s == '\'') {
			quote = *s;
			in_word = true;
		} else if (isspace((unsigned char)*s)) {
			if (in_word)
				cjc_strvec_pushn(words, w.data ? w.data : "", w.len);
			cjc_buf_reset(&w);
			in_word = false;
		} else {
			cjc_buf_add(&w, s, 1);
			in_word = true;
		}
	}
	if (in_word)
		cjc_strvec_pushn(words, w.data ? w.data : "", w.len);
	cjc_buf_release(&w);
}

static int parse_words(struct parser *p, int argc, char *const *argv, enum origin from);

/* With base_dir, a file naming a path under it is put on the command line,
 * rewritten; any other is keyed by its contents and passed as it is. */
static enum origin options_file_origin(const struct parser *p, enum origin from, const char *text,
				       bool private)
{
	const char *base = p->c->place.base_dir;
	if (from == FILE_KEPT || !base || !p->c->place.cwd || private)
		return FILE_KEPT;
	return strstr(text, *base ? base : "/") ? FILE_INLINED : FILE_KEPT;
}

/* For metadata.json: the file, its hash, and whether others can read it
 * (if not, its words are kept out of metadata and the journal). */
static void record_options_file(struct cjc_compile *c, const char *path, const struct cjc_buf *text,
				bool private)
{
	char hex[CJC_HEX_LEN + 1];
	cjc_hash_buf_hex(text->data, text->len, hex);
	if (!c->options_files)
		c->options_files = json_array();
	json_array_append_new(c->options_files, json_pack("{s:o, s:s, s:b}", "path",
		cjc_json_bytes(path), "sha256", hex, "private", private));
}

static void read_options_file(struct parser *p, char *const *words, int used, const char *path,
			      enum origin from)
{
	struct cjc_compile *c = p->c;
	struct cjc_buf text = CJC_BUF_INIT;
	if (p->depth >= 4) {
		uncacheable(c, "options files nested too deeply");
		return;
	}
	/* bounded, regular files only, never blocking on a FIFO: /dev/zero or a
	 * huge sparse file is nvcc's to read, uncached */
	struct stat st = { 0 };
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		(void)fstat(fd, &st); /* when it fails, so does the read */
	if (cjc_read_regular_and_close(fd, CJC_OPTIONS_FILE_MAX, &text)) {
		char *why = cjc_xasprintf("cannot read options file %s: %s", path,
					  errno == EFBIG ? "larger than 1 MiB"
					  : errno == EINVAL ? "not a regular file" : strerror(errno));
		uncacheable(c, why);
		free(why);
		cjc_buf_release(&text);
		return;
	}
	bool private = !(st.st_mode & S_IROTH);
	record_options_file(c, path, &text, private);
	if (!p->private_depth)
		push_unit(c, words, used);
	enum origin sub = options_file_origin(p, from, text.data, private);
	if (sub == FILE_KEPT) {
		char *content = cjc_xasprintf("options-file-content:%s", text.data);
		cjc_strvec_push(&c->key_args, content);
		free(content);
		if (from != FILE_KEPT)
			cjc_strvec_pushv(&c->nvcc_args, words, (size_t)used);
	}
	struct cjc_strvec file_words = CJC_STRVEC_INIT;
	split_options_file(text.data, &file_words);
	p->depth++;
	p->private_depth += private;
	parse_words(p, (int)file_words.n, file_words.v, sub);
	p->private_depth -= private;
	p->depth--;
	cjc_strvec_clear(&file_words);
	cjc_buf_release(&text);
}

static void set_once(struct cjc_compile *c, char **slot, const char *value, const char *what)
{
	if (*slot) {
		uncacheable(c, what);
		return;
	}
	*slot = cjc_xstrdup(value);
}

/* Options that say where outputs go: cjc supplies its own to nvcc. */
static bool is_output_option(enum action a)
{
	switch (a) {
	case OUTPUT: case ODIR: case DEP_MD: case DEP_MMD: case DEP_MF: case DEP_MT: case DEP_MP:
		return true;
	default:
		return false;
	}
}

/*
 * A path value as nvcc gets it: under base_dir, made relative (place.h);
 * a relative one is remembered, to be keyed by where it resolves.  `words`
 * are the one or two words that hold the value; a rewritten word goes in
 * `own` (free it), and the value returned points into the words used.
 */
static const char *relocate_path(struct parser *p, char **words, int used, const char *value,
				 enum origin from, char **own)
{
	char *rel = from == FILE_KEPT ? NULL : cjc_place_relativize(&p->c->place, value);
	if (rel) {
		int k = used == 2 && value == words[1] ? 1 : 0;
		size_t at = (size_t)(value - words[k]);
		*own = words[k] = cjc_xasprintf("%.*s%s", (int)at, words[k], rel);
		value = words[k] + at;
		p->c->rewritten = true;
		free(rel);
	}
	if (value[0] != '/' && !cjc_strvec_contains(&p->relative, value))
		cjc_strvec_push(&p->relative, value);
	return value;
}

/* The key_args word about to be pushed (of words) that holds value. */
static void note_path_word(struct cjc_compile *c, char *const *words, int used, const char *value)
{
	int k = used == 2 && value == words[1] ? 1 : 0;
	c->path_words = cjc_xrealloc(c->path_words, (c->npath_words + 1) * sizeof *c->path_words);
	c->path_at = cjc_xrealloc(c->path_at, (c->npath_words + 1) * sizeof *c->path_at);
	c->path_words[c->npath_words] = c->key_args.n + (size_t)k;
	c->path_at[c->npath_words++] = (size_t)(value - words[k]);
}

/* The names of a comma-separated list, as nvcc splits -I, -isystem and
 * -include values; empty ones are dropped. */
static void push_list(struct cjc_strvec *v, const char *value)
{
	if (!strchr(value, ',')) {
		cjc_strvec_push(v, value);
		return;
	}
	for (const char *s = value;;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		if (n)
			cjc_strvec_pushn(v, s, n);
		if (!end)
			break;
		s = end + 1;
	}
}

#define FLAG_VARIABLES "NVCC_PREPEND_FLAGS or NVCC_APPEND_FLAGS"

/* Makes the compile uncacheable for word a, an option o that lacks its
 * value or no option at all; the words of the flag variables and of a
 * private options file stay out of what is recorded. */
static void unknown_option(struct parser *p, const struct nvcc_option *o, const char *a)
{
	char *why;
	if (p->in_env)
		why = cjc_xstrdup("an unknown option in " FLAG_VARIABLES);
	else if (p->private_depth)
		why = cjc_xstrdup("an unknown option in an options file that others cannot read");
	else
		why = cjc_xasprintf(o ? "option %s lacks its value" : "unknown option %s", a);
	uncacheable(p->c, why);
	free(why);
}

/* Applies one option; given are the one or two command-line words it used. */
static void apply_option(struct parser *p, const struct nvcc_option *o, char *const *given,
			 int used, const char *value, enum origin from)
{
	struct cjc_compile *c = p->c;
	bool is_dep = is_output_option(o->action);
	char *words[2] = { given[0], used == 2 ? given[1] : NULL }, *own = NULL;
	if (is_dep && from != ARGV) {
		uncacheable(c, p->in_env ? "an output or dependency option in " FLAG_VARIABLES
					 : "an output or dependency option inside an options file");
		return;
	}
	if (o->flags & PATH)
		value = relocate_path(p, words, used, value, from, &own);
	if (o->field == F_ARCH && names_native(value))
		c->native_arch = true;
	if (o->action == OPTFILE) {
		read_options_file(p, words, used, value, from);
		return;
	}
	if (!is_dep) {
		if ((o->flags & PATH) && value && o->action != OPTFILE)
			note_path_word(c, words, used, value);
		cjc_strvec_pushv(&c->key_args, words, (size_t)used);
		if (from != FILE_KEPT)
			cjc_strvec_pushv(&c->nvcc_args, words, (size_t)used);
		if (!p->private_depth) {
			push_unit(c, words, used);
			record_field(p, o, words, used, value);
		}
	}
	if (value && o->action != OPTFILE && cjc_rules_stage_options_file(value))
		uncacheable(c, reasons[R_STAGE_OPTIONS_FILE]);
	if (value && cjc_rules_stage_option(o->name, value))
		uncacheable(c, cjc_rules_stage_option(o->name, value));
	switch (o->action) {
	case KEY: case FORWARD: break;
	case HOST_OPTIONS:
		if (cjc_host_program_option(value, NULL))
			uncacheable(c, reasons[R_HOST_PROGRAM]);
		if (cjc_rules_host_include(value))
			uncacheable(c, reasons[R_HOST_INCLUDE]);
		break;
	case LANGUAGE: p->language_given = true; break;
	case MODE:
		if (c->kind != CJC_KIND_NONE && c->kind != (enum cjc_kind)o->detail)
			uncacheable(c, "several output kinds");
		c->kind = (enum cjc_kind)o->detail;
		break;
	case UNCACHEABLE: uncacheable(c, reasons[o->detail]); break;
	case OUTPUT: set_once(c, &c->output, value, "several output files"); break;
	case ODIR: set_once(c, &p->odir, value, "several output directories"); break;
	case DEP_MD: c->dep_requested = true; break;
	case DEP_MMD: c->dep_requested = c->dep_nonsystem = true; break;
	case DEP_MP: c->dep_phony = true; break;
	case DEP_MF: set_once(c, &c->dep_file, value, "several dependency files"); break;
	case DEP_MT: set_once(c, &c->dep_target, value, "several dependency targets"); break;
	case OPTFILE: break;
	case CCBIN: cjc_replace_string(&c->ccbin, value); break;
	case INCLUDE: push_list(&c->search.dirs, value); break;
	case ISYSTEM: push_list(&c->isystem, value); break;
	case PREINCLUDE: push_list(&c->preincludes, value); break;
	case HOST_DEBUG: p->host_debug = true; break;
	case DEVICE_DEBUG: p->device_debug = true; break;
	case LINE_INFO: p->line_info = true; break;
	case RDC:
		if (strcmp(value, "true") && strcmp(value, "false"))
			uncacheable(c, "a malformed -rdc value");
		p->rdc = !strcmp(value, "true");
		break;
	}
	free(own);
}

/* An input file, as nvcc gets it (a path like any other). */
static void add_input(struct parser *p, char *const *given, enum origin from)
{
	struct cjc_compile *c = p->c;
	char *word = given[0], *own = NULL;
	if (!strcmp(word, "-"))
		uncacheable(c, "input from standard input");
	else
		relocate_path(p, &word, 1, word, from, &own);
	cjc_strvec_push(&p->inputs, word);
	note_path_word(c, &word, 1, word);
	cjc_strvec_push(&c->key_args, word);
	if (!p->private_depth)
		cjc_strvec_push(&c->key_units, word);
	if (from != FILE_KEPT)
		cjc_strvec_push(&c->nvcc_args, word);
	free(own);
}

static int parse_words(struct parser *p, int argc, char *const *argv, enum origin from)
{
	struct cjc_compile *c = p->c;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (cjc_rules_time_macro(a, strlen(a), p->epoch))
			uncacheable(c, CJC_RULES_TIME_MACRO_OPTION);
		if (a[0] != '-' || !a[1]) {
			add_input(p, argv + i, from);
			continue;
		}
		const char *value;
		int used;
		bool missing;
		const struct nvcc_option *o = lookup(argv, argc, i, &value, &used, &missing);
		if (!o && p->forward_unknown) {
			if (cjc_host_program_option(a, NULL))
				uncacheable(c, reasons[R_HOST_PROGRAM]);
			if (cjc_rules_host_include(a))
				uncacheable(c, reasons[R_HOST_INCLUDE]);
			if (cjc_rules_stage_option(NULL, a))
				uncacheable(c, cjc_rules_stage_option(NULL, a));
			cjc_strvec_push(&c->key_args, a);
			if (from != FILE_KEPT)
				cjc_strvec_push(&c->nvcc_args, a);
			if (!p->private_depth) {
				cjc_strvec_push(&c->key_units, a);
				json_array_append_new(p->extra, cjc_json_bytes(a));
			}
			continue;
		}
		if (!o || missing) {
			unknown_option(p, o, a);
			return -1;
		}
		apply_option(p, o, argv + i, used, value, from);
		i += used - 1;
	}
	return 0;
}

static bool is_source(const char *path)
{
	static const char *const exts[] = { ".cu", ".c", ".cc", ".cpp", ".cxx", ".C" };
	for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
		if (cjc_ends_with(path, exts[i]))
			return true;
	return false;
}

/* "dir/name.cu" -> "name.<ext>", in odir when given. */
static char *default_output(const char *source, const char *ext, const char *odir)
{
	const char *base = strrchr(source, '/');
	base = base ? base + 1 : source;
	const char *dot = strrchr(base, '.');
	size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	char *name = cjc_xasprintf("%.*s.%s", (int)stem, base, ext);
	char *out = odir ? cjc_path_join(odir, name) : cjc_xstrdup(name);
	free(name);
	return out;
}

/* "out/x.cu.o" -> "out/x.cu.d", as nvcc names a dependency file. */
static char *default_depfile(const char *output)
{
	const char *slash = strrchr(output, '/');
	const char *dot = strrchr(output, '.');
	size_t n = dot && (!slash || dot > slash + 1) ? (size_t)(dot - output) : strlen(output);
	return cjc_xasprintf("%.*s.d", (int)n, output);
}

static void finish(struct parser *p)
{
	struct cjc_compile *c = p->c;
	if (c->uncacheable)
		return;
	if (c->kind == CJC_KIND_NONE)
		return uncacheable(c, "linking (no -c, -dc, --cubin, --fatbin or --ptx)");
	if (p->inputs.n != 1)
		return uncacheable(c, p->inputs.n ? "several input files" : "no input file");
	c->source = cjc_xstrdup(p->inputs.v[0]);
	if (!p->language_given && !is_source(c->source))
		return uncacheable(c, "the input is not a CUDA or C/C++ source file");
	if (c->kind == CJC_KIND_OBJECT && p->rdc)
		c->kind = CJC_KIND_RDC_OBJECT;
	if (!c->output)
		c->output = default_output(c->source, cjc_kind_ext(c->kind), p->odir);
	if (c->dep_requested && !c->dep_file)
		c->dep_file = default_depfile(c->output);
	if (c->dep_requested && !c->dep_target)
		c->dep_target = cjc_xstrdup(c->output);
	if (c->native_arch)
		uncacheable(c, reasons[R_NATIVE]); /* until cjc_compile_resolve_native() */
}

static void build_options(struct parser *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "kind", json_string(cjc_kind_name(p->c->kind)));
	json_object_set_new(o, "archs", p->archs);
	json_object_set_new(o, "defines", p->defines);
	json_object_set_new(o, "include_dirs", p->include_dirs);
	json_object_set_new(o, "std", p->std ? p->std : json_null());
	json_object_set_new(o, "optimize", p->optimize ? p->optimize : json_null());
	json_object_set_new(o, "debug", json_boolean(p->host_debug || p->device_debug));
	json_object_set_new(o, "line_info", json_boolean(p->line_info));
	json_object_set_new(o, "fast_math", json_boolean(p->fast_math));
	json_object_set_new(o, "rdc", json_boolean(p->rdc || p->c->kind == CJC_KIND_RDC_OBJECT));
	json_object_set_new(o, "extra", p->extra);
	p->c->options = o;
}

/* Whether a FORWARD option is anywhere on the line: it decides how unknown
 * options before it are read. */
static bool forwards_unknown(int argc, char *const *argv)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const struct nvcc_option *o =
			a[0] == '-' ? cjc_nvcc_option_find(a + (a[1] == '-' ? 2 : 1)) : NULL;
		if (o && o->action == FORWARD)
			return true;
	}
	return false;
}

/* Whether a host-compiler option maps the working directory away (place.h). */
static bool cwd_mapped(const struct cjc_compile *c)
{
	for (size_t i = 0; i < c->key_args.n; i++)
		if (cjc_place_maps_cwd(c->key_args.v[i], c->place.cwd))
			return true;
	return false;
}

/* How the working directory reaches the output; relative paths in the key. */
static void finish_place(struct parser *p)
{
	struct cjc_compile *c = p->c;
	bool records = p->line_info || p->host_debug || p->device_debug;
	c->device_debug = p->device_debug;
	c->place.dirs_shared = records && c->place.share_dirs;
	c->place.records_dirs = records && !c->place.share_dirs;
	c->place.keys_cwd = c->place.share_dirs ? NULL : p->device_debug ? "-G"
			  : p->host_debug && !cwd_mapped(c) ? "-g" : NULL;
	if (c->place.dirs_shared) {
		cjc_strvec_push(&c->key_args, "cjc:hash_dir=false");
		cjc_strvec_push(&c->key_units, "cjc:hash_dir=false");
	}
	c->resolved = json_object();
	c->names_relative = p->relative.n > 0;
	for (size_t i = 0; i < p->relative.n; i++) {
		char *to = cjc_place_resolve(&c->place, p->relative.v[i]);
		if (!to)
			continue;
		char *arg = cjc_xasprintf("resolves:%s", to);
		cjc_strvec_push(&c->key_args, p->relative.v[i]);
		note_path_word(c, &arg, 1, arg + strlen("resolves:"));
		cjc_strvec_push(&c->key_args, arg);
		/* for `cjc why` only: a path that is not UTF-8 cannot be a JSON key */
		json_object_set_new(c->resolved, p->relative.v[i], cjc_json_bytes(to));
		free(arg);
		free(to);
	}
}

/* Whether a word of INCLUDES or SYSTEM_INCLUDES (which nvcc hands to the
 * host compiler) is one cjc follows: -I and -isystem (their directories
 * join the include scan, miss.c), -D, -U and -include (its file is in the
 * dependency list). */
static bool include_word_followed(const char *w, const char *prev)
{
	static const char *const takes_value[] = { "-I", "-isystem", "-include", "-D", "-U" };
	for (size_t i = 0; i < sizeof takes_value / sizeof *takes_value; i++)
		if (prev && !strcmp(prev, takes_value[i]))
			return true;
	static const char *const prefixes[] = { "-I", "-isystem", "-D", "-U" };
	for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
		if (cjc_starts_with(w, prefixes[i]) && strcmp(w, "-I-"))
			return true;
	return !strcmp(w, "-include");
}

/* INCLUDES and SYSTEM_INCLUDES (nvcc.profile appends them to the host
 * compiler's command) are keyed as text: any word but those above could
 * change where headers resolve or which programs run, unseen. */
static void check_include_variables(struct cjc_compile *c)
{
	static const char *const variables[] = { "INCLUDES", "SYSTEM_INCLUDES" };
	for (size_t i = 0; i < sizeof variables / sizeof *variables; i++) {
		const char *value = getenv(variables[i]);
		struct cjc_strvec words = CJC_STRVEC_INIT;
		if (value && cjc_key_env_words(value, &words))
			uncacheable(c, reasons[R_INCLUDES_SYNTAX]);
		for (size_t w = 0; w < words.n; w++)
			if (!include_word_followed(words.v[w], w ? words.v[w - 1] : NULL))
				uncacheable(c, reasons[R_INCLUDES_OPTION]);
		cjc_strvec_clear(&words);
	}
}

/* Whether a word of a stage's flags may name a file: a path, a response
 * file (@FILE), or a name that exists here, alone or after an '='. */
static bool names_file(const char *w)
{
	const char *value = strchr(w, '=');
	struct stat st;
	return strchr(w, '/') || strchr(w, '@') || !stat(w, &st) || (value && !stat(value + 1, &st));
}

/* The flags nvcc.profile hands to its stages (cudafe++, cicc, ptxas, ...)
 * are keyed as text: a word that could name a file would leave that file's
 * contents out of the key. */
static void check_stage_variables(struct cjc_compile *c)
{
	static const char *const variables[] = { "CUDAFE_FLAGS", "LLVMC_FLAGS", "LLVMDIS_FLAGS",
						 "NVASM_FLAGS", "NVDISASM_FLAGS", "NVLINK_FLAGS",
						 "NVVM_FLAGS", "OCG_FLAGS", "PTXAS_FLAGS" };
	for (size_t i = 0; i < sizeof variables / sizeof *variables; i++) {
		const char *value = getenv(variables[i]);
		struct cjc_strvec words = CJC_STRVEC_INIT;
		bool named = value && cjc_key_env_words(value, &words);
		for (size_t w = 0; w < words.n && !named; w++)
			named = names_file(words.v[w]);
		if (named)
			uncacheable(c, reasons[R_STAGE_FILE]);
		cjc_strvec_clear(&words);
	}
}

/* NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS reach nvcc as words before and
 * after the command's: their text is keyed (key.c) and their words are
 * parsed as the command's, as those of a private options file nvcc reads
 * (an options file they name is keyed by its contents, a relative path by
 * where it resolves, an output or dependency option makes the compile
 * uncacheable). */
static void parse_flag_variable(struct parser *p, const char *name)
{
	const char *flags = getenv(name);
	if (!flags)
		return;
	struct cjc_strvec words = CJC_STRVEC_INIT;
	char *copy = cjc_xstrdup(flags), *save = NULL;
	for (char *w = strtok_r(copy, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
		cjc_strvec_push(&words, w);
	/* their words stay out of metadata.json and the journal, as a private
	 * options file's: the variables are recorded by hash alone (key.c) */
	p->in_env = true;
	p->private_depth++;
	parse_words(p, (int)words.n, words.v, FILE_KEPT);
	p->private_depth--;
	p->in_env = false;
	cjc_strvec_clear(&words);
	free(copy);
}

/* The variables nvcc and its stages read that cjc checks as text. */
static void check_flag_variables(struct cjc_compile *c)
{
	const char *environment = cjc_key_env_uncacheable_in(&c->env, false), *name;
	if (environment)
		uncacheable(c, environment);
	if (cjc_rules_time_macro_env(&c->env, cjc_rules_epoch(), &name))
		uncacheable(c, CJC_RULES_TIME_MACRO_OPTION);
	check_include_variables(c);
	check_stage_variables(c);
	static const char *const variables[] = { "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS" };
	for (size_t i = 0; i < sizeof variables / sizeof *variables; i++) {
		const char *flags = getenv(variables[i]);
		if (flags && cjc_host_program_option(flags, NULL))
			uncacheable(c, reasons[R_HOST_PROGRAM]);
		const char *file_rule = flags ? cjc_rules_flag_variable(flags) : NULL;
		if (file_rule)
			uncacheable(c, file_rule);
	}
}

void cjc_compile_parse(int argc, char *const *argv, const struct cjc_place *where,
		       struct cjc_compile *c)
{
	memset(c, 0, sizeof *c);
	cjc_env_read(&c->env);
	if (where)
		c->place = (struct cjc_place){ .cwd = where->cwd, .base_dir = where->base_dir,
					       .share_dirs = where->share_dirs };
	struct parser p = { .c = c, .epoch = cjc_rules_epoch() };
	p.archs = json_array();
	p.defines = json_array();
	p.include_dirs = json_array();
	p.extra = json_array();
	p.forward_unknown = forwards_unknown(argc, argv);
	parse_flag_variable(&p, "NVCC_PREPEND_FLAGS");
	parse_words(&p, argc, argv, ARGV);
	parse_flag_variable(&p, "NVCC_APPEND_FLAGS");
	check_flag_variables(c);
	finish(&p);
	finish_place(&p);
	build_options(&p);
	free(p.odir);
	cjc_strvec_clear(&p.inputs);
	cjc_strvec_clear(&p.relative);
}

int cjc_native_parse(const char *text, struct cjc_buf *archs)
{
	size_t n = strlen(text);
	if (!n || strspn(text, "0123456789,") != n)
		return -1;
	char *copy = cjc_xstrdup(text), *save = NULL;
	int found = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save), found++)
		cjc_buf_addf(archs, "%ssm_%s", found ? "," : "", t);
	free(copy);
	return found ? 0 : -1;
}

/* What the toolkit's __nvcc_device_query beside nvcc prints ("80,90"), as
 * nvcc runs it for -arch=native; -1 when it fails or names no GPU. */
static int query_native(const char *nvcc, struct cjc_buf *out)
{
	char *path = cjc_find_program(nvcc);
	if (!path)
		return -1;
	char *bin = cjc_dirname(path);
	char *query = cjc_path_join(bin, "__nvcc_device_query");
	char *argv[] = { query, NULL };
	int rc = cjc_run_capture(argv, out);
	free(query);
	free(bin);
	free(path);
	return !rc && out->len == strlen(out->data ? out->data : "") ? 0 : -1;
}

void cjc_compile_resolve_native(struct cjc_compile *c, const char *nvcc)
{
	if (!c->native_arch || !c->uncacheable || strcmp(c->uncacheable, reasons[R_NATIVE]))
		return;
	struct cjc_buf out = CJC_BUF_INIT, archs = CJC_BUF_INIT;
	free(c->uncacheable);
	c->uncacheable = NULL;
	if (query_native(nvcc, &out) || cjc_native_parse(out.data ? out.data : "", &archs)) {
		uncacheable(c, reasons[R_NATIVE_UNKNOWN]);
	} else {
		char *arg = cjc_xasprintf("native:%s", out.data);
		cjc_strvec_push(&c->key_args, arg);
		json_object_set_new(c->resolved, "-arch=native", json_string(archs.data));
		free(arg);
	}
	cjc_buf_release(&archs);
	cjc_buf_release(&out);
}

void cjc_compile_set_root(struct cjc_compile *c, const char *root)
{
	struct cjc_place place = { .root = root };
	for (size_t i = 0; i < c->npath_words; i++) {
		char **word = &c->key_args.v[c->path_words[i]];
		size_t at = c->path_at[i];
		char *keyed = (*word)[at] == '/' ? cjc_place_key_path(&place, *word + at) : NULL;
		if (keyed) {
			char *now = cjc_xasprintf("%.*s%s", (int)at, *word, keyed);
			free(*word);
			*word = now;
		}
		free(keyed);
	}
	cjc_strvec_push(&c->key_args, "cjc:root");
	cjc_strvec_push(&c->key_units, "cjc:root");
	c->place.root = root;
}

void cjc_compile_release(struct cjc_compile *c)
{
	free(c->path_words);
	free(c->path_at);
	free(c->uncacheable);
	free(c->source);
	free(c->output);
	free(c->dep_file);
	free(c->dep_target);
	free(c->ccbin);
	cjc_strvec_clear(&c->key_args);
	cjc_strvec_clear(&c->key_units);
	cjc_strvec_clear(&c->nvcc_args);
	cjc_strvec_clear(&c->optfiles);
	cjc_strvec_clear(&c->isystem);
	cjc_strvec_clear(&c->preincludes);
	cjc_strvec_clear(&c->search.dirs);
	json_decref(c->options);
	json_decref(c->resolved);
	json_decref(c->options_files);
	memset(c, 0, sizeof *c);
}

/* The host compiler nvcc runs: the last -ccbin of NVCC_PREPEND_FLAGS, the
 * command and NVCC_APPEND_FLAGS, in nvcc's order (the parse read them all),
 * else NVCC_CCBIN, else gcc. */
char *cjc_compile_host(const struct cjc_compile *c)
{
	char *ccbin = c->ccbin ? cjc_xstrdup(c->ccbin) : NULL;
	if (!ccbin && getenv("NVCC_CCBIN") && *getenv("NVCC_CCBIN"))
		ccbin = cjc_xstrdup(getenv("NVCC_CCBIN"));
	if (!ccbin)
		return cjc_xstrdup("gcc");
	if (cjc_is_dir(ccbin)) {
		char *gcc = cjc_path_join(ccbin, "gcc");
		free(ccbin);
		return gcc;
	}
	return ccbin;
}

/* The UNCACHEABLE reasons whose options choose what nvcc makes. */
static const bool reason_sets_kind[] = {
	[R_PREPROCESS] = true, [R_DEPS_ONLY] = true, [R_LINK] = true, [R_DEVICE_LINK] = true,
	[R_RUNS] = true, [R_OTHER_KIND] = true,
};

const char *cjc_compile_output_option(int argc, char *const *argv)
{
	for (int i = 0; i < argc; i++) {
		if (argv[i][0] != '-' || !argv[i][1])
			continue;
		const char *value;
		int used;
		bool missing;
		const struct nvcc_option *o = lookup(argv, argc, i, &value, &used, &missing);
		if (!o)
			continue;
		if (o->action == MODE || is_output_option(o->action) ||
		    (o->action == UNCACHEABLE && reason_sets_kind[o->detail]))
			return argv[i];
		i += used - 1;
	}
	return NULL;
}
