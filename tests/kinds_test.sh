#!/bin/bash
# Each output kind misses once, then hits without running nvcc, and what a
# hit delivers equals what the miss made.
. "$(dirname "$0")/helpers.sh"

testObjectMissThenHit() {
	cjc_nvcc -c k.cu -o a.o -arch=$ARCH || fail "miss failed"
	cjc_nvcc -c k.cu -o b.o -arch=$ARCH || fail "hit failed"
	expect_nvcc_runs 1
	expect_stat misses 1
	expect_stat hits 1
	assert_same_devcode a.o b.o
}

testRelocatableObject() {
	cjc_nvcc -dc k.cu -o a.o -arch=$ARCH || fail "miss failed"
	cjc_nvcc -dc k.cu -o b.o -arch=$ARCH || fail "hit failed"
	cjc_nvcc -rdc=true -c k.cu -o c.o -arch=$ARCH || fail "rdc miss failed"
	expect_nvcc_runs 2
	assert_same_devcode a.o b.o
	assertEquals "kinds" "2" "$("$CJC" ls | grep -c relocatable-object)"
}

checkByteIdentical() {
	local flag=$1 ext=$2
	cjc_nvcc "$flag" k.cu -o a.$ext -arch=$ARCH || fail "miss failed"
	cjc_nvcc "$flag" k.cu -o b.$ext -arch=$ARCH || fail "hit failed"
	expect_nvcc_runs 1
	assertTrue "$ext hit differs from the miss" "cmp a.$ext b.$ext"
	assertTrue "$ext output empty" "[ -s b.$ext ]"
}

testCubin() { checkByteIdentical --cubin cubin; }
testFatbin() { checkByteIdentical --fatbin fatbin; }
testPtx() { checkByteIdentical --ptx ptx; }

testFatbinForTwoArchitectures() {
	local g="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"
	cjc_nvcc --fatbin $g k.cu -o a.fatbin || fail "miss failed"
	cjc_nvcc --fatbin $g k.cu -o b.fatbin || fail "hit failed"
	"$REAL_NVCC" --fatbin $g k.cu -o plain.fatbin
	expect_nvcc_runs 1
	assertTrue "hit differs" "cmp a.fatbin b.fatbin"
	assertTrue "cached fatbin differs from plain nvcc's" "cmp a.fatbin plain.fatbin"
	assertTrue "archs recorded" "\"$CJC\" show \$(\"$CJC\" ls | cut -c1-12) --json | grep -q sm_90"
}

testDefaultOutputName() {
	cjc_nvcc -c k.cu -arch=$ARCH || fail "miss failed"
	assertTrue "k.o made" "[ -s k.o ]"
	rm k.o
	cjc_nvcc -c k.cu -arch=$ARCH || fail "hit failed"
	assertTrue "k.o served" "[ -s k.o ]"
	mkdir out
	cjc_nvcc -c k.cu -odir out -arch=$ARCH || fail "odir failed"
	assertTrue "out/k.o served" "[ -s out/k.o ]"
	expect_nvcc_runs 1
}

testDependencyFileMatchesNvccAndNamesCurrentOutput() {
	cjc_nvcc -c k.cu -o a.o -MD -MF a.d -arch=$ARCH || fail "miss failed"
	cjc_nvcc -c k.cu -o b.o -MD -MF b.d -arch=$ARCH || fail "hit failed"
	"$REAL_NVCC" -c k.cu -o b.o -MD -MF plain.d -arch=$ARCH
	expect_nvcc_runs 1
	assertEquals "target" "b.o :" "$(head -c 5 b.d)"
	assertTrue "hit's dependency file differs from nvcc's own" "cmp b.d plain.d"
	assertTrue "device-only header listed" "grep -q dev.h b.d"
	assertTrue "host-only header listed" "grep -q host.h b.d"
}

testDependencyFileVariants() {
	cjc_nvcc -c k.cu -o a.o -MMD -MP -MT custom -MF a.d -arch=$ARCH || fail "miss failed"
	"$REAL_NVCC" -c k.cu -o a.o -MMD -MP -MT custom -MF plain.d -arch=$ARCH
	assertTrue "-MMD -MP -MT file differs from nvcc's" "cmp a.d plain.d"
	cjc_nvcc -c k.cu -o sub.o -MD -arch=$ARCH || fail "default name failed"
	assertTrue "sub.d written beside the output, on a hit" "grep -q '^sub.o :' sub.d"
	expect_nvcc_runs 1
}

testWarningsReplayedOnHit() {
	printf '#warning "cjc-replay-check"\n' >>k.h
	cjc_nvcc -c k.cu -o a.o -arch=$ARCH 2>miss.err || fail "miss failed"
	cjc_nvcc -c k.cu -o b.o -arch=$ARCH 2>hit.err || fail "hit failed"
	expect_nvcc_runs 1
	assertTrue "warning on miss" "grep -q cjc-replay-check miss.err"
	assertTrue "hit replays the miss's stderr" "cmp miss.err hit.err"
}

testCompileErrorPublishesNothing() {
	echo 'this is not C++;' >>k.cu
	"$REAL_NVCC" -c k.cu -o plain.o -arch=$ARCH 2>plain.err
	local want=$?
	cjc_nvcc -c k.cu -o a.o -arch=$ARCH 2>cjc.err
	assertEquals "nvcc's exit status" "$want" "$?"
	assertTrue "nvcc's message" "grep -q error cjc.err"
	assertFalse "no output" "[ -e a.o ]"
	assertEquals "entries" 0 "$(entry_count)"
	expect_stat compile_failed 1
	assertEquals "no temporary files left" "" "$(ls -a | grep '^a\.o\.')"
}

testHitGivesFreshMtime() {
	cjc_nvcc -c k.cu -o a.o -arch=$ARCH || fail "miss failed"
	touch -d '2001-01-01' a.o
	cjc_nvcc -c k.cu -o a.o -arch=$ARCH || fail "hit failed"
	assertTrue "output newer than k.cu" "[ a.o -nt k.cu ]"
	expect_nvcc_runs 1
}

. "$SHUNIT2"
