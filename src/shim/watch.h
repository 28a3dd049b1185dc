/*
 * watch.h - what the NVRTC shim's audit module (audit.c) and the shim
 * agree on: the handshake that joins the two, over the table of the C
 * library's calls through which NVRTC reads the file system and the
 * recorder's functions (compile/watch.h, shared with the JIT library).
 *
 * The audit module binds NVRTC's own calls of these functions (and of
 * nothing else) to its trampolines (rtld-audit(7), la_symbind64); each
 * trampoline calls the function of the same name and type in the table
 * the shim registered (the recorder's, cjc_watch_functions), or, before
 * the shim has registered, the C library's.  The shim registers by
 * calling cjc_nvrtc_audit_hello(): its own definition answers 0 (no audit
 * module: nothing is watched), and the audit module binds the shim's call
 * to its own, which keeps the table and answers CJC_WATCH_VERSION.
 */
#ifndef CJC_SHIM_WATCH_H
#define CJC_SHIM_WATCH_H

#include "compile/watch.h"

/* The handshake (above); the shim's own definition answers 0. */
int cjc_nvrtc_audit_hello(const struct cjc_watch_table *table);

/* The name NVRTC's shim needs, which the audit module binds to the NVRTC
 * library the program asked for (audit.c). */
#define CJC_REAL_NVRTC "libcudajitcache-real-nvrtc.so"

#endif
