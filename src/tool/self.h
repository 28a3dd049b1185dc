/*
 * self.h - cjc's own file, for the masquerades (main.c: called as nvcc;
 * ptxas.h: called as ptxas): the program cjc stands in front of is never
 * cjc itself, by device and inode, so no link, however it is spelt, leads
 * back here (ccache's loop guard).
 */
#ifndef CJC_TOOL_SELF_H
#define CJC_TOOL_SELF_H

#include <stdbool.h>

/* Whether path is an executable regular file other than this program. */
bool cjc_self_other(const char *path);
/* The first `name` on PATH that is not this program (malloc'd); NULL when none. */
char *cjc_self_find_beyond(const char *name);

#endif
