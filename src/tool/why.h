/*
 * why.h - `cjc why OUTPUT|SOURCE [--json]` and `cjc why --jit [PREFIX:]NAME
 * [--json]`: the last journal record (store/journal.h) of a compile of that
 * output or source, or of the JIT library's request of that name, in plain
 * words.  The records, and what a miss is compared with, are
 * compile/why.h's: cjc's launcher and the JIT library write them alike.
 *
 * The text names what happened ("hit: served from entry ...", "miss: k.h
 * changed; -DFOO=1 added", "uncacheable: ...", "failed: ..."), where and
 * when, and each change.  `--json` prints the record plus "summary", the
 * first line of the text.  A JIT request's code is keyed as
 * CJC_JIT_SOURCE_DIR/<name> (keys/metadata.h): a change of it reads "the
 * code of NAME changed".  A miss compared with another directory's compile
 * of the source (compile/why.h) names the directory ("the directory
 * differs: compiled before in A, now in B; base_dir=... would share entries
 * between them (...)", or "no setting shares entries between them: ..."),
 * or, when the directory is not in the key, the other compile last.
 */
#ifndef CJC_WHY_H
#define CJC_WHY_H

#include <jansson.h>
#include <stdbool.h>

#include "store/store.h"

/* Prints the last record of an output or source (jit false), or of a JIT
 * request named NAME or PREFIX:NAME (":NAME": the library opened without a
 * prefix); 0, or 1 when none is recorded. */
int cjc_why_print(const struct cjc_store *s, const char *what, bool jit, bool json);

/* The first line `cjc why` prints of a record ("miss: k.h changed; -DFOO=1
 * added"), in a new allocation. */
char *cjc_why_summary(json_t *record);
/* What a report groups a miss under, chosen as the words are: the first
 * change's kind ("a source or header changed", "an argument was added",
 * ...), else what the lookup found ("no earlier compile is recorded", "the
 * entry was evicted or cleaned", ...).  A static string. */
const char *cjc_why_cause(json_t *record);

#endif
