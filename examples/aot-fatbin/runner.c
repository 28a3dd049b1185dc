/*
 * aot_runner - loads a saxpy fatbin (or cubin, or ptx) built ahead of time,
 * runs it with the CUDA driver API and checks every element on the host.
 *
 *     aot_runner [MODULE-FILE]
 *
 * Exit 0 when every number is right, 1 when one is wrong, 2 without a GPU.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "params.h"

static int check(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return 0;
	const char *name = "unknown";
	cuGetErrorName(r, &name);
	fprintf(stderr, "aot_runner: %s: %s\n", what, name);
	return 1;
}

static void *read_module(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *data = malloc((size_t)n + 1);
	if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
		free(data);
		data = NULL;
	}
	if (data)
		data[n] = '\0'; /* ptx is loaded as text */
	fclose(f);
	return data;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : AOT_DEFAULT_MODULE;
	void *image = read_module(path);
	if (!image)
		return fprintf(stderr, "aot_runner: cannot read %s\n", path), 1;
	CUdevice dev;
	CUcontext ctx;
	char name[128];
	if (check(cuInit(0), "cuInit") || check(cuDeviceGet(&dev, 0), "cuDeviceGet"))
		return 2;
	cuDeviceGetName(name, sizeof name, dev);
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr dx, dy;
	size_t bytes = AOT_N * sizeof(float);
	float *x = malloc(bytes), *y = malloc(bytes);
	for (int i = 0; i < AOT_N; i++)
		x[i] = (float)(i % 1000), y[i] = 1.0f;
	if (check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
	    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
	    check(cuModuleLoadData(&mod, image), "cuModuleLoadData") ||
	    check(cuModuleGetFunction(&fn, mod, "saxpy"), "cuModuleGetFunction") ||
	    check(cuMemAlloc(&dx, bytes), "cuMemAlloc") || check(cuMemAlloc(&dy, bytes), "cuMemAlloc") ||
	    check(cuMemcpyHtoD(dx, x, bytes), "cuMemcpyHtoD") || check(cuMemcpyHtoD(dy, y, bytes), "cuMemcpyHtoD"))
		return 1;
	int n = AOT_N;
	float a = AOT_A;
	void *args[] = { &n, &a, &dx, &dy };
	if (check(cuLaunchKernel(fn, (AOT_N + AOT_BLOCK - 1) / AOT_BLOCK, 1, 1, AOT_BLOCK, 1, 1, 0, NULL,
				 args, NULL), "cuLaunchKernel") ||
	    check(cuMemcpyDtoH(y, dy, bytes), "cuMemcpyDtoH"))
		return 1;
	int bad = 0;
	double sum = 0;
	for (int i = 0; i < AOT_N; i++) {
		bad += y[i] != AOT_A * (float)(i % 1000) + 1.0f;
		sum += y[i];
	}
	printf("aot_runner: %s on %s: %d elements, %d wrong, checksum %.1f\n", path, name, AOT_N, bad, sum);
	cuDevicePrimaryCtxRelease(dev);
	return bad != 0;
}
