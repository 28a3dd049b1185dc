/*
 * curl.c - libcurl, loaded once per process (curl.h).
 */
#include "remote/curl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/dl.h"
#include "base/fs.h"
#include "base/util.h"
#include "remote/remote_backend.h"

#define SECRET_MAX 8192
#define CJC_CURL_VERSION_MIN 0x075500 /* 7.85.0 */

struct cjc_curl_api cjc_curl;
static const char *load_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define FN(field, name) CJC_DL_SYMBOL(struct cjc_curl_api, field, name)
static const struct cjc_dl_symbol symbols[] = {
	FN(global_init_mem, "curl_global_init_mem"),
	FN(easy_init, "curl_easy_init"),
	FN(easy_setopt, "curl_easy_setopt"),
	FN(easy_perform, "curl_easy_perform"),
	FN(easy_getinfo, "curl_easy_getinfo"),
	FN(easy_reset, "curl_easy_reset"),
	FN(easy_cleanup, "curl_easy_cleanup"),
	FN(easy_strerror, "curl_easy_strerror"),
	FN(slist_append, "curl_slist_append"),
	FN(slist_free_all, "curl_slist_free_all"),
	FN(multi_init, "curl_multi_init"),
	FN(multi_add_handle, "curl_multi_add_handle"),
	FN(multi_remove_handle, "curl_multi_remove_handle"),
	FN(multi_perform, "curl_multi_perform"),
	FN(multi_poll, "curl_multi_poll"),
	FN(multi_info_read, "curl_multi_info_read"),
	FN(multi_cleanup, "curl_multi_cleanup"),
	FN(multi_setopt, "curl_multi_setopt"),
	FN(version_info, "curl_version_info"),
};

/* libcurl's memory, wiped before it is freed (curl.h): a request it built
 * holds the password or token it was given, and a core dump would hold
 * whatever was freed unwiped. */
static void wiping_free(void *p)
{
	if (p)
		explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

/* Moves by hand, so that the block left behind is wiped too. */
static void *wiping_realloc(void *p, size_t n)
{
	void *q = malloc(n ? n : 1);
	if (q && p) {
		size_t had = malloc_usable_size(p);
		memcpy(q, p, had < n ? had : n);
		wiping_free(p);
	}
	return q;
}

static void load(void)
{
	const char *missing;
	void *lib = dlopen(CJC_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib || cjc_dl_resolve(lib, symbols, sizeof symbols / sizeof *symbols, &cjc_curl, &missing)) {
		load_error = "cannot load " CJC_CURL_SONAME " (install libcurl4)";
		return;
	}
	/* what the stores set and rely on (CURLOPT_PROTOCOLS_STR, which an older
	 * one would take for an unknown option and leave every protocol open) */
	const curl_version_info_data *v = cjc_curl.version_info(CURLVERSION_NOW);
	if (!v || v->version_num < CJC_CURL_VERSION_MIN) {
		load_error = CJC_CURL_SONAME " is older than 7.85.0 (install a newer libcurl4)";
		return;
	}
	cjc_curl.global_init_mem(CURL_GLOBAL_DEFAULT, malloc, wiping_free, wiping_realloc, strdup,
				 calloc);
}

const char *cjc_curl_load(void)
{
	pthread_once(&once, load);
	return load_error;
}

char *cjc_curl_read_secret(const char *file, const char *attribute, struct cjc_buf *why)
{
	struct cjc_buf data = CJC_BUF_INIT;
	if (cjc_read_bounded(AT_FDCWD, file, 0, SECRET_MAX, &data)) {
		cjc_buf_addf(why, "setting: cannot read %s %s: %s", attribute, file, strerror(errno));
		return NULL;
	}
	size_t n = data.len;
	while (n && (data.data[n - 1] == '\n' || data.data[n - 1] == '\r' || data.data[n - 1] == ' '))
		n--;
	char *s = cjc_xstrndup(data.data ? data.data : "", n);
	cjc_buf_release_secret(&data);
	if (!*s || strchr(s, '\n')) {
		cjc_buf_addf(why, "setting: %s %s is not one line", attribute, file);
		cjc_free_secret(s);
		return NULL;
	}
	return s;
}

void cjc_curl_free_headers(struct curl_slist *headers)
{
	for (struct curl_slist *h = headers; h; h = h->next)
		explicit_bzero(h->data, strlen(h->data));
	cjc_curl.slist_free_all(headers);
}

int cjc_curl_timed_out(const char *error, struct cjc_buf *why)
{
	cjc_buf_addf(why, "timed out: %s", error);
	errno = ETIMEDOUT;
	return CJC_REMOTE_TIMEOUT;
}
