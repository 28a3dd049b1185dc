/*
 * run_cmd.h - `cjc run [--env] [--] PROGRAM [ARG...]` (docs/nvrtc-shim.md):
 * runs a program that compiles with NVRTC, unchanged, with the NVRTC shim
 * in front of its NVRTC: LD_AUDIT names the shim's audit module (added to
 * any the environment had), and CJC_NVRTC_SHIM_DIR the directory of the
 * shims.  The program's children inherit both.  With --env, prints the
 * two variables as shell assignments instead (`eval "$(cjc run --env)"`).
 *
 * The shim's directory: CJC_NVRTC_SHIM_DIR when set; else the installed
 * one, found from where cjc itself is (so an installed tree may move); else
 * the build tree's.  Returns the exit status: the program's (exec), or 127
 * when it cannot be run, 1 when the shim is not there.
 */
#ifndef CJC_RUN_CMD_H
#define CJC_RUN_CMD_H

#include <stdbool.h>
#include <stddef.h>

int cjc_run_command(char **argv, size_t argc, bool env_only);

#endif
