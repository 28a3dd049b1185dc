/*
 * depfile.h - Make dependency files, as nvcc writes them.
 *
 * cjc_depfile_parse() reads the prerequisites of the first rule of a
 * dependency file (make syntax: backslash-newline continuations, "\ " for a
 * space in a name, "$$" for "$") into `deps`, in order; the source comes
 * first.  It returns 0, or -1 with errno EBADMSG when there is no rule.
 *
 * cjc_depfile_format() writes the same format nvcc does, byte for byte:
 *
 *     TARGET : DEP1 \
 *         DEP2 \
 *         DEPn
 *
 * and, with `phony` (-MP), "\nDEP:\n" for each DEP after the first.
 */
#ifndef CJC_DEPFILE_H
#define CJC_DEPFILE_H

#include <stdbool.h>

#include "base/util.h"

int cjc_depfile_parse(const char *text, size_t len, struct cjc_strvec *deps);
void cjc_depfile_format(struct cjc_buf *out, const char *target, char *const *deps, size_t n,
			bool phony);

#endif
