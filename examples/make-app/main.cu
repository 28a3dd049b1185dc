/* make_app: a 1-D stencil from the library, checked on the host. */
#include <cstdio>
#include <vector>

#include "stencil.h"

int main()
{
	const int n = 10000;
	std::vector<int> in(n), out(n);
	for (int i = 0; i < n; i++)
		in[i] = i % 7;
	int *din, *dout;
	if (cudaMalloc(&din, n * sizeof(int)) != cudaSuccess ||
	    cudaMalloc(&dout, n * sizeof(int)) != cudaSuccess) {
		std::fprintf(stderr, "make_app: no usable GPU\n");
		return 2;
	}
	cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice);
	if (stencil_sum(n, din, dout) != cudaSuccess)
		return std::fprintf(stderr, "make_app: stencil failed\n"), 1;
	cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost);
	int bad = 0;
	long sum = 0;
	for (int i = 0; i < n; i++) {
		int want = 0;
		for (int k = -STENCIL_RADIUS; k <= STENCIL_RADIUS; k++)
			if (i + k >= 0 && i + k < n)
				want += in[i + k];
		bad += out[i] != want;
		sum += out[i];
	}
	std::printf("make_app: %d elements, %d wrong, checksum %ld\n", n, bad, sum);
	return bad != 0;
}
