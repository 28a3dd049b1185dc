#include "output.h"

#include <stdio.h>

void cjc_print_json(json_t *doc)
{
	/* ASCII alone: a bidi control a store held is \u202e, not the character */
	json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	fputc('\n', stdout);
	json_decref(doc);
}
