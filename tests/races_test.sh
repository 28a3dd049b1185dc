#!/bin/bash
# races_test.sh - docs/store.md under concurrency: writers of one key collide at
# publication (a barrier holds every nvcc until all have compiled), the first
# valid writer wins, every build succeeds with the same output, and nothing
# is left half-written.

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
	make_barrier_nvcc 8
	parallel 8 "$CJC" "$TEST_DIR/bin/nvcc-barrier" -c k.cu -o out{}.o -arch=$ARCH ||
		fail "a build failed"
	assertEquals "nvcc compiled 8 times" 8 "$(nvcc_compiles)"
	assertEquals "one entry" 1 "$(entry_count)"
	assertEquals "no staging left" 0 "$(staging_left)"
	local i
	for i in 2 3 4 5 6 7 8; do assert_same_devcode out1.o out$i.o; done
	assertEquals "the losers said so" 7 "$(grep -c 'already published' "$CJC_LOG")"
	"$CJC" verify >/dev/null || fail "the entry verifies"
	expect_stat misses 8
	expect_stat errors 0
}

testMixedKeysGiveTwoEntries() {
	make_barrier_nvcc 8
	parallel 4 "$CJC" "$TEST_DIR/bin/nvcc-barrier" -c k.cu -o a{}.o -arch=$ARCH -DVARIANT=1 &
	local a=$!
	parallel 4 "$CJC" "$TEST_DIR/bin/nvcc-barrier" -c k.cu -o b{}.o -arch=$ARCH -DVARIANT=2 ||
		fail "a build failed"
	wait $a || fail "a build failed"
	assertEquals "two entries" 2 "$(entry_count)"
	assertEquals "no staging left" 0 "$(staging_left)"
	"$CJC" "$TEST_DIR/bin/nvcc-barrier" -c k.cu -o a.o -arch=$ARCH -DVARIANT=1 || fail
	"$CJC" "$TEST_DIR/bin/nvcc-barrier" -c k.cu -o b.o -arch=$ARCH -DVARIANT=2 || fail
	assertEquals "both hit" 8 "$(nvcc_compiles)"
	assert_same_devcode a1.o a.o
	assert_same_devcode b4.o b.o
}

testEightConcurrentHitsRunNoNvcc() {
	cjc_nvcc -c k.cu -o first.o -arch=$ARCH || fail
	parallel 8 "$CJC" "$NVCC" -c k.cu -o hit{}.o -arch=$ARCH || fail "a hit failed"
	expect_nvcc_runs 1
	expect_stat hits 8
	local i
	for i in $(seq 8); do assertTrue "hit $i is the same object" "cmp -s first.o hit$i.o"; done
}

testALoserThatCannotUseTheWinnerKeepsItsOwnOutput() {
	# The winner's entry is damaged: a later writer cannot use it, cannot
	# replace it, and still delivers its own, right output.
	cjc_nvcc -c k.cu -o first.o -arch=$ARCH || fail
	local entry
	entry=$(echo "$CJC_DIR"/v1/*/entries/*/*)
	chmod u+w "$entry/output.o" && truncate -s 100 "$entry/output.o"
	cjc_nvcc -c k.cu -o second.o -arch=$ARCH || fail "the build broke"
	assert_same_devcode first.o second.o
	assertEquals "the winner's entry is left as it is" 100 "$(stat -c %s "$entry/output.o")"
	assertEquals "no staging left" 0 "$(staging_left)"
}

testCleanWhileBuildsRun() {
	cjc_nvcc -c k.cu -o ref.o -arch=$ARCH || fail
	parallel 6 sh -c "\"$CJC\" \"$NVCC\" -c k.cu -o c{}.o -arch=$ARCH -DV={}" &
	local builds=$!
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do "$CJC" clean >/dev/null || fail "clean failed"; sleep 0.3; done
	wait $builds || fail "a build failed while the store was cleaned"
	for i in $(seq 6); do assertTrue "output $i" "[ -s c$i.o ]"; done
	"$CJC" verify >/dev/null || fail "what is left verifies"
	cjc_nvcc -c k.cu -o again.o -arch=$ARCH || fail
	assert_same_devcode ref.o again.o
}

testSixteenThreadsThroughTheLibrary() {
	"$CJC_THREADS_TEST" "$TEST_DIR/threads-store" >threads.txt 2>&1
	assertEquals "threads test: $(cat threads.txt)" 0 $?
}

. "$SHUNIT2"
