/*
 * The CUDA driver API, loaded with dlopen("libcuda.so.1") when first needed
 * so that the library has no link-time CUDA dependency: the architecture of
 * the calling thread's device, and loading a result as a module.  The few
 * types the calls need are declared here (cuda.h's are opaque pointers and
 * ints).
 *
 * The arch of a request without one is that of the device of the calling
 * thread's current context (cuCtxGetCurrent, cuCtxGetDevice), else of
 * device 0: asked of the driver once per device and remembered in the
 * handle's table (device_arch).  A child of fork() whose parent had
 * initialised the driver cannot use CUDA; it compiles for the arch its
 * parent remembered for device 0, if any.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dl.h"
#include "base/oom.h"
#include "jit_internal.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction;
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

struct driver {
	void *lib;
	unsigned forks; /* the fork generation cuInit ran in (jit_fork_generation) */
	CUresult (*cuInit)(unsigned);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuCtxGetCurrent)(CUcontext *);
	CUresult (*cuCtxGetDevice)(CUdevice *);
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
	SYM(cuCtxGetDevice), SYM(cuCtxSetCurrent), SYM(cuDevicePrimaryCtxRetain),
	SYM(cuModuleLoadData), SYM(cuModuleGetFunction), SYM(cuModuleUnload), SYM(cuGetErrorName),
};

static const char *error_name(const struct driver *d, CUresult r)
{
	const char *name = NULL;
	if (d->cuGetErrorName(r, &name) || !name)
		return "an unknown error";
	return name;
}

/* The handle's driver, loaded in an ancestor of this process: CUDA cannot be
 * used after fork() in a process that initialised it. */
static bool inherited(const struct driver *d)
{
	return d && d->forks != jit_fork_generation();
}

/* Loads the driver and runs cuInit once per handle; NULL with the error set. */
static struct driver *driver_of(struct cjc_jit *h)
{
	jit_lock(h);
	struct driver *d = h->driver;
	jit_unlock(h);
	if (inherited(d)) {
		jit_fail(h, "the CUDA driver was initialised before this process was forked, and "
			 "CUDA cannot be used in a child of such a process (give the request an arch)");
		return NULL;
	}
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
	d->forks = jit_fork_generation();
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

/* The device of the calling thread's current context, else device 0. */
static int current_device(struct cjc_jit *h, struct driver *d, CUdevice *dev)
{
	CUcontext ctx = NULL;
	CUresult r = d->cuCtxGetCurrent(&ctx);
	if (!r && ctx)
		r = d->cuCtxGetDevice(dev);
	else
		r = d->cuDeviceGet(dev, 0);
	return r ? jit_fail(h, "no visible GPU to take the arch from (%s); give the request an arch",
			    error_name(d, r))
		 : 0;
}

/* The remembered arch of device dev into arch; false when not asked yet. */
static bool remembered(struct cjc_jit *h, CUdevice dev, char *arch, size_t len)
{
	bool known = false;
	jit_lock(h);
	if (dev >= 0 && dev < JIT_DEVICES && h->device_arch[dev][0]) {
		snprintf(arch, len, "%s", h->device_arch[dev]);
		known = true;
	}
	jit_unlock(h);
	return known;
}

int jit_driver_arch(struct cjc_jit *h, char *arch, size_t len)
{
	jit_lock(h);
	bool forked = inherited(h->driver);
	jit_unlock(h);
	if (forked && remembered(h, 0, arch, len))
		return 0;
	struct driver *d = driver_of(h);
	CUdevice dev;
	if (!d || current_device(h, d, &dev))
		return -1;
	if (remembered(h, dev, arch, len))
		return 0;
	int major = 0, minor = 0;
	CUresult r = d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	if (!r)
		r = d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	if (r)
		return jit_fail(h, "cannot tell the arch of device %d (%s); give the request an arch",
				(int)dev, error_name(d, r));
	/* Hopper and later: the arch-specific variant, which JIT kernels use (wgmma, TMA) */
	char found[sizeof h->device_arch[0]];
	snprintf(found, sizeof found, "sm_%d%d%s", major, minor, major >= 9 ? "a" : "");
	snprintf(arch, len, "%s", found);
	jit_lock(h);
	if (dev >= 0 && dev < JIT_DEVICES)
		memcpy(h->device_arch[dev], found, sizeof found);
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

static int load(cjc_jit *h, const struct cjc_jit_result *res, const char *kernel, void **module,
		void **function)
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

static int unload(cjc_jit *h, void *module)
{
	jit_clear_error(h);
	struct driver *d = driver_of(h);
	if (!d)
		return -1;
	CUresult r = d->cuModuleUnload(module);
	return r ? jit_fail(h, "cuModuleUnload failed: %s", error_name(d, r)) : 0;
}

/* The public calls, under a guard (base/oom.h, jit.c). */
struct driver_call {
	cjc_jit *h;
	const struct cjc_jit_result *res;
	const char *name; /* a kernel's, or a symbol's */
	void *module, **function, *symbol;
};

static int load_call(void *ctx)
{
	struct driver_call *c = ctx;
	return load(c->h, c->res, c->name, &c->module, c->function);
}

int cjc_jit_load(cjc_jit *h, const struct cjc_jit_result *res, const char *kernel, void **module,
		 void **function)
{
	struct driver_call c = { .h = h, .res = res, .name = kernel, .function = function };
	int rc = cjc_oom_run(load_call, &c);
	if (rc == CJC_OOM_RAN_OUT)
		return jit_out_of_memory(h);
	if (!rc)
		*module = c.module;
	return rc;
}

static int unload_call(void *ctx)
{
	struct driver_call *c = ctx;
	return unload(c->h, c->module);
}

int cjc_jit_unload(cjc_jit *h, void *module)
{
	struct driver_call c = { .h = h, .module = module };
	int rc = cjc_oom_run(unload_call, &c);
	return rc == CJC_OOM_RAN_OUT ? jit_out_of_memory(h) : rc;
}

static int symbol_call(void *ctx)
{
	struct driver_call *c = ctx;
	struct driver *d = driver_of(c->h);
	c->symbol = d ? dlsym(d->lib, c->name) : NULL;
	return 0;
}

void *cjc_jit_driver_symbol(cjc_jit *h, const char *name)
{
	struct driver_call c = { .h = h, .name = name };
	return cjc_oom_run(symbol_call, &c) == CJC_OOM_RAN_OUT ? NULL : c.symbol;
}
