#!/bin/bash
# The diagnostics settings: print_commands, keep_ptx, keep_sass, check_spills.
# The compiles are --cubin (a third of the CPU of -c, no host compile) but
# where SASS is kept for an object; the uncached command is a link.
. "$(dirname "$0")/helpers.sh"

# A kernel that spills when held to 32 registers.
write_spilling_kernel() {
	cat >spill.cu <<'SRC'
__global__ void heavy(float *o, const float *in)
{
	float v[40];
#pragma unroll
	for (int i = 0; i < 40; i++)
		v[i] = in[threadIdx.x * 40 + i];
	float s = 0;
#pragma unroll
	for (int i = 0; i < 40; i++)
		for (int k = 0; k < 40; k++)
			s += v[i] * v[k];
	o[threadIdx.x] = s;
}
SRC
}

testPrintCommandsShowsEveryRealCompile() {
	CJC_PRINT_COMMANDS=1 cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err1.txt || fail
	CJC_PRINT_COMMANDS=1 cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH 2>err2.txt || fail
	# an uncached command: a link (of a host object, not a compile of main.cu too)
	echo "int main() { return 0; }" >main.c && gcc -c main.c -o main.o || fail "gcc"
	CJC_PRINT_COMMANDS=1 cjc_nvcc main.o -o prog -arch=$ARCH 2>err3.txt || fail
	assertTrue "miss prints the command" "grep -q \"^Running command: $NVCC --cubin k.cu -arch=$ARCH -keep -keep-dir [^ ]* -o a.cubin.* -MD -MF \" err1.txt"
	assertFalse "a hit runs nothing" "grep -q 'Running command' err2.txt"
	assertTrue "uncached compiles too" "grep -q \"^Running command: $NVCC main.o -o prog -arch=$ARCH\$\" err3.txt"
	cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH -DX=1 2>err4.txt || fail
	assertFalse "off by default" "grep -q 'Running command' err4.txt"
}

testKeepPtxStoresNvccsPtxInTheEntry() {
	cjc_nvcc --cubin k.cu -o plain.cubin -arch=$ARCH || fail
	CJC_KEEP_PTX=1 cjc_nvcc --cubin k.cu -o kept.cubin -arch=$ARCH || fail
	expect_nvcc_runs 2
	assertTrue "the same cubin" "cmp plain.cubin kept.cubin"
	local key
	key=$("$CJC" ls --json | tr -d '\n ' | sed 's/},{/}\n{/g' | grep kept- | sed -n 's/.*"key":"\([0-9a-f]*\)".*/\1/p')
	"$CJC" show "$key" --json >meta.json || fail
	assertTrue "listed in metadata" "grep -q '\"kept-k.ptx\"' meta.json"
	assertTrue "recorded as a diagnostic" "grep -q '\"keep_ptx\": true' meta.json"
	"$REAL_NVCC" --ptx k.cu -o k.ptx -arch=$ARCH || fail
	local dir
	dir=$("$CJC" ls --json | sed -n "s/.*\"path\": \"\(.*$key\)\".*/\1/p")
	# kept as the store keeps every file: zstd-compressed where smaller
	if jq -e '.files["kept-k.ptx"].zstd' meta.json >/dev/null; then
		zstd -d -q -c "$dir/kept-k.ptx" >kept.ptx || fail "zstd"
	else
		cp "$dir/kept-k.ptx" kept.ptx
	fi
	assertTrue "nvcc's own ptx" "cmp k.ptx kept.ptx"
	CJC_KEEP_PTX=1 cjc_nvcc --cubin k.cu -o again.cubin -arch=$ARCH || fail
	expect_nvcc_runs 2
}

testKeepSassSaysCleanlyWhenCuobjdumpIsMissing() {
	# nvcc here is a wrapper: no cuobjdump beside it, and none on this PATH
	PATH=/usr/bin:/bin CJC_KEEP_SASS=1 cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt
	assertEquals "the compile succeeds" 0 $?
	assertTrue "says so" "grep -q '^cjc: keep_sass is set but cuobjdump is not installed (beside .* or on PATH); no SASS was kept' err.txt"
	assertEquals "one line" 1 "$(wc -l <err.txt)"
	PATH=/usr/bin:/bin CJC_KEEP_SASS=1 cjc_nvcc --cubin k.cu -o k2.cubin -arch=$ARCH 2>err2.txt || fail
	assertEquals "a hit: nothing to say" 0 "$(wc -c <err2.txt)"
	expect_nvcc_runs 1
	assertFalse "no SASS" "\"$CJC\" ls --json | grep -q sass.txt"
}

# This toolkit has no cuobjdump; the GPU machine's has (run there by hand).
testKeepSassKeepsTheListingWhereCuobjdumpIsInstalled() {
	local nvcc_dir
	nvcc_dir=$(dirname "$(readlink -f "$REAL_NVCC")")
	if [ ! -x "$nvcc_dir/cuobjdump" ] && ! command -v cuobjdump >/dev/null; then
		startSkipping
		echo "no cuobjdump with this toolkit: nothing to keep" >&2
	fi
	touch -d '10 seconds ago' k.cu k.h dev.h host.h # older than the compile: published
	CJC_KEEP_SASS=1 cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	CJC_KEEP_SASS=1 cjc_nvcc -c k.cu -o k.o -arch=$ARCH || fail
	CJC_KEEP_SASS=1 cjc_nvcc --ptx k.cu -o k.ptx -arch=$ARCH 2>err.txt || fail
	assertEquals "ptx has no SASS: nothing to say" 0 "$(wc -c <err.txt)"
	assertEquals "SASS kept for the cubin and the object" 2 "$("$CJC" ls --json | grep -c sass.txt)"
	"$CJC" audit all >audit.txt
	assertEquals "the entries with their SASS reproduce" 0 $?
	assertEquals "SASS compared" 2 "$(grep -c 'compared: sass.txt: [0-9]* bytes identical' audit.txt)"
}

testCheckSpillsFailsOnMissAndOnHit() {
	write_spilling_kernel
	cjc_nvcc --cubin spill.cu -o plain.cubin -arch=$ARCH -maxrregcount=32 || fail "spills are fine by default"
	CJC_CHECK_SPILLS=1 cjc_nvcc --cubin spill.cu -o a.cubin -arch=$ARCH -maxrregcount=32 2>err1.txt
	assertEquals "miss fails like -Werror" 255 $?
	assertFalse "no output" "[ -e a.cubin ]"
	assertTrue "ptxas's warning" "grep -q 'ptxas warning : Registers are spilled' err1.txt"
	assertTrue "our error" "grep -q 'cjc: error: ptxas reported spills or local memory use and check_spills is set' err1.txt"
	CJC_CHECK_SPILLS=1 cjc_nvcc --cubin spill.cu -o a.cubin -arch=$ARCH -maxrregcount=32 2>err2.txt
	assertEquals "hit fails too" 255 $?
	expect_nvcc_runs 2
	assertTrue "same messages on the hit" "cmp err1.txt err2.txt"
	assertFalse "no output" "[ -e a.cubin ]"
	CJC_CHECK_SPILLS=1 cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail "no spills: no failure"
	CJC_CHECK_SPILLS=1 cjc_nvcc --cubin spill.cu -o ok.cubin -arch=$ARCH || fail "enough registers: no spills"
}

testSettingsShownAndCheckedByConfig() {
	CJC_KEEP_PTX=yes CJC_CHECK_SPILLS=on "$CJC" config >config.txt || fail
	assertTrue "keep_ptx" "grep -q '^keep_ptx *= yes *(environment variable CJC_KEEP_PTX)' config.txt"
	assertTrue "check_spills" "grep -q '^check_spills *= on' config.txt"
	assertTrue "print_commands default" "grep -q '^print_commands *= false *(default)' config.txt"
	PATH=/usr/bin:/bin CJC_KEEP_SASS=1 "$CJC" config >/dev/null 2>err.txt || fail
	assertTrue "keep_sass without cuobjdump" "grep -q 'keep_sass is set but cuobjdump is not installed' err.txt"
	CJC_PRINT_COMMANDS=sometimes cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt
	assertEquals "a bad value never fails the build" 0 $?
	assertTrue "names the variable" "grep -q \"CJC_PRINT_COMMANDS: bad value 'sometimes' for print_commands\" err.txt"
}

. "$SHUNIT2"
