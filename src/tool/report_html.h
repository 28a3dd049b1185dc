/*
 * report_html.h - `cjc report` as one self-contained HTML page: a <style>
 * block and inline SVG, no script, and a Content-Security-Policy that lets
 * the page load nothing at all.  Each number the counters give is also in
 * a data-stat / data-value attribute, so a test can read it back from the
 * rendered page.  Everything shown from a store (paths, labels, reasons,
 * URLs) is escaped for the page; control characters first (cjc_printable).
 */
#ifndef CJC_REPORT_HTML_H
#define CJC_REPORT_HTML_H

#include "base/util.h"
#include "report_model.h"

/* Appends the page of the report r to out. */
void report_write_html(const struct report *r, struct cjc_buf *out);

#endif
