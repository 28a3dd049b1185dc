#!/bin/bash
# gpu_test.sh - the examples' programs on a real GPU.  Each example is built
# through the cache cold, then in a fresh tree from hits, and once uncached
# (CJC_DISABLE); the programs built from hits must compute what the uncached
# ones compute.  Exits 125 (skipped) where no GPU is present; CI has none.
#
# Uses an installed prefix ($CJC_PREFIX) or installs $CJC_BUILD_DIR.

. "$(dirname "$0")/helpers.sh"
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "no GPU here: skipping" >&2
	exit 125
fi

# jit_cli's path is not a JIT setting: the library would warn of it
export -n CJC_JIT_CLI CJC_JIT_THREADS 2>/dev/null

oneTimeSetUp() {
	if [ -n "${CJC_PREFIX:-}" ]; then
		PREFIX=$CJC_PREFIX
	else
		PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/cjc-prefix.XXXXXX")
		cmake --install "${CJC_BUILD_DIR:?set CJC_PREFIX or CJC_BUILD_DIR}" --prefix "$PREFIX" >/dev/null || exit 1
	fi
	PACKAGE=$PREFIX/lib/cmake/CudaJitCache
}

# build_three SRC-DIR CMAKE-ARG...: trees cold/, warm/ (from hits), plain/ (uncached).
build_three() {
	local src=$1 tree
	shift
	for tree in cold warm plain; do
		[ $tree = plain ] && export CJC_DISABLE=1
		cmake -S "$src" -B "$TEST_DIR/$tree" -G Ninja -DCudaJitCache_DIR="$PACKAGE" "$@" \
			>"$TEST_DIR/$tree.log" 2>&1 && cmake --build "$TEST_DIR/$tree" >>"$TEST_DIR/$tree.log" 2>&1 ||
			{ cat "$TEST_DIR/$tree.log"; unset CJC_DISABLE; return 1; }
		unset CJC_DISABLE
	done
}

# same_run WHAT CMD...: runs CMD in the warm and the plain tree; same output, exit 0.
same_run() {
	local what=$1 warm plain
	shift
	warm=$(cd "$TEST_DIR/warm" && "$@" 2>&1)
	assertEquals "$what from hits: $warm" 0 $?
	plain=$(cd "$TEST_DIR/plain" && "$@" 2>&1)
	assertEquals "$what uncached: $plain" 0 $?
	echo "$what: $warm"
	assertEquals "$what: hits compute what an uncached build computes" "${plain//plain/TREE}" "${warm//warm/TREE}"
}

testCmakeAppRunsFromHits() {
	build_three "$CJC_SOURCE_DIR/examples/cmake-app" || fail
	expect_stat hits 2
	same_run cmake_app ./cmake_app
}

testAotFatbinCubinAndPtxRunFromHits() {
	build_three "$CJC_SOURCE_DIR/examples/aot-fatbin" || fail
	expect_stat hits 4
	same_run "saxpy.fatbin" ./aot_runner kernels/saxpy.fatbin
	same_run "saxpy.cubin" ./aot_runner kernels_cubin/saxpy.cubin
	same_run "saxpy.ptx" ./aot_runner kernels_ptx/saxpy.ptx
}

testMakeAppRunsFromHits() {
	local tree
	# two copies at two places: two checkouts, which share entries through
	# base_dir (docs/key.md), as the quick start builds them
	export CJC_BASE_DIR=$TEST_DIR
	for tree in cold warm plain; do
		cp -r "$CJC_SOURCE_DIR/examples/make-app" "$TEST_DIR/$tree"
		[ $tree = plain ] && export CJC_DISABLE=1
		make -C "$TEST_DIR/$tree" -j4 CJC="$MAKE_CJC" NVCC="$REAL_NVCC" \
			CJC_MK="$PREFIX/share/cudajitcache/cudajitcache.mk" >"$TEST_DIR/$tree.log" 2>&1 || fail "$tree"
		unset CJC_DISABLE
	done
	unset CJC_BASE_DIR
	expect_stat hits 3
	same_run make_app ./make_app
}

# -arch=native on a real GPU: keyed by what the toolkit's __nvcc_device_query
# says (soundness_test fakes the query; here it is the GPU's own answer).
testNativeArchIsTheGpuHere() {
	local cc query
	query=$(dirname "$(readlink -f "$REAL_NVCC")")/__nvcc_device_query
	cc=$("$query" | cut -d, -f1)
	# cjc asks the query beside the nvcc it runs: here, the counting wrapper
	ln -s "$query" "$TEST_DIR/bin/" || fail
	write_sources
	cjc_nvcc --cubin k.cu -o a.cubin -arch=native || fail
	cjc_nvcc --cubin k.cu -o b.cubin -arch=native || fail
	"$REAL_NVCC" --cubin k.cu -o plain.cubin -arch=sm_$cc || fail
	expect_nvcc_runs 1
	expect_stat hits 1
	assertTrue "the cubin for sm_$cc, as nvcc makes it" "cmp -s a.cubin plain.cubin"
	assertTrue "served: $(cat "$CJC_LOG")" "cmp -s b.cubin plain.cubin"
	expect_why b.cubin "hit: served from entry"
}

# The JIT's arch for a request without one: the device of the calling
# thread's current context (each GPU here in turn), else device 0's.
testJitArchIsTheCurrentDevices() {
	[ -x "${CJC_JIT_CLI:-}" ] || fail "CJC_JIT_CLI: set it to build/tests/jit_cli"
	local cc want said i=0 first=
	while read -r cc; do
		want=sm_${cc/./}
		[ "${cc%%.*}" -ge 9 ] && want=${want}a
		first=${first:-$want}
		said=$(env -u CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER=PCI_BUS_ID "$CJC_JIT_CLI" --device-arch $i --device-arch none)
		assertEquals "device $i, then device 0 without a context" "$i $want none $first" "$(echo $said)"
		i=$((i + 1))
	done < <(nvidia-smi --query-gpu=compute_cap --format=csv,noheader)
	assertTrue "nvidia-smi listed the GPUs" "[ $i -gt 0 ]"
}

# The Python package's launches that only a GPU can check
# (tests/python/gpu_launch.py, which runs alone too): a cluster, a
# cooperative grid sync and 100 KiB of dynamic shared memory.
testPythonLaunchesClustersCooperativeAndBigSharedMemory() {
	local out
	out=$("${PYTHON:-python3}" "$CJC_SOURCE_DIR/tests/python/gpu_launch.py" "$PREFIX" 2>&1)
	assertEquals "gpu_launch.py: $out" 0 $?
	echo "$out"
	assertNotContains "no launch failed" "$out" "FAIL"
	assertContains "the cooperative launch ran" "$out" "PASS cooperative"
}

# CMake 3.27 and newer compile fatbins with their own rule, through the launcher.
testCmakesOwnFatbinRuleIsCached() {
	if ! cmake_at_least 3.27; then
		echo "CMake $CMAKE_VERSION has no CUDA_FATBIN_COMPILATION: nothing to check"
		return
	fi
	mkdir -p own && cp "$CJC_SOURCE_DIR"/examples/aot-fatbin/kernels/* own/ && cat >own/CMakeLists.txt <<'EOF2'
cmake_minimum_required(VERSION 3.27)
project(own LANGUAGES CUDA)
find_package(CudaJitCache REQUIRED)
add_library(kern OBJECT saxpy.cu)
set_target_properties(kern PROPERTIES CUDA_FATBIN_COMPILATION ON CUDA_ARCHITECTURES "90")
cudajitcache_enable()
EOF2
	build_three own || fail
	expect_stat hits 1
	local fatbin
	fatbin=$(cd "$TEST_DIR/warm" && find . -path '*kern.dir*' -name '*.fatbin' | head -1)
	assertTrue "CMake made a fatbin: $fatbin" "[ -n '$fatbin' ]"
	cmake -S "$CJC_SOURCE_DIR/examples/aot-fatbin" -B "$TEST_DIR/runner" -G Ninja -DCudaJitCache_DIR="$PACKAGE" \
		>/dev/null 2>&1 && cmake --build "$TEST_DIR/runner" >/dev/null 2>&1 || fail "runner"
	same_run "CMake's own fatbin" "$TEST_DIR/runner/aot_runner" "$fatbin"
}

. "$SHUNIT2"
