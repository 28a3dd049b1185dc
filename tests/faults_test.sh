#!/bin/bash
# faults_test.sh - SPEC §4 under failure: I/O errors injected into cjc's own
# calls on the store (tests/fault/faultinject.c, by LD_PRELOAD), reads cut
# short, and writers killed with SIGKILL at random instants.  Every build
# still succeeds with the right output, and no bad entry becomes visible.

. "$(dirname "$0")/helpers.sh"
: "${CJC_FAULTINJECT:?set CJC_FAULTINJECT to faultinject.so}"
# A sanitized cjc must accept a preloaded library ahead of its runtime.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

oneTimeSetUp() {
	use_suite_dir faults
	# One store that knows the compilers but not this compile, one that has it.
	export NVCC_LOG=/dev/null
	CJC_DIR="$SUITE_DIR/empty" "$CJC" "$NVCC" -c k.cu -o other.o -arch=$ARCH -DOTHER
	cp -a "$SUITE_DIR/empty" "$SUITE_DIR/full"
	CJC_DIR="$SUITE_DIR/full" "$CJC" "$NVCC" -c k.cu -o good.o -arch=$ARCH
	HOST=$(uname -n | tr './' '__')
	POINTS=0
}

oneTimeTearDown() {
	echo "fault points checked: $POINTS"
	rm -rf "$SUITE_DIR"
}

# use_store NAME TEMPLATE: a fresh copy of a template store, with the staging
# of another, live writer (this shell) that nothing may remove.
use_store() {
	export CJC_DIR="$SUITE_DIR/$1" CJC_LOG="$SUITE_DIR/$1.log" NVCC_LOG="$SUITE_DIR/$1.nvcc"
	rm -rf "$CJC_DIR" && cp -a "$SUITE_DIR/$2" "$CJC_DIR"
	LIVE=$(echo "$CJC_DIR"/v1/*/staging)/s.$HOST.$$.0000live
	mkdir "$LIVE"
}

# faulted ARGS...: cjc with the fault of $FAULT injected.
faulted() {
	CJC_FAULT=$FAULT CJC_FAULT_DIR=$CJC_DIR CJC_FAULT_FIRED="$CJC_DIR.fired" \
		LD_PRELOAD=$CJC_FAULTINJECT "$CJC" "$@"
}

# The state every fault must leave: right output, no bad entry, only the
# live writer's staging, and a logged reason when the fault fired.
check_aftermath() {
	local what=$1 out=$2
	assert_same_devcode good.o "$out"
	"$CJC" verify >/dev/null || fail "$what: a bad entry is visible"
	assertTrue "$what: another writer's staging kept" "[ -d '$LIVE' ]"
	assertEquals "$what: only the other writer's staging left" 1 \
		"$(find "$CJC_DIR"/v1/*/staging -mindepth 1 -maxdepth 1 | wc -l)"
	if [ -s "$CJC_DIR.fired" ]; then
		assertTrue "$what: the failure is logged" "grep -Eq '$ERRTEXT' '$CJC_LOG'"
	fi
}

testEveryFaultPointAndErrnoStillBuilds() {
	local op err nth
	for op in mkdir write fsync rename; do
		for err in EIO ENOSPC; do
			[ $err = EIO ] && ERRTEXT='Input/output error' || ERRTEXT='No space left on device'
			for nth in 1 2 3 0; do
				FAULT=$op:$err:$nth
				use_store "$op-$err-$nth" empty
				faulted "$NVCC" -c k.cu -o "$op-$err-$nth.o" -arch=$ARCH || fail "$FAULT: the build broke"
				check_aftermath "$FAULT" "$op-$err-$nth.o"
				[ -s "$CJC_DIR.fired" ] && POINTS=$((POINTS + 1))
				if [ -s "$CJC_DIR.fired" ] && [ "$(stat_value errors)" -lt 1 ] && [ $op != write ]; then
					fail "$FAULT: the failure is not counted"
				fi
			done
			# Once the disk is well again, the store works.
			unset FAULT
			cjc_nvcc -c k.cu -o healed.o -arch=$ARCH || fail
			cjc_nvcc -c k.cu -o healed2.o -arch=$ARCH || fail
			assert_same_devcode good.o healed2.o
			expect_stat hits 1
		done
	done
	assertTrue "most fault points fired" "[ $POINTS -ge 24 ]"
}

testReadCutShortIsAMiss() {
	use_store cut full
	FAULT=read:EOF:1 faulted "$NVCC" -c k.cu -o cut.o -arch=$ARCH || fail "the build broke"
	ERRTEXT=.
	check_aftermath "read:EOF" cut.o
	assertEquals "nvcc compiled" 1 "$(nvcc_compiles)"
	expect_stat damaged 1
	assertTrue "reason logged" "grep -q 'output.o has 0 bytes' '$CJC_LOG'"
}

testReadErrorIsAMiss() {
	use_store readerr full
	FAULT=read:EIO:1 faulted "$NVCC" -c k.cu -o readerr.o -arch=$ARCH || fail "the build broke"
	ERRTEXT='Input/output error'
	check_aftermath "read:EIO" readerr.o
	assertEquals "nvcc compiled" 1 "$(nvcc_compiles)"
}

testKilledWritersLeaveNothingBad() {
	local i delay pid published=0 killed=0
	for i in $(seq 20); do
		use_store "kill-$i" empty
		# Publication made slow (20 ms per call on the store) so kills land in it too.
		CJC_FAULT=slow:- CJC_FAULT_DIR=$CJC_DIR LD_PRELOAD=$CJC_FAULTINJECT \
			"$CJC" "$NVCC" -c k.cu -o "kill-$i.o" -arch=$ARCH 2>/dev/null &
		pid=$!
		delay=$(awk -v s="$i" 'BEGIN { srand(s * 7919); printf "%.2f", 0.5 + rand() * 1.5 }')
		sleep "$delay"
		kill -9 $pid 2>/dev/null && killed=$((killed + 1))
		wait $pid 2>/dev/null
		"$CJC" verify >/dev/null || fail "kill $i after ${delay}s: a bad entry is visible"
		[ "$(entry_count)" = 1 ] && published=$((published + 1))
		"$CJC" gc >/dev/null || fail
		assertTrue "kill $i: other writer's staging kept" "[ -d '$LIVE' ]"
		assertEquals "kill $i: the dead writer's staging reclaimed" 1 \
			"$(find "$CJC_DIR"/v1/*/staging -mindepth 1 -maxdepth 1 | wc -l)"
		cjc_nvcc -c k.cu -o "after-$i.o" -arch=$ARCH || fail
		assert_same_devcode good.o "after-$i.o"
	done
	sleep 2 # orphaned nvcc processes finish
	echo "writers killed: $killed of 20; entries published before the kill: $published"
	assertTrue "some kills landed" "[ $killed -ge 10 ]"
}

. "$SHUNIT2"
