/*
 * fake_cuda - a libcuda.so.1 for tests/jit_test.sh on machines without a
 * GPU: just enough of the driver API for src/jit/driver.c to find the
 * arch of the calling thread's device.  LD_LIBRARY_PATH puts it before a
 * real driver.
 *
 *   FAKE_CUDA_ARCHS  the devices' compute capabilities, "80,90" (device 0
 *                    is 8.0, device 1 9.0); unset: cuInit fails, no device
 *   FAKE_CUDA_LOG    a file that gets "device N" each time a device's
 *                    compute capability is asked, and "current" for each
 *                    cuCtxGetCurrent
 *   FAKE_CUDA_LAUNCH_LOG  set: loading a module succeeds, and this file
 *                    gets a line for each cuFuncSetAttribute, cuLaunchKernel
 *                    and cuLaunchKernelEx (its config, then one line per
 *                    launch attribute): what tests/python checks a launch
 *                    passes.  Unset: loading modules fails.
 *
 * A context is its device's ordinal + 1; each thread has its own current
 * one, as with the real driver.  A cluster launch on a device before 9.0
 * fails with CUDA_ERROR_NOT_SUPPORTED (which code a real driver gives
 * there is not checked), and a dynamic shared memory limit over an
 * H100's 227 KiB with INVALID_VALUE (as an H100's driver does).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { SUCCESS = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, NO_DEVICE = 100,
       INVALID_DEVICE = 101, INVALID_CONTEXT = 201 };
enum {
	NOT_SUPPORTED = 801,
	MAX_DYNAMIC_SHARED = 8,
	MOST_SHARED = 227 * 1024,
	COOPERATIVE = 2,
	CLUSTER = 4
};

/* cuda.h's CUlaunchAttribute and CUlaunchConfig, field by field. */
struct launch_attribute {
	int id;
	char pad[4];
	union {
		char pad[64];
		int cooperative;
		unsigned cluster[3];
	} value;
};

struct launch_config {
	unsigned grid[3], block[3], shared;
	void *stream;
	const struct launch_attribute *attrs;
	unsigned nattrs;
};

static __thread int current; /* device + 1; 0: none */

static void note(const char *what, int device)
{
	const char *path = getenv("FAKE_CUDA_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	if (device >= 0)
		fprintf(f, "%s %d\n", what, device);
	else
		fprintf(f, "%s\n", what);
	fclose(f);
}

/* A line in FAKE_CUDA_LAUNCH_LOG. */
static void record(const char *format, ...)
{
	const char *path = getenv("FAKE_CUDA_LAUNCH_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f)
		return;
	va_list ap;
	va_start(ap, format);
	vfprintf(f, format, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* Device n's compute capability (80 for 8.0), or -1. */
static int capability(int n)
{
	const char *p = getenv("FAKE_CUDA_ARCHS");
	for (int i = 0; p && *p; i++) {
		char *end;
		long cc = strtol(p, &end, 10);
		if (end == p)
			return -1;
		if (i == n)
			return (int)cc;
		p = *end == ',' ? end + 1 : NULL;
	}
	return -1;
}

int cuInit(unsigned flags)
{
	(void)flags;
	return capability(0) < 0 ? NO_DEVICE : SUCCESS;
}

int cuDeviceGet(int *device, int ordinal)
{
	if (capability(ordinal) < 0)
		return INVALID_DEVICE;
	*device = ordinal;
	return SUCCESS;
}

int cuDeviceGetAttribute(int *value, int attribute, int device)
{
	int cc = capability(device);
	if (cc < 0)
		return INVALID_DEVICE;
	if (attribute == 75) { /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
		note("device", device);
		*value = cc / 10;
	} else if (attribute == 76) {
		*value = cc % 10;
	} else {
		return INVALID_VALUE;
	}
	return SUCCESS;
}

int cuCtxGetCurrent(void **ctx)
{
	note("current", -1);
	*ctx = current ? (void *)(intptr_t)current : NULL;
	return SUCCESS;
}

int cuCtxGetDevice(int *device)
{
	if (!current)
		return INVALID_CONTEXT;
	*device = current - 1;
	return SUCCESS;
}

int cuCtxSetCurrent(void *ctx)
{
	current = (int)(intptr_t)ctx;
	return SUCCESS;
}

int cuDevicePrimaryCtxRetain(void **ctx, int device)
{
	if (capability(device) < 0)
		return INVALID_DEVICE;
	*ctx = (void *)(intptr_t)(device + 1);
	return SUCCESS;
}

int cuModuleLoadData(void **module, const void *image)
{
	(void)image;
	if (!getenv("FAKE_CUDA_LAUNCH_LOG"))
		return INVALID_VALUE;
	*module = (void *)(intptr_t)0x1000;
	return SUCCESS;
}

int cuModuleGetFunction(void **function, void *module, const char *name)
{
	(void)name;
	if (!getenv("FAKE_CUDA_LAUNCH_LOG"))
		return INVALID_VALUE;
	*function = (char *)module + 1;
	return SUCCESS;
}

int cuFuncSetAttribute(void *function, int attribute, int value)
{
	(void)function;
	record("cuFuncSetAttribute %d %d", attribute, value);
	return attribute == MAX_DYNAMIC_SHARED && value > MOST_SHARED ? INVALID_VALUE : SUCCESS;
}

int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		   unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
	(void)function;
	(void)params;
	(void)extra;
	record("cuLaunchKernel grid %u %u %u block %u %u %u shared %u stream %p", gx, gy, gz, bx,
	       by, bz, shared, stream);
	return SUCCESS;
}

int cuLaunchKernelEx(const struct launch_config *config, void *function, void **params,
		     void **extra)
{
	(void)function;
	(void)params;
	(void)extra;
	const unsigned *g = config->grid, *b = config->block;
	record("cuLaunchKernelEx grid %u %u %u block %u %u %u shared %u stream %p attrs %u", g[0],
	       g[1], g[2], b[0], b[1], b[2], config->shared, config->stream, config->nattrs);
	int result = SUCCESS;
	for (unsigned i = 0; i < config->nattrs; i++) {
		const struct launch_attribute *a = &config->attrs[i];
		if (a->id == CLUSTER) {
			const unsigned *c = a->value.cluster;
			record("  cluster %u %u %u", c[0], c[1], c[2]);
			if (capability(current ? current - 1 : 0) < 90)
				result = NOT_SUPPORTED;
		} else if (a->id == COOPERATIVE) {
			record("  cooperative %d", a->value.cooperative);
		} else {
			record("  attribute %d", a->id);
		}
	}
	return result;
}

int cuModuleUnload(void *module)
{
	(void)module;
	return SUCCESS;
}

int cuGetErrorName(int error, const char **name)
{
	*name = error == NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : error == INVALID_DEVICE
		? "CUDA_ERROR_INVALID_DEVICE" : "CUDA_ERROR_FAKE";
	return SUCCESS;
}

int cuGetErrorString(int error, const char **text)
{
	*text = error == INVALID_VALUE   ? "invalid argument"
		: error == NOT_SUPPORTED ? "operation not supported"
					 : "fake error";
	return SUCCESS;
}

/* NVRTC asks a loaded driver for its private tables; this one has none. */
int cuGetExportTable(const void **table, const void *id)
{
	(void)id;
	*table = NULL;
	return 801; /* CUDA_ERROR_NOT_SUPPORTED */
}
