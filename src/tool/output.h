/*
 * output.h - what every subcommand prints the same way.
 */
#ifndef CJC_OUTPUT_H
#define CJC_OUTPUT_H

#include <jansson.h>

/* Prints one JSON document on stdout, as every --json does; takes doc.
 * ASCII only: jansson escapes the controls, and every other character
 * outside ASCII (a bidi control among them) is a \u escape (SPEC 9). */
void cjc_print_json(json_t *doc);

#endif
