#!/bin/bash
# pathfree_test.sh - path-free keys (SPEC.md 15, docs/key.md): the same
# sources compiled by absolute path from a second random directory (pip's
# /tmp/pip-req-build-XXXX) hit with no setting where no path can reach the
# output, and stay exact, each directory getting what plain nvcc makes
# there, where one can: __FILE__, assert, -lineinfo, -G, and the
# _INTERNAL_ prefix nvcc derives from the source's absolute path (also
# under base_dir).

. "$(dirname "$0")/helpers.sh"

# checkout SOURCE: a fresh random directory (mktemp -d) with k.cu holding
# SOURCE (printf's %b), inc/h.h and an empty build/; its files stamped a
# minute back, so that the first compile publishes (miss.c).  Prints it.
checkout() {
	local d
	d=$(mktemp -d "$TEST_DIR/${CHECKOUT_NAME:-pip-req-build}-XXXXXXXX")
	mkdir -p "$d/inc" "$d/build"
	printf '%b' "$1" >"$d/k.cu"
	echo '#define H 3' >"$d/inc/h.h"
	touch -d '1 minute ago' "$d/k.cu" "$d/inc/h.h"
	echo "$d"
}

# compile_both KIND SOURCE [NVCC-ARG...]: SOURCE in two random directories,
# each compiled (-c or -cubin) through the cache from its build/ by
# absolute paths, as pip does, to k.EXT, and by plain nvcc beside it
# (plain.EXT; EXT: o or cubin); sets FIRST and SECOND.
compile_both() {
	local kind=$1 source=$2 d ext
	shift 2
	ext=$(ext_of "$kind")
	FIRST=$(checkout "$source")
	SECOND=$(checkout "$source")
	for d in "$FIRST" "$SECOND"; do
		(cd "$d/build" &&
			cjc_nvcc "-$kind" "$d/k.cu" -I"$d/inc" -arch="$ARCH" -o "k.$ext" "$@" &&
			"$REAL_NVCC" "-$kind" "$d/k.cu" -I"$d/inc" -arch="$ARCH" -o "plain.$ext" "$@") ||
			fail "compile in $d"
	done
}

# expect_exact KIND SOURCE [NVCC-ARG...]: both directories compile, and
# each gets what plain nvcc makes there.
ext_of() { if [ "$1" = c ]; then echo o; else echo "$1"; fi; }

expect_exact() {
	local ext
	ext=$(ext_of "$1")
	compile_both "$@"
	expect_stat misses 2
	expect_stat hits 0
	expect_nvcc_runs 2
	assert_same_devcode "$FIRST/build/k.$ext" "$FIRST/build/plain.$ext"
	assert_same_devcode "$SECOND/build/k.$ext" "$SECOND/build/plain.$ext"
}

PLAIN='#include "h.h"\n__global__ void k(int *p) { p[0] = H; }\n'

testSecondRandomDirectoryHits() {
	compile_both c "$PLAIN" -MD
	expect_stat misses 1
	expect_stat hits 1
	expect_nvcc_runs 1
	assert_same_devcode "$SECOND/build/k.o" "$SECOND/build/plain.o"
	assertTrue "the dependency file names this directory's header: $(cat "$SECOND/build/k.d")" \
		"grep -qF '$SECOND/inc/h.h' '$SECOND/build/k.d'"
	assertFalse "the dependency file names the first directory" \
		"grep -qF '$FIRST' '$SECOND/build/k.d'"
	local said
	said=$(cd "$SECOND/build" && "$CJC" why "$SECOND/k.cu")
	assertContains "$said" "$said" "paths keyed relative to the root"
}

# A path value that names "debug" asks for no debug information.
testDirectoryNamedDebugHits() {
	CHECKOUT_NAME=cmake-build-debug compile_both cubin "$PLAIN"
	expect_stat hits 1
	assert_same_devcode "$SECOND/build/k.cubin" "$SECOND/build/plain.cubin"
}

testFileMacroStaysExact() {
	expect_exact cubin '__global__ void k(const char **p) { p[0] = __FILE__; }\n'
}

# A __FILE__ pasted together (no text names __FILE__; the preprocessor
# writes the path into the code it compiles), in the source or through a
# header's macro, and a __builtin_FILE the preprocessor leaves as it is.
testPastedFileMacroStaysExact() {
	expect_exact cubin '#define CAT(a, b) a##b\n__device__ const char tag[] = CAT(__FI, LE__);\n__global__ void k(const char **p) { *p = tag; }\n'
	local said
	said=$(cd "$SECOND/build" && "$CJC" why "$SECOND/build/k.cubin")
	assertContains "why says so: $said" "$said" "the preprocessor wrote the directory"
}

testAssertStaysExact() {
	expect_exact cubin '#include <cassert>\n#include "h.h"\n__global__ void k(int *p) { assert(p[0] == H); }\n'
}

testLineInfoStaysExact() {
	expect_exact cubin "$PLAIN" -lineinfo
}

# A macro that names __FILE__ under a condition that does not hold (as GCC
# 13's libstdc++ defines __glibcxx_assert under _GLIBCXX_ASSERTIONS): the
# text rule cannot tell, the preprocessor can (miss.h), for the device
# code and the host code alike; where the condition holds, it stays exact.
GUARDED='#ifdef GUARD_ON\n#define WHERE __FILE__\n#else\n#define WHERE "off"\n#endif\n#ifndef __CUDA_ARCH__\n#ifdef HOST_ON\nconst char *host_file = __FILE__;\n#endif\n#endif\n#include "h.h"\n__global__ void k(const char **p) { p[0] = WHERE; }\n'

testFileMacroInDeadBranchHits() {
	compile_both c "$GUARDED"
	expect_stat misses 1
	expect_stat hits 1
	expect_nvcc_runs 1
	assertEquals "the device and the host code preprocessed" 2 "$(nvcc_preprocesses)"
	assert_same_devcode "$SECOND/build/k.o" "$SECOND/build/plain.o"
}

testFileMacroInLiveBranchStaysExact() {
	expect_exact c "$GUARDED" -DGUARD_ON
}

testFileMacroInHostCodeStaysExact() {
	expect_exact c "$GUARDED" -DHOST_ON
	assertTrue "the host code names the second directory" \
		"strings '$SECOND/build/k.o' | grep -qF '$SECOND/k.cu'"
}

# -G's output differs run to run (verify.h skips it): only the misses.
testDeviceDebugStaysExact() {
	compile_both cubin "$PLAIN" -G
	expect_stat misses 2
	expect_stat hits 0
}

INTERNAL='namespace { __device__ __noinline__ int twice(int x) { return 2 * x; } }\n__global__ void k(int *p) { p[0] = twice(p[0]); }\n'

testInternalSymbolStaysExact() {
	expect_exact c "$INTERNAL"
	local said
	said=$(cd "$SECOND/build" && "$CJC" why "$SECOND/k.cu")
	assertContains "$said" "$said" "paths kept exact: the output names an _INTERNAL_ symbol"
}

# base_dir: two checkouts under it, compiled by relative paths; the second
# must not be served the first's _INTERNAL_ prefix, while a kernel without
# one is still shared.
compile_under_base_dir() {
	export CJC_BASE_DIR=$TEST_DIR
	FIRST=$(checkout "$1")
	SECOND=$(checkout "$1")
	local d
	for d in "$FIRST" "$SECOND"; do
		(cd "$d" && cjc_nvcc -c k.cu -Iinc -arch="$ARCH" -o k.o &&
			"$REAL_NVCC" -c k.cu -Iinc -arch="$ARCH" -o plain.o) || fail "compile in $d"
	done
}

testBaseDirKeepsInternalSymbolExact() {
	compile_under_base_dir "$INTERNAL"
	expect_stat misses 2
	expect_stat hits 0
	assert_same_devcode "$SECOND/k.o" "$SECOND/plain.o"
}

testBaseDirSharesWithoutInternalSymbol() {
	compile_under_base_dir "$PLAIN"
	expect_stat hits 1
	assert_same_devcode "$SECOND/k.o" "$SECOND/plain.o"
}

. "$SHUNIT2"
