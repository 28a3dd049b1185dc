/*
 * cjc - the CudaJitCache command.
 *
 *     cjc [--target NAME] [--wrap PROG]... [--] COMPILER ARG...   compile through the cache
 *     cjc SUBCOMMAND [OPTION...]                  inspect and maintain it
 *
 * A first word that is a subcommand (commands.h) is one; anything else is a
 * compiler.  --wrap names a launcher the build already had (ccache, say):
 * cjc puts it in front of nvcc whenever nvcc really runs.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "launcher.h"

int main(int argc, char **argv)
{
	/* One malloc arena for all threads: what a remote hit's threads free
	 * (remote.c's fetch ahead, filehash.c's prefetch) is then reused by
	 * the main thread instead of staying in arenas of their own while it
	 * touches fresh pages, each a page fault (measured on a heavy remote
	 * hit: 170 faults fewer, 6 % faster).  The threads hashing headers
	 * allocate nothing; the fetch ahead allocates while the main thread
	 * hashes, which allocates next to nothing. */
#ifdef M_ARENA_MAX /* glibc's */
	mallopt(M_ARENA_MAX, 1);
#endif
	if (argc < 2) {
		cjc_usage(stderr);
		return 2;
	}
	if (cjc_is_command(argv[1]))
		return cjc_command_run(argc - 1, argv + 1);
	const char *target = NULL;
	char *wrap[8];
	size_t nwrap = 0;
	int i = 1;
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--target") && i + 1 < argc) {
			target = argv[++i];
		} else if (!strcmp(argv[i], "--wrap") && i + 1 < argc && nwrap < 7) {
			wrap[nwrap++] = argv[++i];
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
	wrap[nwrap] = NULL;
	return cjc_launch(target, wrap, argc - i, argv + i);
}
