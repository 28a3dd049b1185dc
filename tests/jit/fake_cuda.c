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
 *
 * A context is its device's ordinal + 1; each thread has its own current
 * one, as with the real driver.  Loading modules always fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { SUCCESS = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, NO_DEVICE = 100,
       INVALID_DEVICE = 101, INVALID_CONTEXT = 201 };

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
	(void)module;
	(void)image;
	return INVALID_VALUE;
}

int cuModuleGetFunction(void **function, void *module, const char *name)
{
	(void)function;
	(void)module;
	(void)name;
	return INVALID_VALUE;
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

/* NVRTC asks a loaded driver for its private tables; this one has none. */
int cuGetExportTable(const void **table, const void *id)
{
	(void)id;
	*table = NULL;
	return 801; /* CUDA_ERROR_NOT_SUPPORTED */
}
