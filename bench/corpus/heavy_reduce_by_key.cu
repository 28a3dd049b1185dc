#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>
#include "heavy_reduce_by_key.h"

size_t run_group_sums(thrust::device_vector<int> &keys, thrust::device_vector<float> &vals,
		      thrust::device_vector<int> &out_keys, thrust::device_vector<float> &out_vals)
{
	thrust::sort_by_key(keys.begin(), keys.end(), vals.begin());
	auto end = thrust::reduce_by_key(keys.begin(), keys.end(), vals.begin(), out_keys.begin(),
					 out_vals.begin());
	return end.first - out_keys.begin();
}
