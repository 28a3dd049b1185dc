/*
 * cjc - the CudaJitCache command.
 *
 *     cjc [--target NAME] [--] COMPILER ARG...   compile through the cache
 *     cjc SUBCOMMAND [OPTION...]                  inspect and maintain it
 *
 * A first word that is a subcommand (commands.h) is one; anything else is a
 * compiler.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "launcher.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		cjc_usage(stderr);
		return 2;
	}
	const struct cjc_command *cmd = cjc_command_find(argv[1]);
	if (cmd)
		return cmd->fn(argc - 1, argv + 1);
	const char *target = NULL;
	int i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--target") && i + 1 < argc) {
			target = argv[++i];
		} else if (!strncmp(argv[i], "--target=", 9)) {
			target = argv[i] + 9;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			break;
		}
	}
	if (i >= argc || argv[i][0] == '-') {
		fprintf(stderr, "cjc: expected a compiler or a subcommand, got '%s'\n",
			i < argc ? argv[i] : "");
		cjc_usage(stderr);
		return 2;
	}
	return cjc_launch(target, argc - i, argv + i);
}
