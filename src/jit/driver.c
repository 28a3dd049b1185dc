/*
 * The CUDA driver API, loaded with dlopen("libcuda.so.1") when first needed
 * so that the library has no link-time CUDA dependency: the first visible
 * GPU's architecture, and loading a result as a module.  The few types the
 * calls need are declared here (cuda.h's are opaque pointers and ints).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dl.h"
#include "jit_internal.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction;
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

struct driver {
	void *lib;
	CUresult (*cuInit)(unsigned);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuCtxGetCurrent)(CUcontext *);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuModuleLoadData)(CUmodule *, const void *);
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*cuModuleUnload)(CUmodule);
	CUresult (*cuGetErrorName)(CUresult, const char **);
};

/* The symbols, by name and place in struct driver. */
#define SYM(name) CJC_DL_SYMBOL(struct driver, name, #name)
static const struct cjc_dl_symbol symbols[] = {
	SYM(cuInit), SYM(cuDeviceGet), SYM(cuDeviceGetAttribute), SYM(cuCtxGetCurrent),
	SYM(cuCtxSetCurrent), SYM(cuDevicePrimaryCtxRetain), SYM(cuModuleLoadData),
	SYM(cuModuleGetFunction), SYM(cuModuleUnload), SYM(cuGetErrorName),
};

static const char *error_name(const struct driver *d, CUresult r)
{
	const char *name = NULL;
	if (d->cuGetErrorName(r, &name) || !name)
		return "an unknown error";
	return name;
}

/* Loads the driver and runs cuInit once per handle; NULL with the error set. */
static struct driver *driver_of(struct cjc_jit *h)
{
	jit_lock(h);
	struct driver *d = h->driver;
	jit_unlock(h);
	if (d)
		return d;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		jit_fail(h, "no CUDA driver (libcuda.so.1 cannot be loaded: %s); give the request an "
			 "arch to compile without a GPU", dlerror());
		return NULL;
	}
	d = cjc_xcalloc(1, sizeof *d);
	d->lib = lib;
	const char *missing;
	if (cjc_dl_resolve(lib, symbols, sizeof symbols / sizeof *symbols, d, &missing)) {
		jit_fail(h, "the CUDA driver lacks %s", missing);
		jit_driver_release(d);
		return NULL;
	}
	CUresult r = d->cuInit(0);
	if (r) {
		jit_fail(h, "no usable GPU: cuInit failed with %s", error_name(d, r));
		jit_driver_release(d);
		return NULL;
	}
	jit_lock(h);
	if (h->driver) {
		jit_driver_release(d);
		d = h->driver;
	} else {
		h->driver = d;
	}
	jit_unlock(h);
	return d;
}

/* libcuda stays loaded (no dlclose): modules loaded through it may outlive
 * the handle, and the driver does not expect to be unloaded. */
void jit_driver_release(struct driver *d)
{
	free(d);
}

int jit_driver_arch(struct cjc_jit *h, char *arch, size_t len)
{
	jit_lock(h);
	bool known = h->arch[0];
	if (known)
		snprintf(arch, len, "%s", h->arch);
	jit_unlock(h);
	if (known)
		return 0;
	struct driver *d = driver_of(h);
	if (!d)
		return -1;
	CUdevice dev;
	int major = 0, minor = 0;
	CUresult r = d->cuDeviceGet(&dev, 0);
	if (!r)
		r = d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	if (!r)
		r = d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	if (r)
		return jit_fail(h, "no visible GPU to take the arch from (%s); give the request an arch",
				error_name(d, r));
	/* Hopper and later: the arch-specific variant, which JIT kernels use (wgmma, TMA) */
	jit_lock(h);
	snprintf(h->arch, sizeof h->arch, "sm_%d%d%s", major, minor, major >= 9 ? "a" : "");
	snprintf(arch, len, "%s", h->arch);
	jit_unlock(h);
	return 0;
}

/* A current context for this thread: the caller's, else device 0's primary one. */
static int ensure_context(struct cjc_jit *h, struct driver *d)
{
	CUcontext ctx = NULL;
	CUdevice dev;
	CUresult r = d->cuCtxGetCurrent(&ctx);
	if (!r && ctx)
		return 0;
	r = d->cuDeviceGet(&dev, 0);
	if (!r)
		r = d->cuDevicePrimaryCtxRetain(&ctx, dev);
	if (!r)
		r = d->cuCtxSetCurrent(ctx);
	return r ? jit_fail(h, "no CUDA context: %s", error_name(d, r)) : 0;
}

int cjc_jit_load(cjc_jit *h, const struct cjc_jit_result *res, const char *kernel,
		 void **module, void **function)
{
	jit_clear_error(h);
	struct driver *d = driver_of(h);
	if (!d || ensure_context(h, d))
		return -1;
	if (!res || !res->data || !res->size)
		return jit_fail(h, "nothing to load: the result is empty");
	int64_t t0 = cjc_wall_ns();
	CUmodule mod = NULL;
	CUfunction fn = NULL;
	CUresult r = d->cuModuleLoadData(&mod, res->data);
	if (r)
		return jit_fail(h, "cuModuleLoadData failed: %s", error_name(d, r));
	if (kernel && (r = d->cuModuleGetFunction(&fn, mod, kernel))) {
		d->cuModuleUnload(mod);
		return jit_fail(h, "cuModuleGetFunction(%s) failed: %s", kernel, error_name(d, r));
	}
	int64_t t1 = cjc_wall_ns();
	if (h->set.flag[JIT_PRINT_LOAD_TIME])
		fprintf(stderr, "cjc jit: loading %s%s%.12s took %.3f ms\n", kernel ? kernel : "a module",
			res->key[0] ? " of " : "", res->key, (double)(t1 - t0) / 1e6);
	*module = mod;
	if (function)
		*function = fn;
	return 0;
}

int cjc_jit_unload(cjc_jit *h, void *module)
{
	jit_clear_error(h);
	struct driver *d = driver_of(h);
	if (!d)
		return -1;
	CUresult r = d->cuModuleUnload(module);
	return r ? jit_fail(h, "cuModuleUnload failed: %s", error_name(d, r)) : 0;
}

void *cjc_jit_driver_symbol(cjc_jit *h, const char *name)
{
	struct driver *d = driver_of(h);
	return d ? dlsym(d->lib, name) : NULL;
}
