/*
 * dl.h - a library loaded at run time (dlopen), its functions resolved into
 * a table: a struct of function pointers, each named by a row of
 * struct cjc_dl_symbol (CJC_DL_SYMBOL(type, field, "symbol")).
 *
 * The remote backends load libcurl and hiredis this way only when a store
 * needs them (remote_http.c says why), and the JIT library loads NVRTC and
 * libcuda so that it has no link-time CUDA dependency.
 */
#ifndef CJC_DL_H
#define CJC_DL_H

#include <stddef.h>

struct cjc_dl_symbol {
	const char *name;
	size_t at; /* offsetof the function pointer in the table */
};
#define CJC_DL_SYMBOL(type, field, name) { name, offsetof(type, field) }

/* Resolves every symbol of lib into table: 0, or -1 with the name of the
 * first one missing in *missing (the table is then partly filled). */
int cjc_dl_resolve(void *lib, const struct cjc_dl_symbol *syms, size_t n, void *table,
		   const char **missing);

#endif
