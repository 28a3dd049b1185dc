/*
 * curl.c - libcurl, loaded once per process (curl.h).
 */
#include "remote/curl.h"

#include <dlfcn.h>
#include <pthread.h>

#include "base/dl.h"

struct cjc_curl_api cjc_curl;
static const char *load_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define FN(field, name) CJC_DL_SYMBOL(struct cjc_curl_api, field, name)
static const struct cjc_dl_symbol symbols[] = {
	FN(global_init, "curl_global_init"), FN(easy_init, "curl_easy_init"),
	FN(easy_setopt, "curl_easy_setopt"), FN(easy_perform, "curl_easy_perform"),
	FN(easy_getinfo, "curl_easy_getinfo"), FN(easy_reset, "curl_easy_reset"),
	FN(easy_cleanup, "curl_easy_cleanup"), FN(easy_strerror, "curl_easy_strerror"),
	FN(slist_append, "curl_slist_append"), FN(slist_free_all, "curl_slist_free_all"),
};

static void load(void)
{
	const char *missing;
	void *lib = dlopen(CJC_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib || cjc_dl_resolve(lib, symbols, sizeof symbols / sizeof *symbols, &cjc_curl, &missing)) {
		load_error = "cannot load " CJC_CURL_SONAME " (install libcurl4)";
		return;
	}
	cjc_curl.global_init(CURL_GLOBAL_DEFAULT);
}

const char *cjc_curl_load(void)
{
	pthread_once(&once, load);
	return load_error;
}
