/*
 * diagnostics.h - the settings that make a compile tell more (config.h):
 *
 *   print_commands  "Running command: ..." on stderr before every real nvcc run
 *   keep_ptx        nvcc's intermediate ptx (-keep) stored in the entry as
 *                   kept-<name>.ptx, listed in metadata.json's files
 *   keep_sass       `cuobjdump -sass` of the output (not of ptx) stored as
 *                   sass.txt, where cuobjdump is installed beside nvcc or on
 *                   PATH; where it is not, a miss says so on stderr and
 *                   keeps no SASS
 *   check_spills    ptxas warns of spills and local memory (-warn-spills,
 *                   -warn-lmem-usage); a compile whose stderr has such a
 *                   warning fails with status 255, as nvcc -Werror would,
 *                   on a hit as on a miss (the entry keeps the warnings)
 *
 * The three that change what an entry holds are part of the key (words
 * "cjc:keep_ptx" ... after nvcc's arguments), so entries with and without
 * them never stand in for each other, and metadata.json records them as
 * "diagnostics" so that `cjc audit` rebuilds the same way.
 */
#ifndef CJC_DIAGNOSTICS_H
#define CJC_DIAGNOSTICS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/util.h"
#include "keys/nvcc_args.h"
#include "store/store.h"

struct cjc_diagnostics {
	bool keep_ptx;
	bool keep_sass;    /* asked for */
	bool check_spills;
	char *cuobjdump;   /* beside nvcc or on PATH; NULL when not installed */
};

/* From the settings (or from metadata's "diagnostics", which may be NULL). */
void cjc_diagnostics_init(struct cjc_diagnostics *d, bool keep_ptx, bool keep_sass,
			  bool check_spills, const char *nvcc_realpath);
void cjc_diagnostics_from_json(struct cjc_diagnostics *d, json_t *o, const char *nvcc_realpath);
void cjc_diagnostics_release(struct cjc_diagnostics *d);
/* For metadata.json: the settings in effect, or NULL when none is. */
json_t *cjc_diagnostics_json(const struct cjc_diagnostics *d);
/* Makes the settings part of the key. */
void cjc_diagnostics_add_key(const struct cjc_diagnostics *d, struct cjc_compile *c);
/* nvcc's extra arguments; keep_dir, where given, is where -keep writes
 * (keep_ptx, and the preprocessed texts a miss reads: miss.h). */
void cjc_diagnostics_add_args(const struct cjc_diagnostics *d, const char *keep_dir,
			      struct cjc_strvec *argv);
/* Stages the kept ptx and the SASS of output (a file of kind ext, e.g. "o");
 * 0, or -1 with the reason. */
int cjc_diagnostics_stage(const struct cjc_diagnostics *d, const char *keep_dir,
			  const char *output, const char *ext, struct cjc_staging *st,
			  struct cjc_buf *why);
/* Whether nvcc's stderr reports spills or local memory use. */
bool cjc_diagnostics_spilled(const char *err, size_t len);
/* Which of them it reports (the JIT checks them apart): bits of these. */
enum { CJC_PTXAS_SPILLS = 1, CJC_PTXAS_LOCAL_MEMORY = 2 };
unsigned cjc_diagnostics_ptxas(const char *err, size_t len);
/* A program of the toolkit (cuobjdump, nvdisasm) beside nvcc, else on PATH;
 * NULL when neither has it. */
char *cjc_diagnostics_find_tool(const char *nvcc_realpath, const char *name);
/* Prints "Running command: ..." on stderr. */
void cjc_diagnostics_print_command(char *const *argv);

#endif
