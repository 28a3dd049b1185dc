/*
 * cjc - the CudaJitCache command.
 *
 *     cjc [--target NAME] [--wrap PROG]... [--] COMPILER ARG...   compile through the cache
 *     cjc ptxas ARG...                                          assemble PTX through it
 *     cjc SUBCOMMAND [OPTION...]                  inspect and maintain it
 *
 * A first word that is a subcommand (commands.h) is one; a compiler
 * (is_compiler below) is compiled through the cache; any other word is a
 * mistake, said in one line, and nothing runs.  --wrap names a launcher the
 * build already had (ccache, say): cjc puts it in front of nvcc whenever
 * nvcc really runs.  Called as nvcc (a link named nvcc to cjc, ahead of the
 * toolkit on PATH: ccache's masquerade), cjc is `cjc nvcc`, with the first
 * nvcc on PATH that is not cjc itself.  `cjc ptxas ARG...`, and cjc called
 * as ptxas, assemble PTX through the cache (ptxas.h).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "commands.h"
#include "launcher.h"
#include "ptxas.h"
#include "self.h"

/*
 * The heap in 2 MB pages where the kernel gives them for the asking (THP
 * "madvise", Debian's default).  A compile through the cache is short and
 * touches a few MB of fresh heap (a heavy remote hit's manifest, record,
 * artifacts and hash memos), one page fault per 4 kB page; on the VM this
 * project measures on a fault costs 10 us, a tenth of a remote hit's CPU.
 * Measured on heavy_sort's remote hit: 1,076 faults -> 218, CPU 62 -> 52
 * ms; light_saxpy's: 296 -> 191 faults, CPU 15.4 -> 12.1 ms (docs/fleet.md).
 *
 * glibc's malloc does this itself under GLIBC_TUNABLES=glibc.malloc.hugetlb=1,
 * which only the environment can set; here the same is done once, before
 * the heap is used: big buffers come from the heap too (up to 32 MB), the
 * heap grows 32 MB of address space at a time and is not trimmed (a short
 * process; the helper trims when its last client leaves), a filler that is
 * never touched or freed takes it up to the next 2 MB boundary, and what
 * it has grown to is advised; past that, in the rare compile that needs
 * more, the heap grows in 4 kB pages.  Not under a sanitizer (its own
 * allocator), and not where the heap cannot be told (madvise is then not
 * called, or refused).
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define CJC_OWN_ALLOCATOR 1 /* clang's */
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CJC_OWN_ALLOCATOR 1 /* gcc's */
#endif

#if defined(__GLIBC__) && !defined(CJC_OWN_ALLOCATOR)
/* volatile: kept, and made before sbrk is asked; reachable, so no leak */
static void *volatile heap_filler;
#endif

static void heap_in_huge_pages(void)
{
#if defined(__GLIBC__) && !defined(CJC_OWN_ALLOCATOR)
	const uintptr_t huge = (uintptr_t)2 << 20;
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TOP_PAD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 128 << 20);
	char *probe = malloc(64);
	uintptr_t from = ((uintptr_t)probe + huge - 1) & ~(huge - 1);
	if (probe && from - (uintptr_t)probe > 4096)
		heap_filler = malloc(from - (uintptr_t)probe - 256);
	char *end = sbrk(0); /* the filler grew the heap past it */
	if (probe && end != (void *)-1 && (uintptr_t)probe < from && from < (uintptr_t)end)
		(void)madvise((void *)from, (uintptr_t)end - from, MADV_HUGEPAGE);
	free(probe);
#endif
}

/*
 * The compilers cjc knows by name (docs/command-line.md#what-counts-as-a-compiler):
 * nvcc, which it caches, and the host compilers a build may hand it (CMake's
 * C and C++ launchers), which it runs as given.  A name matches as itself,
 * versioned (nvcc-12.4, gcc-13) or with a target prefix
 * (x86_64-linux-gnu-gcc).  masquerade: cjc may be called by that name.
 */
static const struct {
	const char *name;
	bool masquerade;
} compilers[] = {
	{ "nvcc", true }, { "cc", false }, { "c++", false }, { "gcc", false }, { "g++", false },
	{ "clang", false }, { "clang++", false },
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static bool names(const char *word, const char *name)
{
	size_t w = strlen(word), n = strlen(name);
	if (w < n)
		return false;
	if (!strncmp(word, name, n) && (word[n] == '\0' || word[n] == '-'))
		return true;
	return w > n && word[w - n - 1] == '-' && !strcmp(word + w - n, name);
}

/* Whether a program name is one of the compilers above (masquerade: one cjc
 * may be called as). */
static bool known_compiler(const char *name, bool masquerade)
{
	for (size_t i = 0; i < sizeof compilers / sizeof *compilers; i++)
		if ((!masquerade || compilers[i].masquerade) && names(name, compilers[i].name))
			return true;
	return false;
}

/* A compiler: a path (a word with a '/': whatever it runs is the user's
 * choice, wrapper scripts included), or a known compiler's name. */
static bool is_compiler(const char *word)
{
	return strchr(word, '/') || known_compiler(word, false);
}

/* A first word that is neither a subcommand nor a compiler: one line, and a
 * subcommand it is close to. */
static int not_a_compiler(const char *word)
{
	const char *near = cjc_command_nearest(word);
	if (near)
		fprintf(stderr, "cjc: unknown subcommand '%s'; did you mean '%s'? (see 'cjc --help')\n",
			word, near);
	else if (word[0] == '-' || !word[0])
		fprintf(stderr, "cjc: expected a compiler or a subcommand, got '%s'; see 'cjc --help'\n",
			word);
	else
		fprintf(stderr, "cjc: '%s' is neither a subcommand nor a compiler cjc knows "
			"(give a compiler by its path); see 'cjc --help'\n", word);
	return 2;
}

/* Called as nvcc: `cjc nvcc ARG...` with the nvcc cjc stands in front of. */
static int masquerade(int argc, char **argv)
{
	const char *name = base_name(argv[0]);
	char *real = cjc_self_find_beyond(name);
	char *none[] = { NULL };
	if (!real) {
		fprintf(stderr, "cjc: called as %s, but no %s other than cjc itself is on PATH: put "
			"the toolkit's bin/ on PATH after the link to cjc\n", name, name);
		return 127;
	}
	argv[0] = real; /* kept: argv outlives the compile */
	return cjc_launch(NULL, none, argc, argv);
}

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
	heap_in_huge_pages();
	if (argc >= 1 && cjc_ptxas_named(base_name(argv[0])))
		return cjc_ptxas(argc, argv);
	if (argc >= 1 && known_compiler(base_name(argv[0]), true))
		return masquerade(argc, argv);
	if (argc < 2) {
		fprintf(stderr, "cjc: expected a compiler or a subcommand; see 'cjc --help'\n");
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
	if (i < argc && cjc_ptxas_named(base_name(argv[i])))
		return cjc_ptxas(argc - i, argv + i);
	if (i >= argc || !is_compiler(argv[i]))
		return not_a_compiler(i < argc ? argv[i] : "");
	wrap[nwrap] = NULL;
	return cjc_launch(target, wrap, argc - i, argv + i);
}
