/*
 * watch_cmd.h - `cjc __watch`, the watching helper's process
 * (src/lib/compile/watcher.h).  Returns the exit status: 0 after its idle
 * time, 1 when another helper serves the name or it cannot listen, 2 when
 * it was not started by a compile (stdin a terminal).
 */
#ifndef CJC_WATCH_CMD_H
#define CJC_WATCH_CMD_H

int cjc_watch_serve(void);

#endif
