/*
 * curl.h - libcurl for the backends that speak HTTP (remote_http.c,
 * remote_oci.c): loaded at run time, once per process, only when a store
 * needs it (remote_http.c says why: the thirty libraries it brings cost
 * more than a whole remote hit); the secret files both read, and a
 * timeout as both say it.  What libcurl frees is wiped first: it copies
 * the secrets it is given (a URL's password, a bearer token's header) into
 * the requests it builds, which would linger in freed memory.
 */
#ifndef CJC_REMOTE_CURL_H
#define CJC_REMOTE_CURL_H

#define CURL_DISABLE_TYPECHECK /* its macros would hide the calls through cjc_curl */
#include <curl/curl.h>

/* The libcurl functions used. */
struct cjc_curl_api {
	CURLcode (*global_init_mem)(long flags, curl_malloc_callback m, curl_free_callback f,
				    curl_realloc_callback r, curl_strdup_callback s,
				    curl_calloc_callback c);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_reset)(CURL *c);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *c);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *c);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd *extra, unsigned n, int timeout_ms,
				int *ret);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	CURLMcode (*multi_cleanup)(CURLM *m);
	CURLMcode (*multi_setopt)(CURLM *m, CURLMoption option, ...);
	curl_version_info_data *(*version_info)(CURLversion age);
};

/* Filled by the first cjc_curl_load() that succeeds. */
extern struct cjc_curl_api cjc_curl;

/* Loads libcurl, 7.85.0 or newer (the first call; later ones say how it
 * went): NULL, or why it cannot be loaded. */
const char *cjc_curl_load(void);

/* A store's secret file (bearer-token-file, credentials-file: attribute
 * names it in messages): its one line, trailing blanks dropped, read up to
 * 8 KiB; malloc'd (free it with cjc_free_secret), or NULL with why naming
 * the file, never what it holds. */
struct cjc_buf;
char *cjc_curl_read_secret(const char *file, const char *attribute, struct cjc_buf *why);
/* A request libcurl ended at its deadline (CURLE_OPERATION_TIMEDOUT):
 * CJC_REMOTE_TIMEOUT, with errno ETIMEDOUT and why saying so with
 * libcurl's message (error, its error buffer). */
int cjc_curl_timed_out(const char *error, struct cjc_buf *why);
/* curl_slist_free_all, each header wiped first (one may carry a token). */
void cjc_curl_free_headers(struct curl_slist *headers);

#endif
