/*
 * got.h - a loaded library's imports, found by name and rebound, without
 * the loader's help: the slots its relocations fill with the address of a
 * function it calls in another library (the GOT: JUMP_SLOT for a call
 * through the PLT, GLOB_DAT for an address taken), so that the JIT library
 * can send NVRTC's calls of the C library's file functions to its recorder
 * (compile/watch.h) as the shim's audit module does with LD_AUDIT.
 *
 * Calling sequence: cjc_got_find() on the handle dlopen returned, with the
 * names wanted; check each slot's current value (*at) if need be; then
 * cjc_got_write() each one.  Nothing is written until every relocation of
 * a wanted name is understood: one of another type (an absolute address in
 * data, say), with an addend, outside the object's writable segments, or
 * for a name the object defines itself makes cjc_got_find fail.
 * Read-only slots (RELRO, after the loader's pass) are made writable for
 * the write, then read-only again.  ELF objects of x86_64 and aarch64.
 */
#ifndef CJC_COMPILE_GOT_H
#define CJC_COMPILE_GOT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

struct cjc_got_slot {
	void **at;     /* in the object's memory */
	size_t name;   /* its index in the names given */
	bool readonly; /* in the RELRO range the loader made read-only */
};

/* The slots of lib's imports of names (n of them), into *slots (malloc'd,
 * *nslots of them, none when lib imports none): 0; or -1 with the reason
 * in why. */
int cjc_got_find(void *lib, const char *const *names, size_t n, struct cjc_got_slot **slots,
		 size_t *nslots, struct cjc_buf *why);
/* Sets the slot to value, atomically: 0, or -1 with the reason in why. */
int cjc_got_write(const struct cjc_got_slot *slot, void *value, struct cjc_buf *why);

#endif
