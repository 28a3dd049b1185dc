/*
 * report_md.h - `cjc report --markdown`: the same summary as the HTML page
 * (report_html.h), as GitHub-flavoured Markdown, for a CI job's page
 * ($GITHUB_STEP_SUMMARY).  What is shown from a store is escaped for
 * Markdown; control characters first (cjc_printable).
 */
#ifndef CJC_REPORT_MD_H
#define CJC_REPORT_MD_H

#include "base/util.h"
#include "report_model.h"

/* Appends the summary of the report r to out. */
void report_write_markdown(const struct report *r, struct cjc_buf *out);

#endif
