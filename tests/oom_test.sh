#!/bin/bash
# The libraries never end their host program for want of memory
# (src/lib/base/oom.h; docs/jit.md, "Out of memory").  tests/jit/oom_sweep.c
# fails the allocations libcudajitcache makes during a call, one at a time,
# and checks each call comes back with the right bytes or "out of memory",
# and that the handle then still serves the right bytes.
. "$(dirname "$0")/helpers.sh"
: "${CJC_OOM_SWEEP:?set CJC_OOM_SWEEP to build/tests/oom_sweep}"

# sweep COMPILER MODE STRIDE, or sweep shim SONAME STRIDE (through `cjc run`)
sweep() {
	local compiler=$1
	if [ "$1" = shim ]; then
		set -- "$CJC" run -- "$CJC_OOM_SWEEP" "$@"
	else
		shift
		set -- "$CJC_OOM_SWEEP" "$@"
	fi
	# a lock left held would hang it: bounded; what abandoned calls had
	# allocated is leaked by design (oom.h), which LeakSanitizer would count
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		OOMTEST_JIT_CACHE_DIR=$CJC_DIR OOMTEST_JIT_COMPILER=$compiler timeout 600 "$@" \
		>"$TEST_DIR/sweep.out" 2>"$TEST_DIR/sweep.err"
	local rc=$?
	cat "$TEST_DIR/sweep.out"
	head -20 "$TEST_DIR/sweep.err" >&2
	assertEquals "the sweep ($compiler) came back whole" 0 "$rc"
	# at least a few allocations were failed: the sweep itself works
	local failed
	failed=$(sed -n 's/^[a-z]*: \([0-9]*\) allocations failed.*/\1/p' "$TEST_DIR/sweep.out")
	assertTrue "allocations were failed ($failed)" "[ '${failed:-0}' -ge 4 ]"
	"$CJC" verify >"$TEST_DIR/verify.out" 2>&1
	assertEquals "the store is sound after the sweep: $(tail -3 "$TEST_DIR/verify.out")" 0 $?
}

testAllocationsOfAStoreHitCanFail() {
	sweep nvcc hit 2
}

testAllocationsOfAnNvrtcMissCanFail() {
	have_nvrtc || fail "no NVRTC"
	sweep nvrtc miss 5
}

testAllocationsOfAnNvccMissCanFail() {
	sweep nvcc miss 2999
}

# NVRTC's soname, as a program dlopen's it: the loader's, else the toolkit's
# beside nvcc (which may be a wrapper script elsewhere: have_nvrtc).
nvrtc_soname() {
	local root lib soname
	soname=$(ldconfig -p | awk '$1 ~ /^libnvrtc\.so\.[0-9]+$/ { print $1; exit }')
	if [ -z "$soname" ]; then
		root=$(dirname "$(dirname "$(readlink -f "$REAL_NVCC")")")
		lib=$(ls "$root"/lib64/libnvrtc.so "$root"/lib/libnvrtc.so 2>/dev/null | head -1)
		[ -n "$lib" ] && soname=$(objdump -p "$lib" | awk '/SONAME/ { print $2 }')
	fi
	echo "$soname"
}

testAllocationsOfTheNvrtcShimCanFail() {
	have_nvrtc || fail "no NVRTC"
	sweep shim "$(nvrtc_soname)" 1
	# the shim answered: the sweep's compiles were counted
	assertTrue "the shim compiled ($(stat_value misses) misses)" "[ '$(stat_value misses)' -ge 4 ]"
}

. "$SHUNIT2"
