/*
 * output.h - what every subcommand prints the same way.
 */
#ifndef CJC_OUTPUT_H
#define CJC_OUTPUT_H

#include <jansson.h>

/* Prints one JSON document on stdout, as every --json does; takes doc. */
void cjc_print_json(json_t *doc);

#endif
