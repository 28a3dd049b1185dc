/*
 * watch_test - the recorder of what NVRTC reads (compile/watch.h) bound
 * to a library's imports without LD_AUDIT (cjc_watch_bind, compile/got.h):
 *
 *     watch_test LIB DATA_LIB
 *
 * LIB (watch_lib.c) calls open and unlink through its PLT and takes
 * open's address; linked -z now, its slots lie in RELRO.  Once bound, a
 * watched open is recorded (a file found, a name absent), unlink makes
 * the compile unkeyable, and the address taken is the recorder's.
 * DATA_LIB holds open's address in its data: binding it fails, and
 * nothing crashes.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/watch.h"

static int failed;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	failed += !ok;
}

static bool has(const struct cjc_strvec *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], s))
			return true;
	return false;
}

static void test_bound(const char *path, const char *self)
{
	struct cjc_buf why = CJC_BUF_INIT;
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	check(lib != NULL, "the library loads");
	if (!lib)
		return;
	int (*watch_open)(const char *) = (int (*)(const char *))dlsym(lib, "watch_open");
	int (*watch_unlink)(const char *) = (int (*)(const char *))dlsym(lib, "watch_unlink");
	void *(*address)(void) = (void *(*)(void))dlsym(lib, "watch_open_address");
	check(address() == dlsym(RTLD_DEFAULT, "open"),
	      "before: open's address is the C library's");
	check(!cjc_watch_bind(lib, NULL, &why), why.len ? why.data : "bound");
	check(address() == (void *)cjc_watch_functions()->open, "after: the recorder's");
	struct cjc_watch w;
	cjc_watch_begin(&w);
	check(watch_open(self) >= 0, "a watched open opens");
	check(watch_open("/nonexistent/watch_test.h") < 0, "a missing file is missing");
	cjc_watch_end(&w);
	cjc_watch_settle(&w);
	check(!w.unkeyable, w.unkeyable ? w.unkeyable : "keyable");
	check(has(&w.found, self), "the file opened is found");
	check(has(&w.absent, "/nonexistent/watch_test.h"), "the missing one is absent");
	cjc_watch_release(&w);
	cjc_watch_begin(&w);
	watch_unlink("/nonexistent/watch_test.h");
	cjc_watch_end(&w);
	cjc_watch_settle(&w);
	check(w.unkeyable && strstr(w.unkeyable, "unlink"), "unlink makes it unkeyable");
	cjc_watch_release(&w);
	check(watch_open(self) >= 0, "unwatched, the call goes on to the C library");
	check(!cjc_watch_bind(lib, NULL, &why), "binding again is harmless");
	cjc_buf_release(&why);
}

static void test_not_understood(const char *path)
{
	struct cjc_buf why = CJC_BUF_INIT;
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	check(lib != NULL, "the data library loads");
	if (!lib)
		return;
	check(cjc_watch_bind(lib, NULL, &why) == -1, "open's address in data: not bound");
	check(why.len && strstr(why.data, "a relocation of open of type"),
	      why.len ? why.data : "why");
	cjc_buf_release(&why);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: watch_test LIB DATA_LIB\n");
		return 2;
	}
	test_bound(argv[1], argv[0]);
	test_not_understood(argv[2]);
	printf("%s\n", failed ? "FAILED" : "passed");
	return failed ? 1 : 0;
}
