/*
 * helper_cmd.h - `cjc remote helper`, the HTTP helper's process
 * (src/lib/remote/helper.h).  Returns the exit status: 0 after its idle
 * time, 1 when another helper serves the store or it cannot listen, 2 when
 * it was not started by a compile (no settings on stdin).
 */
#ifndef CJC_HELPER_CMD_H
#define CJC_HELPER_CMD_H

int cjc_helper_serve(void);

#endif
