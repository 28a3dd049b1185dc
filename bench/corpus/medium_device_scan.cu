#include <cub/device/device_scan.cuh>
#include "medium_device_scan.h"

cudaError_t run_scan(const int *in, int *out, void *tmp, size_t tmp_bytes)
{
	return cub::DeviceScan::InclusiveSum(tmp, tmp_bytes, in, out, MEDIUM_DEVICE_SCAN_N);
}
