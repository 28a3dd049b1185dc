/*
 * A stand-in NVRTC for jit_test.sh whose imports the JIT library cannot
 * rebind (compile/got.h): it holds open's address in its data (an absolute
 * relocation, not a GOT slot), and forwards each call the library makes to
 * the real NVRTC at FAKE_NVRTC_REAL.  Its compiles must then run uncached.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>

int (*const fake_nvrtc_open)(const char *, int, ...) = open;

static void *real(const char *name)
{
	static void *lib;
	if (!lib && getenv("FAKE_NVRTC_REAL"))
		lib = dlopen(getenv("FAKE_NVRTC_REAL"), RTLD_NOW | RTLD_LOCAL);
	return lib ? dlsym(lib, name) : NULL;
}

#define NVRTC_ERROR_INTERNAL_ERROR 11
#define FORWARD(name, params, args)                                                                \
	int name params                                                                            \
	{                                                                                          \
		int(*f) params = (int(*) params)real(#name);                                       \
		return f ? f args : NVRTC_ERROR_INTERNAL_ERROR;                                    \
	}

FORWARD(nvrtcVersion, (int *major, int *minor), (major, minor))
FORWARD(nvrtcCreateProgram,
	(void **p, const char *src, const char *name, int n, const char *const *h,
	 const char *const *hn),
	(p, src, name, n, h, hn))
FORWARD(nvrtcCompileProgram, (void *p, int n, const char *const *o), (p, n, o))
FORWARD(nvrtcGetProgramLogSize, (void *p, size_t *n), (p, n))
FORWARD(nvrtcGetProgramLog, (void *p, char *log), (p, log))
FORWARD(nvrtcGetCUBINSize, (void *p, size_t *n), (p, n))
FORWARD(nvrtcGetCUBIN, (void *p, char *code), (p, code))
FORWARD(nvrtcGetPTXSize, (void *p, size_t *n), (p, n))
FORWARD(nvrtcGetPTX, (void *p, char *code), (p, code))
FORWARD(nvrtcDestroyProgram, (void **p), (p))

const char *nvrtcGetErrorString(int e)
{
	const char *(*f)(int) = (const char *(*)(int))real("nvrtcGetErrorString");
	return f ? f(e) : "no NVRTC at FAKE_NVRTC_REAL";
}
