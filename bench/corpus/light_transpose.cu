#include <cuda_runtime.h>
#include "light_transpose.h"

#define TILE 32

__global__ void transpose(const float *in, float *out, int w, int h)
{
	__shared__ float tile[TILE][TILE + 1];
	int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
	if (x < w && y < h)
		tile[threadIdx.y][threadIdx.x] = in[y * w + x];
	__syncthreads();
	x = blockIdx.y * TILE + threadIdx.x;
	y = blockIdx.x * TILE + threadIdx.y;
	if (x < h && y < w)
		out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}

void run_transpose(const float *in, float *out)
{
	dim3 grid(1024 / TILE, 1024 / TILE), block(TILE, TILE);
	transpose<<<grid, block>>>(in, out, 1024, LIGHT_TRANSPOSE_N / 1024);
}
