#include "base/dl.h"

#include <dlfcn.h>
#include <string.h>

int cjc_dl_resolve(void *lib, const struct cjc_dl_symbol *syms, size_t n, void *table,
		   const char **missing)
{
	for (size_t i = 0; i < n; i++) {
		void *fn = dlsym(lib, syms[i].name);
		if (!fn) {
			*missing = syms[i].name;
			return -1;
		}
		memcpy((char *)table + syms[i].at, &fn, sizeof fn);
	}
	return 0;
}
