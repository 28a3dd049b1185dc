#include "params.h"

/* Sums x into *out, one atomic per block. */
extern "C" __global__ void reduce_sum(int n, const float *x, float *out)
{
	__shared__ float part[AOT_BLOCK];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	part[threadIdx.x] = i < n ? x[i] : 0.0f;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s /= 2) {
		if (threadIdx.x < s)
			part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, part[0]);
}
