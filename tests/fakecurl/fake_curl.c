/*
 * fake_curl.c - a libcurl.so.4 that says it is 7.81.0 (Ubuntu 22.04's),
 * for settings_test.sh: a store that needs libcurl says it is too old
 * instead of running without what 7.85.0 added (CURLOPT_PROTOCOLS_STR,
 * which 7.81 would take for an unknown option).  Every function cjc loads
 * is here; none but curl_version_info is ever called.
 */
#include <stddef.h>

/* The start of libcurl's curl_version_info_data, all cjc reads of it (its
 * own header is left out: the stubs below are not its functions' types). */
struct version_info {
	int age;
	const char *version;
	unsigned int version_num;
	const char *host;
};

static struct version_info old = { 10, "7.81.0", 0x075100, "x86_64-pc-linux-gnu" };

struct version_info *curl_version_info(int age);
struct version_info *curl_version_info(int age)
{
	(void)age;
	return &old;
}

#define STUB(name) \
	void name(void); \
	void name(void) {}
STUB(curl_global_init_mem)
STUB(curl_easy_init)
STUB(curl_easy_setopt)
STUB(curl_easy_perform)
STUB(curl_easy_getinfo)
STUB(curl_easy_reset)
STUB(curl_easy_cleanup)
STUB(curl_easy_strerror)
STUB(curl_slist_append)
STUB(curl_slist_free_all)
STUB(curl_multi_init)
STUB(curl_multi_add_handle)
STUB(curl_multi_remove_handle)
STUB(curl_multi_perform)
STUB(curl_multi_poll)
STUB(curl_multi_info_read)
STUB(curl_multi_cleanup)
STUB(curl_multi_setopt)
