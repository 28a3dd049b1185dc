/* vecmath.h - shared by the library and the program. */
#pragma once
#include <cuda_runtime.h>

#define VECMATH_BLOCK 256

/* y[i] = a * x[i] + y[i] on the device; returns the CUDA status. */
cudaError_t vecmath_saxpy(int n, float a, const float *x, float *y);

__device__ inline float vecmath_square(float v) { return v * v; }
