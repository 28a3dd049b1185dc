#!/bin/bash
# clients_test.sh - real clients' command lines through the cache, as their
# sources write them (docs/recipes.md names the revision read).
#
# DeepGEMM's nvcc JIT (deepseek-ai/DeepGEMM csrc/jit/compiler.hpp) writes
# each kernel's source into a directory of its cache and compiles it by
# absolute path with its own flags; a fresh cache directory (a CI job, a
# container, another user's ~/.deep_gemm) compiles the same kernel again.

. "$(dirname "$0")/helpers.sh"

# A stand-in for DeepGEMM's include directory (site-packages/deep_gemm/include):
# a template the generated kernel.cu instantiates.
deepgemm_library() {
	mkdir -p "$TEST_DIR/lib/include/dg"
	echo 'template <int N> __global__ void scale(float *x) { x[threadIdx.x] *= N; }' \
		>"$TEST_DIR/lib/include/dg/k.cuh"
	touch -d '1 minute ago' "$TEST_DIR/lib/include/dg/k.cuh"
}

# DeepGEMM's flags for sm_90 with nvcc 13 (NVCCCompiler's constructor).
deepgemm_flags() {
	echo -std=c++20 --diag-suppress=39,161,174,177,186,940 \
		--ptxas-options=--register-usage-level=10 "-I$TEST_DIR/lib/include" --gpu-architecture=sm_90a \
		--compiler-options=-fPIC,-O3,-fconcepts,-Wno-deprecated-declarations,-Wno-abi \
		-O3 --expt-relaxed-constexpr --expt-extended-lambda
}

# put_kernel DIR: the generated source, DIR/kernel.cu (stamped a minute back
# so that its first compile publishes).
put_kernel() {
	mkdir -p "$1" && printf '#include <dg/k.cuh>\ntemplate __global__ void scale<3>(float *);\n' >"$1/kernel.cu" &&
		touch -d '1 minute ago' "$1/kernel.cu"
}

# DeepGEMM 6439a3d7: the source in <cache>/cache/kernel.NAME.HASH/ (the hash
# of the code and flags), the cubin to <cache>/tmp/<uuid>, from the
# process's working directory.  Two jobs, each with its own cache.
testDeepGemmFreshCacheDirectoryHits() {
	deepgemm_library
	local job src
	for job in job1 job2; do
		src=$TEST_DIR/$job/.deep_gemm/cache/kernel.scale.0123abcd
		put_kernel "$src" || fail put_kernel
		mkdir -p "$TEST_DIR/$job/.deep_gemm/tmp" "$TEST_DIR/$job/work"
		# shellcheck disable=SC2046 # the flags are words
		(cd "$TEST_DIR/$job/work" &&
			cjc_nvcc "$src/kernel.cu" -o "../.deep_gemm/tmp/$(cat /proc/sys/kernel/random/uuid)" $(deepgemm_flags) -cubin &&
			"$REAL_NVCC" "$src/kernel.cu" -o plain.cubin $(deepgemm_flags) -cubin) || fail "compile in $job"
	done
	expect_stat hits 1
	expect_nvcc_runs 1
	assert_same_devcode "$(ls "$TEST_DIR"/job2/.deep_gemm/tmp/*)" "$TEST_DIR/job2/work/plain.cubin"
}

# DeepGEMM 06a6ae2e: `cd <cache>/tmp && nvcc <cache>/tmp/<uuid>/kernel.cu
# -cubin -o <cache>/tmp/<uuid>/kernel.cubin FLAGS`.  Every path is absolute,
# so the working directory bears on nothing read and the root is the
# source's own directory (docs/key.md): the second uuid directory is served
# what plain nvcc makes there.
testDeepGemmUuidDirectoryHits() {
	deepgemm_library
	local uuid tmp=$TEST_DIR/.deep_gemm/tmp
	for uuid in 5d1c7a52-0f0e-4a43-9a8e-1b6c2f0e7d11 9b2e4f63-7c1d-4e5a-8f2b-3a4d5c6e7f80; do
		put_kernel "$tmp/$uuid" || fail mkdir
		# shellcheck disable=SC2046 # the flags are words
		(cd "$tmp" && cjc_nvcc "$tmp/$uuid/kernel.cu" -cubin -o "$tmp/$uuid/kernel.cubin" $(deepgemm_flags) &&
			"$REAL_NVCC" "$tmp/$uuid/kernel.cu" -cubin -o "$tmp/$uuid/plain.cubin" $(deepgemm_flags)) ||
			fail "compile in $uuid"
		assert_same_devcode "$tmp/$uuid/kernel.cubin" "$tmp/$uuid/plain.cubin"
	done
	expect_stat hits 1
	expect_nvcc_runs 1
	local said
	said=$(cd "$tmp" && "$CJC" why "$tmp/$uuid/kernel.cu")
	assertContains "$said" "$said" "root: $tmp/$uuid"
}

# The same with a relative -I: the working directory bears on what is
# read, so it stays under the root, and another uuid directory below it is
# compiled again.
testRelativePathKeepsTheWorkingDirectoryUnderTheRoot() {
	deepgemm_library
	local uuid tmp=$TEST_DIR/.deep_gemm/tmp
	mkdir -p "$tmp" && ln -s "$TEST_DIR/lib/include" "$TEST_DIR/.deep_gemm/inc"
	for uuid in 5d1c7a52-0f0e-4a43-9a8e-1b6c2f0e7d11 9b2e4f63-7c1d-4e5a-8f2b-3a4d5c6e7f80; do
		put_kernel "$tmp/$uuid" || fail mkdir
		# shellcheck disable=SC2046 # the flags are words
		(cd "$tmp" && cjc_nvcc "$tmp/$uuid/kernel.cu" -cubin -o "$tmp/$uuid/kernel.cubin" -I../inc \
			$(deepgemm_flags)) || fail "compile in $uuid"
	done
	expect_stat hits 0
	expect_nvcc_runs 2
}

. "$SHUNIT2"
