#include <cuda_runtime.h>
#include "light_stencil.h"

#define RADIUS 3

__global__ void stencil(const float *in, float *out, int n)
{
	__shared__ float tile[LIGHT_STENCIL_BLOCK + 2 * RADIUS];
	int g = blockIdx.x * blockDim.x + threadIdx.x;
	int l = threadIdx.x + RADIUS;
	tile[l] = g < n ? in[g] : 0.0f;
	if (threadIdx.x < RADIUS) {
		tile[l - RADIUS] = g >= RADIUS ? in[g - RADIUS] : 0.0f;
		tile[l + LIGHT_STENCIL_BLOCK] = g + LIGHT_STENCIL_BLOCK < n ? in[g + LIGHT_STENCIL_BLOCK] : 0.0f;
	}
	__syncthreads();
	float s = 0.0f;
	for (int k = -RADIUS; k <= RADIUS; k++)
		s += tile[l + k];
	if (g < n)
		out[g] = s;
}

void run_stencil(const float *in, float *out)
{
	stencil<<<LIGHT_STENCIL_N / LIGHT_STENCIL_BLOCK, LIGHT_STENCIL_BLOCK>>>(in, out, LIGHT_STENCIL_N);
}
