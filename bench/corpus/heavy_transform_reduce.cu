#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/transform_reduce.h>
#include "heavy_transform_reduce.h"

struct square {
	__host__ __device__ float operator()(float x) const { return x * x; }
};

float run_norm2(const thrust::device_vector<float> &v)
{
	return thrust::transform_reduce(v.begin(), v.end(), square(), 0.0f, thrust::plus<float>());
}
