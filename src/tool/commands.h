/*
 * commands.h - the subcommands: one table of {name, function, help}.
 * Each function takes the words after `cjc` (argv[0] is the subcommand's
 * name) and returns the exit status.  Data goes to stdout (one JSON document
 * with --json), problems to stderr.
 */
#ifndef CJC_COMMANDS_H
#define CJC_COMMANDS_H

#include <stdio.h>

struct cjc_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

const struct cjc_command *cjc_command_find(const char *name);
void cjc_usage(FILE *out);

#endif
