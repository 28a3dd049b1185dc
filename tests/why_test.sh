#!/bin/bash
# `cjc why` says whether the last compile of an output or source hit or
# missed, and for a miss, what changed.  (The soundness suite checks the
# cause it names for each kind of change.)
. "$(dirname "$0")/helpers.sh"

testHitAndMissOfAnObject() {
	"$CJC" --target app "$NVCC" -c k.cu -o k.o -arch=$ARCH || fail
	expect_why k.o "miss: no earlier compile of k.cu for this target is recorded"
	"$CJC" --target app "$NVCC" -c k.cu -o k.o -arch=$ARCH || fail
	expect_why k.o "hit: served from entry"
	"$CJC" why k.o >why.txt || fail
	assertTrue "names the output and target" "grep -q \"compiled $PWD/k.o at .* for target app\" why.txt"
	assertTrue "time saved" "grep -Eq 'saved [0-9]+\.[0-9]{3} s of nvcc' why.txt"
	expect_why "$PWD/k.cu" "hit: served from entry"
}

testMissOfAFatbinNamesEveryChange() {
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	sed -i 's/2.0f/3.0f/' k.h
	NVCC_APPEND_FLAGS=-DAPP=1 cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH -DFOO=1 || fail
	expect_why k.fatbin "miss: k.h changed; -DFOO=1 added; NVCC_APPEND_FLAGS set"
	"$CJC" why k.fatbin --json >why.json || fail
	assertTrue "result" "grep -q '\"result\": \"miss\"' why.json"
	assertTrue "kind of change" "grep -q '\"kind\": \"dependency\"' why.json"
	assertTrue "old hash" "grep -Eq '\"old\": \"[0-9a-f]{64}\"' why.json"
	assertTrue "compared with" "grep -Eq '\"compared_with\": \"[0-9a-f]{64}\"' why.json"
}

# A header edited during the compile makes the compile unstable, not
# published; every other dependency is still hashed, so `why` names the
# header alone (it once listed the rest as changed, with zero hashes).
testHeaderEditedDuringTheCompileIsTheOnlyChange() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	cat >"$TEST_DIR/bin/nvcc-edits" <<WRAP
#!/bin/sh
"$NVCC" "\$@" || exit
case " \$* " in *" --version "*) exit 0 ;; esac
echo '#define EDITED 1' >>"$PWD/k.h"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-edits"
	"$CJC" "$TEST_DIR/bin/nvcc-edits" --cubin k.cu -o b.cubin -arch=$ARCH || fail
	expect_why b.cubin "miss: k.h changed"
	"$CJC" why b.cubin --json >why.json || fail
	assertEquals "one change: $(cat why.json)" 1 "$(grep -c '"kind": "dependency"' why.json)"
	assertFalse "no zero hash" "grep -q '\"new\": \"0000000000000000' why.json"
}

testNearestEarlierEntryIsTheMostAlike() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH -DMODE=1 || fail
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH -DMODE=2 || fail
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH -DMODE=1 -lineinfo || fail
	expect_why k.cubin "miss: -lineinfo added"
}

testEvictedEntryIsNamedAsTheCause() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	"$CJC" clean >/dev/null || fail
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	expect_why k.cubin "miss: entry "
	expect_why k.cubin "was made before but the store no longer had it"
}

# (a link of a host object: the reason is the same as for compiling and
# linking main.cu in one step, without its 2.5 s of CPU)
testUncacheableSaysWhy() {
	echo "int main() { return 0; }" >main.c && gcc -c main.c -o main.o || fail "gcc"
	cjc_nvcc main.o -o prog -arch=$ARCH || fail
	expect_why prog "uncacheable: linking"
}

testFailedCompileIsRecorded() {
	echo 'this is not C++' >bad.cu
	cjc_nvcc --cubin bad.cu -o bad.cubin -arch=$ARCH 2>/dev/null
	expect_why bad.cu "failed: nvcc failed; nothing was cached"
}

testNothingRecorded() {
	"$CJC" why nowhere.cubin 2>err.txt
	assertEquals "exit status" 1 $?
	assertTrue "says so" "grep -q 'no compile of nowhere.cubin is recorded' err.txt"
	"$CJC" why 2>/dev/null
	assertEquals "missing argument" 2 $?
}

testDamagedJournalLinesAreSkipped() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local journal=$CJC_DIR/v1/linux-$(uname -m)/journal-$(id -u)
	printf '{"output": "%s/k.cubin", \n["%s/k.cubin"]\n\377\376 %s/k.cubin\n{"result": 7, "output": "%s/k.cubin", "changes": [{"kind": 3}]}\n' \
		"$PWD" "$PWD" "$PWD" "$PWD" >>"$journal"
	"$CJC" why k.cubin >why.txt 2>err.txt
	assertEquals "exit status" 0 $?
	assertTrue "counts what it skipped" "grep -q '3 damaged journal lines skipped' err.txt"
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	expect_why k.cubin "hit: served from entry"
}

testParallelCompilesWriteWholeLines() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local i journal=$CJC_DIR/v1/linux-$(uname -m)/journal-$(id -u)
	for i in $(seq 1 16); do
		cjc_nvcc --cubin k.cu -o "par$i.cubin" -arch=$ARCH &
	done
	wait
	assertEquals "one line per compile" 17 "$(wc -l <"$journal")"
	assertEquals "every line a record" 17 "$(grep -c '^{"time":.*}$' "$journal")"
	"$CJC" why par7.cubin 2>err.txt | head -1 >why.txt
	assertTrue "found" "grep -q '^hit: served from entry' why.txt"
	assertEquals "nothing skipped" 0 "$(wc -c <err.txt)"
}

testJournalStaysBounded() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local journal=$CJC_DIR/v1/linux-$(uname -m)/journal-$(id -u)
	head -c 1100000 /dev/zero | tr '\0' '\n' >>"$journal"
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	assertTrue "rotated" "[ -f '$journal.1' ]"
	cjc_nvcc --cubin k.cu -o k2.cubin -arch=$ARCH || fail
	assertTrue "small again" "[ \$(stat -c %s '$journal') -lt 10000 ]"
	expect_why k.cubin "hit: served from entry"
}

testReadonlyMissesAreExplainedToo() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	CJC_READONLY=1 cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH -DX=1 || fail
	expect_why k.cubin "miss: -DX=1 added"
	"$CJC" why k.cubin >why.txt
	assertTrue "not published" "grep -q 'not published: readonly is set' why.txt"
}

# Two checkouts of one project, $TEST_DIR/a$ROUND and $TEST_DIR/b$ROUND
# (physical paths: records hold them resolved; a new ROUND, new
# directories), each compiling k.cu from its own directory with the
# options given (@HERE@ in one: the checkout's directory); OUT_B is b's
# first `cjc why` line.
# Before a second directory's compile was compared, each of these said
# only "no earlier compile of k.cu for this target is recorded".
two_checkouts() {
	local top
	top=$(cd "$TEST_DIR" && pwd -P)
	A=$top/a${ROUND:-} B=$top/b${ROUND:-}
	mkdir -p "$A" "$B" && cp k.cu k.h dev.h host.h "$A" && cp k.cu k.h dev.h host.h "$B" || fail
	[ -z "${EDIT_B:-}" ] || sed -i "$EDIT_B" "$B/k.h"
	(cd "$A" && cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH "${@//@HERE@/$A}") || fail "in a"
	[ -z "${CLEAN_BETWEEN:-}" ] || "$CJC" clean >/dev/null || fail "clean"
	(cd "$B" && cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH "${@//@HERE@/$B}") || fail "in b"
	OUT_B=$(cd "$B" && "$CJC" why k.cubin | head -1)
}

# Paths keyed relative to the root: the directory is not the difference,
# the header is, and `why` says both.
testSecondCheckoutNamesTheHeaderThatDiffers() {
	EDIT_B='s/2.0f/3.0f/' two_checkouts
	assertEquals "miss: k.h changed; compared with $A/k.cu, another directory's (the directory is not in the key)" "$OUT_B"
}

# The directory is not in the key and nothing else differs: what the
# lookup found is the cause (here the first entry was cleaned), not the
# directory.
testSecondCheckoutAfterTheEntryWasCleaned() {
	CLEAN_BETWEEN=1 two_checkouts
	assertContains "$OUT_B" "$OUT_B" "miss: compared with $A/k.cu, another directory's (the directory is not in the key); entry "
	assertContains "$OUT_B" "$OUT_B" "was made before but the store no longer had it (cleaned or evicted)"
}

# nvcc derives _INTERNAL_ prefixes from the absolute path: no setting
# shares such entries, base_dir included, and `why` claims none.
testSecondCheckoutWhoseOutputNamesItsPath() {
	printf 'namespace { __device__ __noinline__ float twice(float x) { return 2 * x; } }\n__global__ void k(float *a) { a[0] = twice(a[0]); }\n' >k.cu
	two_checkouts
	local none="no setting shares entries between them: the output names an _INTERNAL_ symbol"
	assertContains "$OUT_B" "$OUT_B" "miss: the directory differs: compiled before in $A, now in $B; $none"
	ROUND=2 CJC_BASE_DIR=$(dirname "$A") two_checkouts
	assertContains "with base_dir: $OUT_B" "$OUT_B" "miss: the directory differs: compiled before in $A, now in $B; $none"
}

# A -D value naming the directory keeps it in the key, root or base_dir:
# `why` must not call the directory unkeyed, nor name a setting.
testSecondCheckoutWhoseOptionNamesItsDirectory() {
	EDIT_B='s/2.0f/3.0f/' two_checkouts -DHERE=@HERE@
	assertContains "$OUT_B" "$OUT_B" "miss: the directory differs: compiled before in $A, now in $B; no setting shares entries between them: an option (-D or -Xcompiler) names the directory"
}

# assert() puts __FILE__ in the output: the directory is keyed, and the
# setting `why` names does share the entry (tried: b then hits).
testSecondCheckoutNamesTheSettingThatShares() {
	sed -i '1i #include <cassert>' k.cu
	sed -i 's/^{$/{ assert(a);/' k.cu
	two_checkouts
	assertContains "$OUT_B" "$OUT_B" "miss: the directory differs: compiled before in $A, now in $B; base_dir=$(dirname "$A") would share entries between them"
	local setting
	setting=$(cd "$B" && "$CJC" why k.cubin --json | jq -r '.changes[0].shared_by')
	ROUND=2 CJC_BASE_DIR=${setting#base_dir=} two_checkouts
	assertContains "shared as said: $OUT_B" "$OUT_B" "hit: served from entry"
}

# -G records the directories: base_dir alone does not share, and `why`
# names hash_dir=false with it (tried: b then hits).
testSecondCheckoutWithDebugInformation() {
	two_checkouts -G
	assertContains "$OUT_B" "$OUT_B" "; base_dir=$(dirname "$A") with hash_dir=false would share entries between them (the debug information"
	ROUND=2 CJC_BASE_DIR=$(dirname "$A") two_checkouts -G
	assertContains "base_dir alone: $OUT_B" "$OUT_B" "with hash_dir=false would share"
	ROUND=3 CJC_BASE_DIR=$(dirname "$A") CJC_HASH_DIR=false two_checkouts -G
	assertContains "shared as said: $OUT_B" "$OUT_B" "hit: served from entry"
}

# expect_why_jit [PREFIX]:NAME TEXT: the first line of `cjc why --jit` contains TEXT.
expect_why_jit() {
	local said
	said=$("$CJC" why --jit "$1" | head -1)
	assertContains "cjc why --jit $1: $said" "$said" "$2"
}

# The JIT library writes the journal as cjc does, naming its prefix and the
# request: a hit, a miss whose code changed (compared with the same
# library's earlier entry), an uncacheable NVRTC compile, a failed one.
testJitCompilesAreExplained() {
	printf 'extern "C" __global__ void one(float *a) { a[0] = 1.0f; }\n' >one.cu
	jit --prefix LIB --name one.cu one.cu >/dev/null || fail "miss"
	jit --prefix LIB --name one.cu one.cu >/dev/null || fail "hit"
	expect_why_jit LIB:one.cu "hit: served from entry"
	"$CJC" why --jit one.cu >why.txt
	assertTrue "names the library: $(cat why.txt)" \
		"grep -q 'compiled one.cu by the JIT library (prefix LIB, nvcc) at ' why.txt"
	have_nvrtc || startSkipping
	CJC_JIT_COMPILER=nvrtc jit --name one.cu one.cu -DA=1 >/dev/null || fail "NVRTC"
	sed -i 's/1.0f/2.0f/' one.cu
	CJC_JIT_COMPILER=nvrtc jit --name one.cu one.cu -DA=1 >/dev/null || fail "NVRTC again"
	expect_why_jit :one.cu "miss: the code of one.cu changed"
	assertTrue "NVRTC ran" "'$CJC' why --jit :one.cu | grep -q 'NVRTC ran'"
	expect_why_jit LIB:one.cu "hit: served from entry"
	printf '#define WHEN __TIME__\n' >clock.cu
	CJC_JIT_COMPILER=nvrtc jit --name clock.cu clock.cu >/dev/null 2>&1
	expect_why_jit clock.cu "uncacheable: the code names __DATE__, __TIME__ or __TIMESTAMP__"
	echo 'not C++' >bad.cu
	CJC_JIT_COMPILER=nvrtc jit --name bad.cu bad.cu >/dev/null 2>&1
	expect_why_jit bad.cu "failed: bad.cu: NVRTC failed"
	"$CJC" why --jit none.cu 2>err.txt
	assertEquals "none recorded" 1 $?
	assertTrue "says so" "grep -q 'no JIT compile of none.cu is recorded' err.txt"
}

testARecordAppendedByAnotherMemberIsNotTrusted() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local ns forged
	ns=$(echo "$CJC_DIR"/v1/*)
	forged=$(cat "$ns"/journal* | tail -1 |
		jq -c '.result = "hit" | .entry = "'"$(printf 'f%.0s' $(seq 64))"'"')
	# a shared journal as a group store has it: anyone may append
	touch "$ns/journal" && chmod 666 "$ns/journal"
	echo "$forged" >>"$ns/journal"
	expect_why k.cubin "miss:"
	"$CJC" why k.cubin --json | jq -e '.result == "miss"' >/dev/null || fail "--json: the miss"
	# nor your own journal once others can write it
	local own=$ns/journal-$(id -u)
	chmod 666 "$own" && echo "$forged" >>"$own"
	"$CJC" why k.cubin >why.txt 2>err.txt
	assertEquals "no trusted record: $(cat why.txt)" 1 "$(wc -l <err.txt)"
	assertContains "$(cat err.txt)" "no compile of k.cubin is recorded"
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	expect_why k.cubin "hit: served from entry"
	assertEquals "begun afresh, writable by you alone" "1 644" \
		"$(wc -l <"$own") $(stat -c %a "$own")"
}

. "$SHUNIT2"
