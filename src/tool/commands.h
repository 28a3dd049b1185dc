/*
 * commands.h - the subcommands: one table of {name, function, help, flags,
 * argument, whether it opens the store}, and one parser for every
 * subcommand's flags (each flag a row: name, kind, the session field it
 * sets), as git's parse-options does.  A function gets the parsed session
 * and returns the exit status.  Data goes to stdout (one JSON document
 * with --json), problems to stderr.
 */
#ifndef CJC_COMMANDS_H
#define CJC_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

/* Whether a word names a subcommand. */
bool cjc_is_command(const char *name);
/* Runs the subcommand argv[0] (a name cjc_is_command() knows) with the words
 * after it; returns the exit status (2 for a bad flag or argument). */
int cjc_command_run(int argc, char **argv);
/* The subcommand a mistyped word is close to (edit distance), or NULL. */
const char *cjc_command_nearest(const char *word);
void cjc_usage(FILE *out);

#endif
