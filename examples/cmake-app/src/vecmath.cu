#include "vecmath.h"

__global__ static void saxpy_kernel(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

cudaError_t vecmath_saxpy(int n, float a, const float *x, float *y)
{
	saxpy_kernel<<<(n + VECMATH_BLOCK - 1) / VECMATH_BLOCK, VECMATH_BLOCK>>>(n, a, x, y);
	return cudaGetLastError();
}
