/* stencil.h - shared by the library and the program. */
#pragma once
#include <cuda_runtime.h>

#define STENCIL_RADIUS 2
#define STENCIL_BLOCK 128

/* out[i] = sum of in[i-R .. i+R] (zero outside); returns the CUDA status. */
cudaError_t stencil_sum(int n, const int *in, int *out);
