/* cmake_app: saxpy from the library, then squares with the program's own
 * kernel; checks every number on the host and prints one line. */
#include <cstdio>
#include <vector>

#include "app_config.h"
#include "vecmath.h"

__global__ static void square_kernel(int n, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = vecmath_square(y[i]);
}

int main()
{
	std::vector<float> x(APP_N), y(APP_N);
	for (int i = 0; i < APP_N; i++)
		x[i] = (float)i, y[i] = 1.0f;
	float *dx, *dy;
	if (cudaMalloc(&dx, APP_N * sizeof(float)) != cudaSuccess ||
	    cudaMalloc(&dy, APP_N * sizeof(float)) != cudaSuccess) {
		std::fprintf(stderr, "cmake_app: no usable GPU\n");
		return 2;
	}
	cudaMemcpy(dx, x.data(), APP_N * sizeof(float), cudaMemcpyHostToDevice);
	cudaMemcpy(dy, y.data(), APP_N * sizeof(float), cudaMemcpyHostToDevice);
	if (vecmath_saxpy(APP_N, APP_A, dx, dy) != cudaSuccess)
		return std::fprintf(stderr, "cmake_app: saxpy failed\n"), 1;
	square_kernel<<<(APP_N + VECMATH_BLOCK - 1) / VECMATH_BLOCK, VECMATH_BLOCK>>>(APP_N, dy);
	cudaMemcpy(y.data(), dy, APP_N * sizeof(float), cudaMemcpyDeviceToHost);
	int bad = 0;
	double sum = 0;
	for (int i = 0; i < APP_N; i++) {
		float want = (APP_A * i + 1.0f) * (APP_A * i + 1.0f);
		bad += y[i] != want;
		sum += y[i];
	}
	std::printf("cmake_app: %d elements, %d wrong, checksum %.1f\n", APP_N, bad, sum);
	return bad != 0;
}
