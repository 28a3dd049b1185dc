/*
 * shim.h - the NVRTC shim's modules (docs/nvrtc-shim.md), shared by its
 * files and by nothing else.  The shim is a library that stands where a
 * program's NVRTC was (audit.c puts it there) and answers NVRTC's calls:
 *
 *   shim.c   NVRTC's calls: the programs, the compile, and what a program
 *            compiled from the cache answers
 *   hello.c  the shim's own answer to the audit module's handshake
 *            (watch.h), which binds NVRTC's file calls to the recorder
 *            (compile/watch.h): which files a compile looked at
 *
 * A compile goes through the JIT library's cache of programs it did not
 * create (src/jit/program.h): its key, its lookup in the store and the
 * remote ones, and its publication.
 *
 * The shim never fails a call for the cache's reasons: whatever the cache
 * cannot do, NVRTC does as if the shim were not there.
 */
#ifndef CJC_SHIM_H
#define CJC_SHIM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "compile/nvrtc.h"
#include "program.h"

typedef cjc_nvrtc_result nvrtcResult;
typedef cjc_nvrtc_program nvrtcProgram;

#define NVRTC_SUCCESS CJC_NVRTC_SUCCESS
#define NVRTC_ERROR_OUT_OF_MEMORY CJC_NVRTC_OUT_OF_MEMORY
#define NVRTC_ERROR_INVALID_INPUT CJC_NVRTC_INVALID_INPUT
#define NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID 10
#define NVRTC_ERROR_INTERNAL_ERROR 11

#endif
