#include <cub/block/block_reduce.cuh>
#include "medium_block_reduce.h"

__global__ void block_sums(const int *in, int *out)
{
	using Reduce = cub::BlockReduce<int, MEDIUM_BLOCK_REDUCE_BLOCK>;
	__shared__ typename Reduce::TempStorage tmp;
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int sum = Reduce(tmp).Sum(in[i]);
	if (threadIdx.x == 0)
		out[blockIdx.x] = sum;
}

void run_block_sums(const int *in, int *out)
{
	block_sums<<<MEDIUM_BLOCK_REDUCE_N / MEDIUM_BLOCK_REDUCE_BLOCK, MEDIUM_BLOCK_REDUCE_BLOCK>>>(in, out);
}
