/*
 * rules.h - what text may be cached: the soundness rules that every path
 * (cjc's compile, the JIT library's nvcc and NVRTC paths, the NVRTC shim)
 * applies to every text its compiler will read: sources, headers, and
 * option words from every origin.  A rule is written here once; the paths
 * only say which texts they have.
 *
 * The clock.  __DATE__, __TIME__ and __TIMESTAMP__ expand to when the
 * compiler ran (__TIMESTAMP__: to a file's modification time), so a text
 * that names one makes the output depend on the clock, and such a compile
 * must not be cached.  SOURCE_DATE_EPOCH (keyed, key.h) fixes __DATE__ and
 * __TIME__ for nvcc and its host compiler, never __TIMESTAMP__; NVRTC
 * ignores it, so its paths pass epoch false.  The text is searched after
 * its line splices are joined, as the preprocessor's second phase joins
 * them (a backslash or the trigraph ??/, blanks, a newline: gcc takes
 * blanks between the backslash and the newline too), comments and strings
 * included: a needless miss at worst.
 *
 * Pasted names.  A paste (a ## b, or the digraph %:%:) can make one, as
 * CAT(__TI, ME__) does, from pieces no text holds whole.  A search of the
 * texts for the pieces is no answer: the headers of real compiles hold
 * every piece (glibc's and libstdc++'s "__" and "_", template parameters
 * T, I, M, E, words of comments) and a paste, so it would leave nearly
 * every compile uncached (docs/key.md has the numbers).  nvcc's paths see
 * pasted names where the preprocessor wrote their expansions instead
 * (cjc_rules_clock_expanded, over the texts nvcc -keep kept:
 * compile/miss.h); NVRTC's do not.
 *
 * Includes.  cjc_rules_may_include() says whether a text could make the
 * preprocessor read a file: it names "include" anywhere once its splices
 * are joined (a directive in any spelling the preprocessor accepts:
 * comments or a form feed before the '#', the digraph %:, a splice inside
 * the word; and __has_include, which probes names).  NVRTC's paths that do
 * not observe the files NVRTC reads use it to leave such code uncached.
 *
 * Paths.  cjc_rules_path_reaches() says whether the path a compile names
 * its source by can reach the output, so that a key may leave it out (the
 * JIT library's request names: docs/jit.md).  It is in
 *   - the debug and line information: an option word that asks for them
 *     (-G, -g*, -lineinfo, --generate-line-info, --device-debug, also inside
 *     -Xptxas/-Xcompiler/-Xcicc and NVCC_PREPEND_FLAGS/NVCC_APPEND_FLAGS);
 *   - __FILE__ and __FILE_NAME__ where the source (or an option, -D) writes
 *     them, or a macro of a header that expands to them (assert; found by
 *     closing the files' #defines over one another) that the source or an
 *     option names;
 *   - __BASE_FILE__ and __builtin_FILE (std::source_location's default
 *     argument, which names the caller's file), or a macro that expands to
 *     them, used anywhere outside a #define.
 * The texts are searched as for the time macros, splices joined, comments
 * and strings included: a needless path in the key at worst.  What else
 * records directories (place.h) is the caller's to add.
 *
 * Everything here is a pure function of its arguments but cjc_rules_epoch()
 * and cjc_rules_time_macro_env(), which read the environment.
 */
#ifndef CJC_RULES_H
#define CJC_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

/* The reasons counted (stats.h, by reason) for a compile that reads the
 * clock: a file (source or header) names a time macro, or an option word
 * does (the command line, an options file, NVCC_PREPEND_FLAGS and the other
 * keyed variables, a JIT request's or an NVRTC program's options). */
#define CJC_RULES_TIME_MACRO "a time macro (__DATE__ or __TIME__ without SOURCE_DATE_EPOCH, __TIMESTAMP__)"
#define CJC_RULES_TIME_MACRO_OPTION "an option names a time macro (__DATE__ or __TIME__ without " \
	"SOURCE_DATE_EPOCH, __TIMESTAMP__)"

/* text with its line splices joined (the preprocessor's second phase),
 * into out. */
void cjc_rules_join_splices(const char *text, size_t len, struct cjc_buf *out);

/* Whether SOURCE_DATE_EPOCH is set (nvcc's paths; NVRTC ignores it). */
bool cjc_rules_epoch(void);

/* The first time macro text names whose value the clock gives ("__TIME__"),
 * or NULL; epoch: SOURCE_DATE_EPOCH fixes __DATE__ and __TIME__. */
const char *cjc_rules_time_macro(const char *text, size_t len, bool epoch);

/* The time macro an expansion of which the preprocessor's output text
 * holds (one nvcc -keep kept, *.ii), or NULL: a string of the shape the
 * macro expands to ("hh:mm:ss"; "Mmm dd yyyy"; "Ddd Mmm dd hh:mm:ss yyyy",
 * the only one that counts with epoch), anywhere in the text (a
 * stringized one is escaped).  This sees the expansions a text search
 * cannot: a name pasted together, or one in a macro the compiler defines.
 * A string of the same shape in the code costs a needless miss. */
const char *cjc_rules_clock_expanded(const char *text, size_t len, bool epoch);

/* The same over n words (NULL words are skipped). */
const char *cjc_rules_time_macro_words(char *const *words, size_t n, bool epoch);

/* The same over the values of the keyed variables (key.h) set in e (as
 * cjc_env_read has it): nvcc hands them to itself or its stages as
 * options.  *name: the variable. */
struct cjc_env;
const char *cjc_rules_time_macro_env(const struct cjc_env *e, bool epoch, const char **name);

/* Whether text could make the preprocessor read a file (above). */
bool cjc_rules_may_include(const char *text, size_t len);

/*
 * Option words that read files the key does not see.  Each looks at every
 * part of a word (split at commas, blanks and '=', as -Xptxas -optf,FILE,
 * --ptxas-options=--options-file=FILE and -Xcompiler -isystem,DIR come).
 *   cjc_rules_stage_options_file  a stage's options file (-optf,
 *                                 --options-file): its contents are not keyed
 *   cjc_rules_host_include        an include directory or file given to the
 *                                 host compiler (-I, -iquote, -isystem,
 *                                 -idirafter, -iprefix, -isysroot, -include,
 *                                 -imacros, -B, and gcc's long spellings:
 *                                 --include-directory=, --include=,
 *                                 --imacros=, --prefix=, --sysroot=...):
 *                                 what it shadows is not followed
 */
bool cjc_rules_stage_options_file(const char *word);
/* Why an NVRTC option word makes the compile uncacheable, or NULL: NVRTC
 * reads or writes files of its own for it (precompiled headers, timings),
 * it names this machine's GPU (native), a stage's options file, or a time
 * macro (NVRTC ignores SOURCE_DATE_EPOCH).  The JIT's NVRTC path and the
 * shim both ask it of every option. */
const char *cjc_rules_nvrtc_option(const char *word);
bool cjc_rules_host_include(const char *word);

/*
 * Files the compile reads that nvcc's dependency list (-MD) leaves out,
 * so no key covers them; such a compile is not cached.
 *   cjc_rules_unlisted_file()  a text (source or header, splices joined)
 *       names an assembler directive that reads a file (.incbin,
 *       .include, in any case; "incbin" alone, as "." "incbin" join), or
 *       the tokens GCC dependency in sequence (#pragma GCC dependency,
 *       _Pragma, a macro's argument: gcc compares the named file's time
 *       and warns, an error under -Werror); returns the reason or NULL.
 *       Not seen: a directive split across string literals or pasted.
 *   cjc_rules_unlisted_file_why()  the same, "<reason> in <path>",
 *       allocated.
 *   cjc_rules_stage_option()  why an nvcc option's value makes a stage
 *       read or write a file no key covers, or NULL: option is nvcc's
 *       name for it ("Xcompiler", "compiler-options", "Xcudafe",
 *       "cudafe-options"; NULL: a word forwarded to the host compiler).
 *       Host compiler: profiles and coverage (-fprofile-*, --coverage,
 *       -fauto-profile, -fbranch-probabilities, -ftest-coverage, gcc's
 *       --profile-use for -fprofile-use), dumps and side files named after
 *       the output (-fdump-*, -fstack-usage, -fcallgraph-info, -save-temps,
 *       -gsplit-dwarf, -MD, sarif and json diagnostics files): cjc runs
 *       nvcc with an output of its own, so gcc would look for them by
 *       another name even on a miss.  cudafe++: any option but the
 *       diagnostics' (--diag_suppress=N and the like, an allowlist), as it
 *       reads --preinclude=FILE and others itself.
 */
#define CJC_RULES_ASM_FILE                                                                         \
	"an assembler directive that reads a file nvcc's dependency list "                         \
	"does not name (.incbin, .include)"
#define CJC_RULES_GCC_DEPENDENCY                                                                   \
	"#pragma GCC dependency (the host compiler compares the time "                             \
	"of a file nvcc's dependency list does not name)"
#define CJC_RULES_HOST_FILES                                                                       \
	"a host-compiler option reads or writes a file named after the "                           \
	"output or not keyed (-fprofile-use, -fprofile-generate, --coverage, -fdump-*, ...)"
#define CJC_RULES_CUDAFE_FILES                                                                     \
	"a cudafe++ option other than the diagnostics' (-Xcudafe "                                 \
	"--preinclude=FILE and others read files nvcc's dependency list does not name)"
const char *cjc_rules_unlisted_file(const char *text, size_t len);
char *cjc_rules_unlisted_file_why(const char *text, size_t len, const char *path);
const char *cjc_rules_stage_option(const char *option, const char *value);
/* The same over NVCC_PREPEND_FLAGS' or NVCC_APPEND_FLAGS' value, keyed as
 * text: every word as the host compiler's, and -Xcudafe's values. */
const char *cjc_rules_flag_variable(const char *flags);

/* Whether the source's path can reach the output (above): texts[0] is the
 * source, the others the files it read; options the option words, one a
 * line. */
bool cjc_rules_path_reaches(const struct cjc_buf *texts, size_t n, const char *options,
			    size_t options_len);

/* The same for every path of a command-line compile (path-free keys,
 * place.h): texts are the source and every file it read; relocated[i] says
 * whether texts[i]'s own path is keyed relative to the root, so that
 * __FILE__, __FILE_NAME__ or assert there (or a macro naming them) reaches
 * the output too; elsewhere they name a path the key holds as it is. */
bool cjc_rules_paths_reach(const struct cjc_buf *texts, size_t n, const bool *relocated,
			   const char *options, size_t options_len);

/* Whether nvcc -E's text names a file of names (n of them: file names,
 * as __FILE__ and __FILE_NAME__ end) or __builtin_FILE, outside its
 * directives (line markers, #define): what the preprocessor made of the
 * macros cjc_rules_paths_reach() could not tell apart (a dead #if branch).
 * compile/miss.h runs the preprocessor. */
bool cjc_rules_preprocessed_names(const char *text, size_t len, char *const *names, size_t n);

/*
 * The output.  nvcc 13 names internal-linkage device symbols (anonymous
 * namespaces, static device functions, libcu++ internals)
 * "_INTERNAL_<8 hex>_...", the hex derived from the source's absolute
 * path: cjc_rules_output_names_path() says whether an output (a cubin,
 * ptx, fatbin or object, device and host code) holds such a name; the
 * fatbin entries nvcc stores compressed (its PTX, zstd) are read
 * decompressed (compress.h, never past the size an entry records), and
 * one that cannot be read (another compression, a frame that is not
 * whole, a layout not understood) counts as naming one.
 */
bool cjc_rules_output_names_path(const void *data, size_t len);

#endif
