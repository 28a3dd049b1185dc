/*
 * output.h - what every subcommand prints the same way.
 */
#ifndef CJC_OUTPUT_H
#define CJC_OUTPUT_H

#include <jansson.h>

#include "base/util.h"

/* Prints one JSON document on stdout, as every --json does; takes doc.
 * ASCII only: jansson escapes the controls, and every other character
 * outside ASCII (a bidi control among them) is a \u escape (SPEC 9). */
void cjc_print_json(json_t *doc);

/* Writes a compile's recorded stdout and stderr to ours, byte for byte, as
 * the compiler wrote them (a hit says what its miss said). */
void cjc_replay(const struct cjc_buf *out, const struct cjc_buf *err);

#endif
