#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include "saxpy.h"

struct square {
	__host__ __device__ float operator()(float v) const { return v * v; }
};

float sum_of_sorted_squares(const float *data, int n)
{
	thrust::device_vector<float> v(data, data + n);
	thrust::transform(v.begin(), v.end(), v.begin(), square());
	thrust::sort(v.begin(), v.end());
	return thrust::reduce(v.begin(), v.end(), 0.0f) + SAXPY_BLOCK * 0;
}
