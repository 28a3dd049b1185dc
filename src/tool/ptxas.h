/*
 * ptxas.h - `cjc ptxas ARG...`: PTX assembled to a cubin through the cache,
 * as Triton and TorchInductor run ptxas once per kernel
 * (docs/command-line.md#ptxas).
 *
 * cjc_ptxas() takes ptxas's own command line, argv[0] the ptxas named (a
 * path, or a name when cjc was called as ptxas or as `cjc ptxas`).  The
 * real ptxas is argv[0] when that is a path to a program other than cjc,
 * else CJC_PTXAS, else the toolkit's: $CUDA_HOME/bin, $CUDA_PATH/bin, beside
 * the first nvcc on PATH, the first ptxas on PATH, /usr/local/cuda/bin;
 * never cjc itself, however it is linked.
 *
 * The direct key: ptxas's identity (its realpath, --version and the
 * SHA-256 of its binary, remembered as NVRTC's is: identity.h), the PTX
 * input's bytes, every option but -o, and the environment's keyed
 * variables (key.h).  The input's and the output's names are left out,
 * since ptxas puts neither in what it makes, except with -g, which records
 * its command line in the cubin: then both are keyed as given.  A miss whose
 * cubin, stdout or stderr holds either name anyway is not published.
 *
 * An entry (kind "ptxas", target "ptxas"): output.cubin, stdout, stderr.
 * A hit writes the cubin where -o says (elf.o without -o) by rename and
 * replays the messages; a miss runs ptxas as given, so that its output is
 * exactly plain ptxas's.  Queries (--version, --help, --list-version) and
 * command lines the table below does not know run ptxas as given, uncached.
 * Returns the exit status the caller sees: ptxas's own, or 0 on a hit.
 */
#ifndef CJC_TOOL_PTXAS_H
#define CJC_TOOL_PTXAS_H

#include <stdbool.h>

/* Whether a program's base name is ptxas (ptxas, ptxas-13.0). */
bool cjc_ptxas_named(const char *name);
int cjc_ptxas(int argc, char **argv);

#endif
