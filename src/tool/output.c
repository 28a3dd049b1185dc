#include "output.h"

#include <stdio.h>

#include "base/fs.h"

void cjc_print_json(json_t *doc)
{
	/* ASCII alone: a bidi control a store held is \u202e, not the character */
	json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	fputc('\n', stdout);
	json_decref(doc);
}

void cjc_replay(const struct cjc_buf *out, const struct cjc_buf *err)
{
	if (out->len)
		(void)!cjc_write_all(1, out->data, out->len);
	if (err->len)
		(void)!cjc_write_all(2, err->data, err->len);
}
