#!/bin/bash
# What cjc does not cache runs nvcc unchanged; nothing the cache does wrong
# can break a build.
. "$(dirname "$0")/helpers.sh"

testLinkPassesThrough() {
	cat >main.cu <<'SRC'
__global__ void k() {}
int main() { k<<<1, 1>>>(); return 0; }
SRC
	cjc_nvcc -c main.cu -o main.o -arch=$ARCH || fail "compile failed"
	cjc_nvcc main.o -o app -arch=$ARCH || fail "link failed"
	assertTrue "program linked" "[ -x app ]"
	expect_stat uncacheable 1
	assertTrue "reason logged" "grep -q 'uncacheable: linking' \"$CJC_LOG\""
}

testSingleStepCompileAndLinkPassesThrough() {
	printf 'int main() { return 0; }\n' >main.cu
	cjc_nvcc main.cu -o app2 || fail "compile-and-link failed"
	assertTrue "program built" "[ -x app2 ]"
	expect_stat uncacheable 1
}

testPreprocessPassesThrough() {
	cjc_nvcc -E k.cu -o cjc.ii || fail "-E failed"
	"$REAL_NVCC" -E k.cu -o plain.ii
	assertTrue "same preprocessed output" "cmp cjc.ii plain.ii"
	expect_stat uncacheable 1
}

testVersionQueryPassesThrough() {
	assertEquals "nvcc --version" "$("$REAL_NVCC" --version)" "$(cjc_nvcc --version)"
}

testFailingUncachedCommandKeepsExitStatus() {
	cjc_nvcc no-such-file.o -o app 2>err.txt
	local got=$?
	"$REAL_NVCC" no-such-file.o -o app 2>/dev/null
	assertEquals "nvcc's exit status" "$?" "$got"
}

testDisableRunsNvccUncached() {
	CJC_DISABLE=1 cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	CJC_DISABLE=1 cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail
	expect_nvcc_runs 2
	assertEquals "entries" 0 "$(entry_count)"
}

testReadonlyPublishesNothing() {
	CJC_READONLY=1 cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	assertEquals "entries" 0 "$(entry_count)"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail
	CJC_READONLY=1 cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH || fail
	expect_nvcc_runs 2
	assert_same_devcode b.cubin c.cubin
}

testUnusableCacheDirectoryStillBuilds() {
	echo "a file, not a directory" >notadir
	CJC_DIR=$PWD/notadir cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail "build broke"
	assertTrue "output made" "[ -s a.cubin ]"
	CJC_DIR=/proc/cjc-cache cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail "build broke"
	assertTrue "output made" "[ -s b.cubin ]"
	assertEquals "both reasons logged" 2 "$(grep -c 'is unusable' "$CJC_LOG")"
}

testHitIntoMissingDirectoryFailsLikeNvccAndIsNoDamage() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	cjc_nvcc --cubin k.cu -o no/such/dir/b.cubin -arch=$ARCH 2>cjc.err
	local got=$?
	"$REAL_NVCC" --cubin k.cu -o no/such/dir/b.cubin -arch=$ARCH 2>/dev/null
	assertEquals "nvcc's exit status" "$?" "$got"
	assertNotEquals "a failure" 0 "$got"
	expect_stat damaged 0
	assertTrue "run as nvcc would: $(cat "$CJC_LOG")" "grep -q \"running uncached: uncacheable: the output's directory does not exist\" \"$CJC_LOG\""
}

# A hit renames a new file into place: over /dev/null (as root), a FIFO or
# a device it would put a regular file, so nvcc writes into them, uncached.
testOutputThatIsNotARegularFileIsLeftToNvcc() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	mkfifo f.cubin && ln -s f.cubin link.cubin
	for out in f.cubin link.cubin; do
		timeout 120 cat f.cubin >"got-$out" &
		cjc_nvcc --cubin k.cu -o "$out" -arch=$ARCH || fail "compile into $out"
		wait $!
		assertTrue "the FIFO is still a FIFO" "[ -p f.cubin ]"
		assertTrue "its reader got nvcc's cubin" "cmp -s a.cubin got-$out"
	done
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH -MD -MF /dev/null || fail
	assertTrue "/dev/null is still a device" "[ -c /dev/null ]"
	expect_stat hits 0
	expect_stat uncacheable 3
	assertEquals "said why" 2 "$(grep -c 'uncacheable: the output is not a regular file' "$CJC_LOG")"
	assertTrue "said why" "grep -q 'uncacheable: the dependency file is not a regular file' '$CJC_LOG'"
}

testDebugLogsToStderr() {
	CJC_DEBUG=1 cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err.txt || fail
	assertTrue "miss explained on stderr" "grep -q 'miss for k.cu' err.txt"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH 2>err.txt || fail
	assertFalse "quiet without debug" "grep -q 'hit' err.txt"
}

testMalformedVariableStillBuilds() {
	CJC_MAX_SIZE=lots cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err.txt || fail "build broke"
	assertTrue "output made" "[ -s a.cubin ]"
	assertTrue "message names the variable" "grep -q CJC_MAX_SIZE err.txt"
	CJC_DISABLE=maybe cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH 2>err.txt || fail "build broke"
	assertTrue "message names the variable" "grep -q CJC_DISABLE err.txt"
	assertEquals "bad values are ignored: the cache goes on (docs/settings.md)" 1 "$(entry_count)"
}

testMalformedConfigFileStillBuilds() {
	mkdir -p "$CJC_DIR"
	printf 'max_size = 1G\nthis line is wrong\n' >"$CJC_DIR/cudajitcache.conf"
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err.txt || fail "build broke"
	assertTrue "output made" "[ -s a.cubin ]"
	assertTrue "message names the file" "grep -q 'cudajitcache.conf' err.txt"
	printf 'max_size = huge\n' >"$CJC_DIR/cudajitcache.conf"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH 2>err.txt || fail "build broke"
	assertTrue "message names file and line" "grep -q 'cudajitcache.conf:1' err.txt"
}

testDamagedManifestIsIgnored() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	local m
	for m in "$CJC_DIR"/v1/*/manifests/*/*; do
		chmod u+w "$m"
		printf 'garbage' | dd of="$m" bs=1 seek=20 conv=notrunc 2>/dev/null
	done
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail "build broke"
	assert_same_devcode a.cubin b.cubin
	assertTrue "logged" "grep -q 'unusable manifest .*: damaged; ignored' \"$CJC_LOG\""
}

testUnknownOptionRunsUncached() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH --no-such-option 2>/dev/null
	assertNotEquals "nvcc's own error" 0 $?
	expect_stat uncacheable 1
	assertTrue "reason logged" "grep -q 'unknown option --no-such-option' \"$CJC_LOG\""
}

# Every way of handing the host compiler a program directory, plugin or
# specs file runs nvcc as it is (the unit tests parse more spellings).
expect_uncached_with() {
	local before
	before=$(stat_value uncacheable)
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH "$@" || fail "$*"
	assertEquals "uncacheable with $*" $((before + 1)) "$(stat_value uncacheable)"
}

testHostProgramOptionsInEverySpellingRunUncached() {
	local dir=$PWD/hostbin
	mkdir "$dir"
	expect_uncached_with -Xcompiler=-B"$dir"
	expect_uncached_with --compiler-options=-O2,-B"$dir"
	expect_uncached_with -Xcompiler "-O2 -B $dir"
	expect_uncached_with -forward-unknown-to-host-compiler -B"$dir"
	expect_uncached_with -Xcompiler -iplugindir="$dir"
	NVCC_PREPEND_FLAGS="-Xcompiler -B$dir" expect_uncached_with
	expect_stat misses 0
}

. "$SHUNIT2"
