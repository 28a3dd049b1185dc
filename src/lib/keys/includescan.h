/*
 * includescan.h - which not-yet-existing files would change what an
 * #include resolves to.
 *
 * nvcc's dependency output says which files a compile read, but not which
 * files it looked for and did not find.  A header created later in one of
 * those places (beside the including file, or in an include directory
 * searched earlier) would be picked up instead, and the old entry would be a
 * wrong hit.  So on a miss we scan each file of the dependency set for its
 * #include directives, walk the search path the compiler uses for each name,
 * and record every candidate before the first one that exists.  A hit then
 * requires every recorded candidate to be still absent.
 *
 * The search order is the compiler's: for "name", the including file's
 * directory; for both forms then the -I directories, then the -isystem ones
 * (the toolkit's own include directories, INCLUDES's and SYSTEM_INCLUDES's
 * directories, CPATH, CPLUS_INCLUDE_PATH and C_INCLUDE_PATH are in those
 * lists, in the host compiler's order: miss.c; nvcc has no -iquote).
 * Only the directories we know are walked: the host compiler's built-in
 * system directories are not, so a header planted in /usr/include that
 * shadows another one there is not seen.
 * The scan is textual and ignores conditional compilation, which can only
 * add candidates (a needless miss, never a wrong hit).  It reads every
 * spelling the preprocessor takes: line splices joined (rules.h), comments
 * as blanks (and the text as it is too, so that a comment marker inside a
 * string cannot hide a line), '#' or the digraph %:, #include and #import.
 * __has_include("name") and __has_include(<name>) are walked the same way,
 * and the file one finds is reported in present: its presence decides the
 * output although the compiler never reads it, so the caller keys it as a
 * dependency.  Computed includes (#include MACRO), #include_next and
 * __has_include_next are not followed.
 *
 * cjc_includescan_forced: a file the command includes first (-include
 * NAME), which gcc looks for in the working directory before the search
 * path.
 */
#ifndef CJC_INCLUDESCAN_H
#define CJC_INCLUDESCAN_H

#include "base/util.h"

struct cjc_search_path {
	struct cjc_strvec dirs; /* -I, toolkit include, ..., CPATH, -isystem, toolkit cccl, ...: in order */
};

#define CJC_SEARCH_PATH_INIT { CJC_STRVEC_INIT }

/* Appends to `absent` the candidates that precede each include's
 * resolution, and to `present` (may be NULL) what __has_include found. */
void cjc_includescan(const char *file_path, const char *text, size_t len,
		     const struct cjc_search_path *sp, struct cjc_strvec *absent,
		     struct cjc_strvec *present);
void cjc_includescan_forced(const char *name, const char *cwd, const struct cjc_search_path *sp,
			    struct cjc_strvec *absent);

#endif
