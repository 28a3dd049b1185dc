/*
 * What the NVRTC shim reads of a handle (seam.h): the handle's layout is
 * the JIT library's own (jit_internal.h).
 */
#include "jit_internal.h"

struct cjc_store *jit_store_of(struct cjc_jit *h)
{
	return &h->store;
}

bool jit_readonly(const struct cjc_jit *h)
{
	return h->cfg.readonly;
}
