#!/bin/bash
# races_test.sh - docs/store.md under concurrency: writers of one key collide at
# publication (a barrier holds every nvcc until all have compiled), the first
# valid writer wins, every build succeeds with the same output, and nothing
# is left half-written.  The compiles are --cubin: no host compile, and an
# entry like any other.

. "$(dirname "$0")/helpers.sh"

# Runs "$@" in N background copies (the copy's number replaces {}), waits, and
# returns how many failed.
parallel() {
	local n=$1 i pids=() failed=0
	shift
	for i in $(seq "$n"); do
		"${@//\{\}/$i}" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || failed=$((failed + 1)); done
	return $failed
}

staging_left() {
	find "$CJC_DIR"/v1/*/staging -mindepth 1 -maxdepth 1 | wc -l
}

testEightWritersOfOneKeyPublishOnce() {
	# without leases, all eight compile (a lease would hold seven back)
	local -x CJC_LEASE_WAIT=0
	make_barrier_nvcc 8
	parallel 8 "$CJC" "$TEST_DIR/bin/nvcc-barrier" --cubin k.cu -o out{}.cubin -arch=$ARCH ||
		fail "a build failed"
	assertEquals "nvcc compiled 8 times" 8 "$(nvcc_compiles)"
	assertEquals "one entry" 1 "$(entry_count)"
	assertEquals "no staging left" 0 "$(staging_left)"
	local i
	for i in 2 3 4 5 6 7 8; do assert_same_devcode out1.cubin out$i.cubin; done
	assertEquals "the losers said so" 7 "$(grep -c 'already published' "$CJC_LOG")"
	"$CJC" verify >/dev/null || fail "the entry verifies"
	expect_stat misses 8
	expect_stat errors 0
}

testMixedKeysGiveTwoEntries() {
	local -x CJC_LEASE_WAIT=0
	make_barrier_nvcc 8
	parallel 4 "$CJC" "$TEST_DIR/bin/nvcc-barrier" --cubin k.cu -o a{}.cubin -arch=$ARCH -DVARIANT=1 &
	local a=$!
	parallel 4 "$CJC" "$TEST_DIR/bin/nvcc-barrier" --cubin k.cu -o b{}.cubin -arch=$ARCH -DVARIANT=2 ||
		fail "a build failed"
	wait $a || fail "a build failed"
	assertEquals "two entries" 2 "$(entry_count)"
	assertEquals "no staging left" 0 "$(staging_left)"
	"$CJC" "$TEST_DIR/bin/nvcc-barrier" --cubin k.cu -o a.cubin -arch=$ARCH -DVARIANT=1 || fail
	"$CJC" "$TEST_DIR/bin/nvcc-barrier" --cubin k.cu -o b.cubin -arch=$ARCH -DVARIANT=2 || fail
	assertEquals "both hit" 8 "$(nvcc_compiles)"
	assert_same_devcode a1.cubin a.cubin
	assert_same_devcode b4.cubin b.cubin
}

# Leases (lease.h): eight compiles of one key, started at once, run nvcc
# once; the first holds its nvcc until the others are waiting for it.
testEightCompilesOfOneKeyRunNvccOnce() {
	make_held_nvcc
	"$CJC" "$TEST_DIR/bin/nvcc-held" --cubin k.cu -o out1.cubin -arch=$ARCH &
	local first=$!
	wait_for_file "$TEST_DIR/held" || fail "the first compile never ran nvcc"
	parallel 7 "$CJC" "$TEST_DIR/bin/nvcc-held" --cubin k.cu -o out{}x.cubin -arch=$ARCH &
	local rest=$!
	wait_for_lines 7 'waiting for its entry' "$CJC_LOG" || fail "the others did not wait"
	touch "$TEST_DIR/go"
	wait $first || fail "the holder failed"
	wait $rest || fail "a waiter failed"
	expect_nvcc_runs 1
	assertEquals "one entry" 1 "$(entry_count)"
	local i
	for i in $(seq 7); do assert_same_devcode out1.cubin out${i}x.cubin; done
	expect_stat misses 1
	expect_stat hits 7
	expect_stat lease_waits 7
	expect_stat lease_timeouts 0
	expect_why out3x.cubin "hit: served from entry"
}

# A miss interrupted as make interrupts it (SIGINT) leaves none of its
# temporaries beside the output: not the output's, nor the directory nvcc
# -keep filled with the preprocessor's texts (tens of MB for a heavy TU).
testAnInterruptedMissLeavesNothingBesideTheOutput() {
	make_held_nvcc
	mkdir out
	"$CJC" "$TEST_DIR/bin/nvcc-held" --cubin k.cu -o out/k.cubin -arch=$ARCH 2>/dev/null &
	local cjc=$!
	wait_for_file "$TEST_DIR/held" || fail "the compile never ran nvcc"
	assertNotEquals "nvcc kept its texts beside the output" "" "$(find out -name '*.ii')"
	kill -INT $cjc
	wait $cjc 2>/dev/null
	touch "$TEST_DIR/go"
	assertEquals "nothing left beside the output" "" "$(ls -A out)"
}

# A holder killed mid-compile drops its lease with it: the waiters take it
# in turn, one compiles, the other is served its entry; no build fails.
testALeaseHolderKilledMidCompileCostsOnlyAWait() {
	make_held_nvcc
	"$CJC" "$TEST_DIR/bin/nvcc-held" --cubin k.cu -o killed.cubin -arch=$ARCH 2>/dev/null &
	local holder=$!
	wait_for_file "$TEST_DIR/held" || fail "the holder never ran nvcc"
	parallel 2 "$CJC" "$TEST_DIR/bin/nvcc-held" --cubin k.cu -o w{}.cubin -arch=$ARCH &
	local waiters=$!
	wait_for_lines 2 'waiting for its entry' "$CJC_LOG" || fail "the others did not wait"
	kill -KILL $holder
	wait $holder 2>/dev/null
	wait $waiters || fail "a waiter failed"
	kill -KILL "$(cut -d' ' -f2 "$TEST_DIR/held")" 2>/dev/null # the wrapper, left blocked
	assert_same_devcode w1.cubin w2.cubin
	expect_nvcc_runs 2 # the killed one, and one waiter's
	assertEquals "one entry" 1 "$(entry_count)"
	expect_stat lease_waits 2
	expect_stat lease_timeouts 0
}

# A holder that hangs costs a waiter its bound (lease_wait, as nothing is
# recorded), and then it compiles itself.
testAHungLeaseHolderCostsTheBoundThenACompile() {
	make_held_nvcc
	"$CJC" "$TEST_DIR/bin/nvcc-held" --cubin k.cu -o hung.cubin -arch=$ARCH &
	local holder=$!
	wait_for_file "$TEST_DIR/held" || fail "the holder never ran nvcc"
	CJC_LEASE_WAIT=1s "$CJC" "$TEST_DIR/bin/nvcc-held" --cubin k.cu -o mine.cubin -arch=$ARCH ||
		fail "the waiter failed"
	expect_stat lease_timeouts 1
	expect_nvcc_runs 2
	touch "$TEST_DIR/go"
	wait $holder || fail "the holder failed"
	assert_same_devcode hung.cubin mine.cubin
	assertTrue "the journal says" "\"$CJC\" why --json mine.cubin | jq -e '.lease.timed_out' >/dev/null"
}

testEightConcurrentHitsRunNoNvcc() {
	cjc_nvcc --cubin k.cu -o first.cubin -arch=$ARCH || fail
	parallel 8 "$CJC" "$NVCC" --cubin k.cu -o hit{}.cubin -arch=$ARCH || fail "a hit failed"
	expect_nvcc_runs 1
	expect_stat hits 8
	local i
	for i in $(seq 8); do assertTrue "hit $i is the same object" "cmp -s first.cubin hit$i.cubin"; done
}

testALoserThatCannotUseTheWinnerKeepsItsOwnOutput() {
	# The winner's entry is damaged: a later writer cannot use it, cannot
	# replace it, and still delivers its own, right output.
	cjc_nvcc --cubin k.cu -o first.cubin -arch=$ARCH || fail
	local entry
	entry=$(echo "$CJC_DIR"/v1/*/entries/*/*)
	chmod u+w "$entry/output.cubin" && truncate -s 100 "$entry/output.cubin"
	cjc_nvcc --cubin k.cu -o second.cubin -arch=$ARCH || fail "the build broke"
	assert_same_devcode first.cubin second.cubin
	assertEquals "the winner's entry is left as it is" 100 "$(stat -c %s "$entry/output.cubin")"
	assertEquals "no staging left" 0 "$(staging_left)"
}

testCleanWhileBuildsRun() {
	cjc_nvcc --cubin k.cu -o ref.cubin -arch=$ARCH || fail
	parallel 6 sh -c "\"$CJC\" \"$NVCC\" --cubin k.cu -o c{}.cubin -arch=$ARCH -DV={}" &
	local builds=$!
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do "$CJC" clean >/dev/null || fail "clean failed"; sleep 0.3; done
	wait $builds || fail "a build failed while the store was cleaned"
	for i in $(seq 6); do assertTrue "output $i" "[ -s c$i.cubin ]"; done
	"$CJC" verify >/dev/null || fail "what is left verifies"
	cjc_nvcc --cubin k.cu -o again.cubin -arch=$ARCH || fail
	assert_same_devcode ref.cubin again.cubin
}

testSixteenThreadsThroughTheLibrary() {
	"$CJC_THREADS_TEST" "$TEST_DIR/threads-store" >threads.txt 2>&1
	assertEquals "threads test: $(cat threads.txt)" 0 $?
}

. "$SHUNIT2"
