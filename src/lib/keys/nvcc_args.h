/*
 * nvcc_args.h - what an nvcc command line asks for, and whether we can cache it.
 *
 * cjc_compile_parse() walks the arguments with the sorted option table in
 * nvcc_args.c (name, takes a value?, value may be attached?, what it does to
 * the key, which metadata field it feeds).  Long and short spellings, with
 * one or two dashes, values separate, after '=' or attached (-I, -D, -O...),
 * and the contents of --options-file/-optf files are all understood.
 *
 * A path value (the source, -I, -isystem, -include, -L) under base_dir is
 * rewritten relative to the working directory, in the key and in the
 * command nvcc runs; an options file that names one is put on the command
 * line, rewritten, instead of being passed.  Every relative path is then
 * keyed with where it resolves, when place.h says the key needs it.
 *
 * An options file that others cannot read may hold secrets (-DTOKEN=...):
 * its contents are in the key (as a hash) but its words are kept out of the
 * parsed options and `key_units`, which metadata.json and the journal
 * record, and it is never put on the command line.
 *
 * The result says what kind of output is made and where, which dependency
 * file was asked for, which arguments form the key, which arguments nvcc runs
 * with on a miss (the same, less outputs and dependency options, which cjc
 * supplies itself), the include search path, and the parsed options for
 * metadata.json.  When the command is not a single-source compile we can
 * cache, `uncacheable` names the reason and the caller runs nvcc unchanged.
 *
 * Ownership: cjc_compile_release() frees everything in the struct.
 */
#ifndef CJC_NVCC_ARGS_H
#define CJC_NVCC_ARGS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/util.h"
#include "keys/includescan.h"
#include "keys/key.h"
#include "keys/place.h"

enum cjc_kind { CJC_KIND_NONE, CJC_KIND_OBJECT, CJC_KIND_RDC_OBJECT, CJC_KIND_CUBIN, CJC_KIND_FATBIN, CJC_KIND_PTX };

struct cjc_compile {
	enum cjc_kind kind;
	char *uncacheable; /* the reason, or NULL when cacheable */
	char *source;
	char *output;      /* where the user wants the output */
	bool dep_requested;
	bool dep_nonsystem; /* -MMD */
	bool dep_phony;     /* -MP */
	char *dep_file;
	char *dep_target;
	char *ccbin;
	bool native_arch;  /* an architecture is "native": see cjc_compile_resolve_native() */
	bool device_debug; /* -G */
	struct cjc_place place; /* where it happens, as the key sees it (place.h) */
	bool rewritten;    /* base_dir made a path relative */
	json_t *resolved;  /* relative path -> where it resolves, as keyed */
	bool names_relative;         /* a path value (-I, -include, ...) is relative */
	struct cjc_strvec key_args;  /* arguments that bear on the output, in order */
	struct cjc_strvec key_units; /* the same, one string per option ("-D FOO=1"), for `cjc why` */
	struct cjc_strvec nvcc_args; /* the command to run on a miss, less -o and -M* */
	struct cjc_strvec optfiles;  /* options files read, with their contents in key_args */
	struct cjc_strvec isystem;   /* -isystem directories */
	struct cjc_strvec preincludes; /* -include files, in order */
	struct cjc_search_path search;
	size_t *path_words; /* key_args' words that hold a path value, and where it starts */
	size_t *path_at;
	size_t npath_words;
	json_t *options;   /* for metadata.json */
	json_t *options_files; /* for metadata.json: [{"path", "sha256", "private"}], or NULL */
	struct cjc_env env;    /* the environment as parsed (key.h): the key's, read once */
};

/* An options file is read only when it is a regular file of at most this
 * many bytes; any other makes the compile uncacheable (nvcc reads it). */
#define CJC_OPTIONS_FILE_MAX ((size_t)1 << 20)

/* Fills c; c->uncacheable is set when the command is not one we cache.
 * `where` gives the working directory and base_dir (place.h; its strings
 * must outlive c); NULL keys relative paths as written and rewrites none. */
void cjc_compile_parse(int argc, char *const *argv, const struct cjc_place *where,
		       struct cjc_compile *c);
void cjc_compile_release(struct cjc_compile *c);
/* Path-free keys (place.h): each path value of key_args that starts with
 * root (the source, -I, -isystem, -include..., and where relative ones
 * resolve) is keyed as "<root>/..." instead, the word "cjc:root" joins
 * key_args and key_units, and place.root is set.  Other words (-D values,
 * -Xcompiler) keep the paths they name. */
void cjc_compile_set_root(struct cjc_compile *c, const char *root);
/* The first of argv (options, as nvcc takes them) that chooses what kind of
 * output nvcc makes or where an output goes (-c, --ptx, -E, -lib, -o, -odir,
 * -MF, ...), as written; NULL when none does.  Options files are not read. */
const char *cjc_compile_output_option(int argc, char *const *argv);
/* -arch=native (or -code/-gencode naming native, here or in NVCC_PREPEND_FLAGS
 * or NVCC_APPEND_FLAGS) means this machine's GPUs, so the parse leaves such a
 * compile uncacheable.  This runs the toolkit's __nvcc_device_query from
 * the directory of `nvcc` (found on PATH when a bare name), as nvcc itself
 * does, and keys what it prints ("native:80,90"); c->resolved gets
 * "-arch=native": "sm_80,sm_90" for `cjc why`.  When it fails (no GPU, no
 * driver, no such program) the compile stays uncacheable, with that reason.
 * Does nothing unless native is the only reason. */
void cjc_compile_resolve_native(struct cjc_compile *c, const char *nvcc);
/* __nvcc_device_query's output ("80,90") as architectures ("sm_80,sm_90")
 * appended to archs; -1 when it is empty or not digits and commas. */
int cjc_native_parse(const char *text, struct cjc_buf *archs);
/* Whether a host-compiler option word makes the compiler find or run a
 * program, plugin, specs or response file that the key does not cover (-B,
 * -specs, -fplugin, -wrapper, @file, ...): the prefix of the first token
 * (tokens split at blanks and commas, and again after each '='), with
 * *names (if not NULL) saying what it names; NULL if none.  Such a word in
 * -Xcompiler, forwarded to the host compiler, or in NVCC_PREPEND_FLAGS or
 * NVCC_APPEND_FLAGS makes the compile uncacheable; `cjc audit` refuses it. */
const char *cjc_host_program_option(const char *word, const char **names);
/* The host compiler nvcc runs for c, in nvcc's order (docs/key.md): the
 * last -ccbin of NVCC_PREPEND_FLAGS, the command and NVCC_APPEND_FLAGS,
 * else NVCC_CCBIN, else gcc; a directory means its gcc.  malloc'd. */
char *cjc_compile_host(const struct cjc_compile *c);
const char *cjc_kind_name(enum cjc_kind k);
/* The file name extension of the kind's artifact, e.g. "o" or "fatbin". */
const char *cjc_kind_ext(enum cjc_kind k);

/* For the unit tests: the option table. */
struct nvcc_option;
size_t cjc_nvcc_option_count(void);
const char *cjc_nvcc_option_name(size_t i);
/* Looks an option up by name (no dashes); NULL if unknown. */
const struct nvcc_option *cjc_nvcc_option_find(const char *name);
bool cjc_nvcc_option_takes_value(const struct nvcc_option *o);

#endif
