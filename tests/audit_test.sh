#!/bin/bash
# `cjc audit` rebuilds entries from their metadata and proves them, or says
# what differs or why it cannot rebuild.  Compiles are --cubin, --fatbin or
# --ptx (no host compile) where the kind is not the subject; the tests of
# objects and of host compilers compile -c.
. "$(dirname "$0")/helpers.sh"

# entry_of OUTPUT-KIND: the entry directory of the only entry of that kind.
entry_of() {
	"$CJC" ls --json | tr -d '\n ' | sed 's/},{/}\n{/g' | grep "\"kind\":\"$1\"" |
		sed -n 's/.*"path":"\([^"]*\)".*/\1/p'
}

# replace_artifact ENTRY NAME FILE: puts FILE in place of an artifact and
# rewrites metadata.json to match (stored as it is, with no "zstd" record:
# docs/metadata.md#files), so that the entry still verifies.
replace_artifact() {
	local meta=$1/metadata.json
	chmod u+w "$1" "$1/$2" "$meta"
	plain_metadata "$meta"
	cp "$3" "$1/$2"
	jq --arg name "$2" --arg sha "$(sha256sum "$3" | cut -d' ' -f1)" --argjson n "$(stat -c %s "$3")" \
		'.files[$name] = {size: $n, sha256: $sha}' "$meta" >"$meta.new" && mv "$meta.new" "$meta"
}

# expect_cannot_rebuild DETAIL [VAR=VALUE...]: `cjc audit all` (in that
# environment) exits 1, reports "cannot rebuild" and gives the detail.
expect_cannot_rebuild() {
	env "${@:2}" "$CJC" audit all >audit.txt
	assertEquals "exit status" 1 $?
	assertTrue "cannot rebuild" "grep -q '^cannot rebuild' audit.txt"
	assertTrue "says why: $1" "grep -q \"details: $1\" audit.txt"
}

# edit_metadata ENTRY JQ-FILTER [JQ-ARGS...]: rewrites an entry's metadata.json
# as someone who can write the store could (the entry still verifies).
edit_metadata() {
	local meta=$1/metadata.json
	chmod u+w "$1" "$meta"
	plain_metadata "$meta"
	jq "${@:3}" "$2" "$meta" >"$meta.new" && mv "$meta.new" "$meta"
}

# plant PATH [PROGRAM]: a script that leaves a mark when it runs, then runs
# PROGRAM (the real nvcc), so that an audit that ran it would see nothing wrong.
plant() {
	cat >"$1" <<PLANT
#!/bin/sh
touch "$TEST_DIR/planted-ran"
exec "${2:-$REAL_NVCC}" "\$@"
PLANT
	chmod +x "$1"
}

expect_planted_not_run() {
	assertFalse "the planted program ran" "[ -e '$TEST_DIR/planted-ran' ]"
}

# block_nvcc: $NVCC answers --version as before, but a compile writes
# "<its pid> <the audit child's pid>" to $TEST_DIR/blocked and hangs.
block_nvcc() {
	cat >"$NVCC" <<WRAP
#!/bin/sh
case " \$* " in
*" --version "*) exec "$REAL_NVCC" --version ;;
esac
echo "\$\$ \$PPID" >"$TEST_DIR/blocked"
exec sleep 1000
WRAP
}

# start_blocked_audit: `cjc audit all` in the background (AUDIT_PID), with
# TMPDIR=$TEST_DIR/tmp, once its nvcc hangs (SLEEPER, CHILD: block_nvcc).
start_blocked_audit() {
	mkdir -p "$TEST_DIR/tmp"
	block_nvcc
	TMPDIR="$TEST_DIR/tmp" "$CJC" audit all >/dev/null &
	AUDIT_PID=$!
	if ! wait_until "[ -s '$TEST_DIR/blocked' ]"; then
		kill "$AUDIT_PID"
		fail "the audit never ran nvcc"
	fi
	read -r SLEEPER CHILD <"$TEST_DIR/blocked"
}

testObjectAndFatbinReproduce() {
	cjc_nvcc -c k.cu -o k.o -arch=$ARCH || fail
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	"$CJC" audit all >audit.txt
	assertEquals "exit status" 0 $?
	assertTrue "two reproducible" "grep -c '^reproducible' audit.txt | grep -qx 2"
	assertTrue "fatbin byte for byte" "grep -q 'output.fatbin: [0-9]* bytes identical' audit.txt"
	assertTrue "object device code" "grep -q '.nv_fatbin: [0-9]* bytes identical' audit.txt"
	assertTrue "object symbols" "grep -q 'symbol table: [0-9]* symbols identical' audit.txt"
	assertTrue "says what was normalised" "grep -q 'normalised: temporary file name tmpxft_' audit.txt"
	assertTrue "summary" "grep -q 'audited 2 entries: 2 reproducible, 0 differ, 0 cannot rebuild' audit.txt"
	expect_nvcc_runs 4
}

testRelocatableObjectByKeyPrefix() {
	cjc_nvcc -dc k.cu -o k.o -arch=$ARCH || fail
	local key
	key=$("$CJC" ls --json | sed -n 's/.*"key": "\(.*\)".*/\1/p')
	"$CJC" audit "${key:0:8}" --json >audit.json || fail "audit of ${key:0:8}"
	assertTrue "relocatable device code compared" "grep -q '__nv_relfatbin: [0-9]* bytes identical' audit.json"
	assertTrue "json counts" "grep -q '\"reproducible\": 1' audit.json"
}

testTamperedFatbinWithRewrittenMetadataDiffers() {
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	local entry
	entry=$(entry_of fatbin)
	cp k.fatbin evil.fatbin
	printf '\x01' | dd of=evil.fatbin bs=1 seek=2000 conv=notrunc 2>/dev/null
	replace_artifact "$entry" output.fatbin evil.fatbin
	"$CJC" verify >/dev/null
	assertEquals "the entry still verifies" 0 $?
	"$CJC" audit all >audit.txt
	assertEquals "exit status" 1 $?
	assertTrue "differs" "grep -q '^differs' audit.txt"
	assertTrue "names the artifact" "grep -q 'differences: output.fatbin differs (stored sha256' audit.txt"
}

testTamperedObjectWithRewrittenMetadataDiffers() {
	cjc_nvcc -c k.cu -o k.o -arch=$ARCH || fail
	sed -i 's/2.0f/9.0f/' k.h
	"$REAL_NVCC" -c k.cu -o evil.o -arch=$ARCH || fail
	sed -i 's/9.0f/2.0f/' k.h
	replace_artifact "$(entry_of object)" output.o evil.o
	"$CJC" audit all --json >audit.json
	assertEquals "exit status" 1 $?
	assertTrue "differs" "grep -q '\"status\": \"differs\"' audit.json"
	assertTrue "device code differs" "grep -q '.nv_fatbin differs' audit.json"
}

testChangedInputCannotRebuild() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	sed -i 's/1.0f/4.0f/' dev.h
	expect_cannot_rebuild 'input dev.h changed (recorded sha256 [0-9a-f]*, now [0-9a-f]*)'
	expect_nvcc_runs 1
}

# A build whose directory was removed afterwards (as pip removes its own):
# its entries cannot rebuild, and the summary says how many for that reason.
testGoneWorkingDirectoryIsCountedInTheSummary() {
	mkdir "$TEST_DIR/gone"
	(cd "$TEST_DIR/gone" && cjc_nvcc --cubin "$TEST_DIR/src/k.cu" -o k.cubin -arch=$ARCH) || fail
	cjc_nvcc --ptx k.cu -o k.ptx -arch=$ARCH || fail
	rm -r "$TEST_DIR/gone"
	expect_cannot_rebuild "the working directory $TEST_DIR/gone is gone: No such file or directory"
	assertTrue "summary: $(tail -n 1 audit.txt)" "grep -qx 'audited 2 entries: 1 reproducible, 0 differ, 1 cannot rebuild (1 because the working directory is gone)' audit.txt"
	"$CJC" audit all --json >audit.json
	assertEquals "json: $(jq -c 'del(.entries)' audit.json)" 1 "$(jq .cwd_gone audit.json)"
}

testOtherCompilerVersionCannotRebuild() {
	cjc_nvcc --ptx k.cu -o k.ptx -arch=$ARCH || fail
	make_nvcc_wrapper "$NVCC" "Cuda compilation tools, release 99.9"
	expect_cannot_rebuild "nvcc $NVCC now prints another --version"
}

testFailingRebuildCannotRebuild() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	# the same nvcc --version, but every compile now fails
	sed -i 's|^exec .*|echo "nvcc fails on purpose" >\&2; exit 3|' "$NVCC"
	expect_cannot_rebuild 'the recorded command failed with status 3: nvcc fails on purpose'
}

testDamagedEntryCannotRebuild() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local entry
	entry=$(entry_of cubin)
	chmod u+w "$entry/output.cubin"
	printf '\x01' | dd of="$entry/output.cubin" bs=1 seek=100 conv=notrunc 2>/dev/null
	expect_cannot_rebuild 'the entry is damaged: .*cjc verify --fix'

}

testEntryWithSassCannotRebuildWithoutCuobjdump() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local entry
	entry=$(entry_of cubin)
	chmod u+w "$entry" "$entry/metadata.json"
	plain_metadata "$entry/metadata.json"
	sed -i 's/^  "duration_ms": \([0-9]*\)$/  "duration_ms": \1,\n  "diagnostics": {"keep_ptx": false, "keep_sass": true, "check_spills": false}/' \
		"$entry/metadata.json"
	assertTrue "metadata edited" "grep -q '\"keep_sass\": true' '$entry/metadata.json'"
	expect_cannot_rebuild 'the entry keeps SASS, and cuobjdump is not installed here' PATH=/usr/bin:/bin
}

testParallelAuditMatchesSerial() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH -DFOO=1 || fail
	cjc_nvcc --ptx k.cu -o k.ptx -arch=$ARCH || fail
	"$CJC" audit all --json | grep '"status"' | sort >serial.txt
	"$CJC" audit all --jobs 3 --json | grep '"status"' | sort >parallel.txt
	assertEquals "three results" 3 "$(grep -c reproducible serial.txt)"
	assertTrue "same results" "cmp serial.txt parallel.txt"
}

testProgressLineOnATerminal() {
	cjc_nvcc --ptx k.cu -o k.ptx -arch=$ARCH || fail
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	script -qec "'$CJC' audit all" /dev/null >tty.txt
	assertEquals "exit status" 0 $?
	assertTrue "progress" "grep -q 'audited 2/2: 2 reproducible, 0 differ, 0 cannot rebuild' tty.txt"
	"$CJC" audit all 2>err.txt >/dev/null
	assertEquals "none when stderr is not a terminal" 0 "$(wc -c <err.txt)"
}

testKeptPtxIsAuditedToo() {
	CJC_KEEP_PTX=1 cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	"$CJC" audit all >audit.txt || fail "audit failed: $(cat audit.txt)"
	assertTrue "kept ptx compared" "grep -q 'kept-k.ptx: [0-9]* bytes identical' audit.txt"
}

testEnvironmentIsRestoredForTheRebuild() {
	CPATH=$PWD NVCC_APPEND_FLAGS=-DSCALE_IS_SET=1 cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	NVCC_APPEND_FLAGS=-DSCALE_IS_SET=1 "$CJC" audit all >audit.txt
	assertEquals "reproducible: CPATH restored from the record: $(cat audit.txt)" 0 $?
	# flags are recorded by their hash (they may hold secrets): the auditor supplies them
	"$CJC" audit all >audit2.txt
	assertEquals "without the variable" 1 $?
	assertTrue "says which: $(cat audit2.txt)" "grep -q 'NVCC_APPEND_FLAGS is recorded by its hash only' audit2.txt"
	NVCC_APPEND_FLAGS=-DOTHER=1 "$CJC" audit all >audit3.txt
	assertEquals "with another value" 1 $?
}

testPlantedCompilerIsNotRun() {
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	mkdir "$TEST_DIR/evil"
	plant "$TEST_DIR/evil/evil"
	edit_metadata "$(entry_of fatbin)" '.compiler.path = $p | .compiler.realpath = $p | .argv[0] = $p' \
		--arg p "$TEST_DIR/evil/evil"
	"$CJC" verify >/dev/null
	assertEquals "the entry still verifies" 0 $?
	expect_cannot_rebuild "the recorded compiler $TEST_DIR/evil/evil is not a trusted nvcc: $TEST_DIR/evil/evil is not named nvcc"
	expect_planted_not_run
}

testPlantedNvccInADirectoryOthersWriteIsNotRun() {
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	mkdir -m 777 "$TEST_DIR/shared"
	plant "$TEST_DIR/shared/nvcc"
	edit_metadata "$(entry_of fatbin)" '.compiler.path = $p | .compiler.realpath = $p | .argv[0] = $p' \
		--arg p "$TEST_DIR/shared/nvcc"
	expect_cannot_rebuild "the recorded compiler $TEST_DIR/shared/nvcc is not a trusted nvcc: $TEST_DIR/shared is writable by others"
	expect_planted_not_run
}

testHostCompilerFromRecordedPrependFlagsIsNotRun() {
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	mkdir -m 777 "$TEST_DIR/shared"
	plant "$TEST_DIR/shared/gcc" "$(command -v gcc)"
	edit_metadata "$(entry_of fatbin)" '.environment.NVCC_PREPEND_FLAGS = $f' \
		--arg f "-ccbin=$TEST_DIR/shared/gcc"
	expect_cannot_rebuild "the host compiler $TEST_DIR/shared/gcc (in NVCC_PREPEND_FLAGS) is not trusted: $TEST_DIR/shared is writable by others"
	expect_planted_not_run
}

testHostCompilerOptionNamingProgramsCannotRebuild() {
	cjc_nvcc -c k.cu -o k.o -arch=$ARCH || fail
	mkdir "$TEST_DIR/tools"
	plant "$TEST_DIR/tools/as" "$(command -v as)"
	edit_metadata "$(entry_of object)" '.argv |= .[0:1] + ["-Xcompiler", $b] + .[1:]' \
		--arg b "-B$TEST_DIR/tools/"
	expect_cannot_rebuild "the argument '-B$TEST_DIR/tools/' (in the recorded command) names a directory the compiler takes its programs from (-B)"
	expect_planted_not_run
}

testShellCodeInAnArgumentIsNotRun() {
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	edit_metadata "$(entry_of fatbin)" '.argv += [$d]' --arg d "-DX=\$(touch $TEST_DIR/planted-ran)"
	expect_cannot_rebuild "the argument '-DX=.*' (in the recorded command) holds '.', which nvcc's shell would act on"
	expect_planted_not_run
}

testHonestHostCompilerOptionsFileAndCodeListReproduce() {
	command -v g++ >/dev/null || { startSkipping; return; }
	echo "-DFROM_FILE=1 -Xcompiler -Wall" >opts.txt
	cjc_nvcc -c k.cu -o k.o -ccbin g++ --options-file opts.txt \
		"--generate-code=arch=${ARCH/sm_/compute_},code=[${ARCH/sm_/compute_},$ARCH]" || fail
	"$CJC" audit all >audit.txt
	assertEquals "reproducible" 0 $?
	assertEquals "nothing in the way" "" "$(grep details audit.txt)"
}

testRelativeCacheAndTemporaryDirectories() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	mkdir "$TEST_DIR/tmp"
	(cd "$TEST_DIR" && CJC_DIR=cache TMPDIR=tmp "$CJC" audit all >src/audit.txt)
	assertEquals "exit status" 0 $?
	assertEquals "nothing in the way" "" "$(grep details audit.txt)"
	assertTrue "two reproducible" "grep -c '^reproducible' audit.txt | grep -qx 2"
	assertEquals "no scratch left" "" "$(ls "$TEST_DIR/tmp")"
}

testTerminatedAuditRemovesItsScratch() {
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	start_blocked_audit
	kill -TERM "$AUDIT_PID"
	wait "$AUDIT_PID"
	assertEquals "no scratch left" "" "$(ls "$TEST_DIR/tmp")"
	wait_until "gone $CHILD"
	assertTrue "its child ended with it" $?
	kill "$SLEEPER"
}

testKilledAuditsScratchIsRemovedByTheNextAudit() {
	cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	start_blocked_audit
	kill -KILL "$AUDIT_PID"
	wait "$AUDIT_PID" 2>/dev/null
	assertTrue "a SIGKILL leaves the scratch" "ls '$TEST_DIR/tmp' | grep -q '^cjc-audit\.'"
	wait_until "gone $CHILD"
	assertTrue "the child ended with the audit" $?
	kill "$SLEEPER"
	make_nvcc_wrapper "$NVCC"
	local live
	live=cjc-audit.$(cjc_host).$$.00000000
	mkdir "$TEST_DIR/tmp/$live"
	TMPDIR="$TEST_DIR/tmp" "$CJC" audit all >audit.txt
	assertEquals "the next audit" 0 $?
	assertEquals "removes the dead audit's scratch, not a live one's" "$live" "$(ls "$TEST_DIR/tmp")"
}

# A JIT entry holds its code (source.cu): the audit rebuilds it from the
# entry alone, the request's file gone.  nvcc's warning names the source
# where each compile ran, the JIT's private copy and the audit's: both are
# dropped.  NVRTC's cubin and ptx come from NVRTC loaded in the audit.  An
# NVRTC ptx edited, with its metadata to match, differs.
testJitEntriesRebuildFromTheEntryAlone() {
	have_nvrtc || startSkipping
	printf 'extern "C" __global__ void jk(float *a) { int unused = 3; a[threadIdx.x] = 2.0f; }\n' >jk.cu
	jit jk.cu >/dev/null 2>&1 || fail "nvcc"
	CJC_JIT_COMPILER=nvrtc jit jk.cu >/dev/null 2>&1 || fail "NVRTC, cubin"
	CJC_JIT_COMPILER=nvrtc jit --format ptx jk.cu >/dev/null 2>&1 || fail "NVRTC, ptx"
	rm jk.cu
	"$CJC" audit all >audit.txt
	assertEquals "exit status: $(cat audit.txt)" 0 $?
	assertEquals "three reproducible" 3 "$(grep -c '^reproducible .* /dev/null/jit/kernel.cu (.*, target jit)' audit.txt)"
	assertEquals "cubins identical" 2 "$(grep -c 'compared: output.cubin: [0-9]* bytes identical' audit.txt)"
	assertTrue "ptx identical" "grep -q 'compared: output.ptx: [0-9]* bytes identical' audit.txt"
	assertEquals "each warning compared" 3 "$(grep -c 'compared: stderr: [0-9]* bytes identical' audit.txt)"
	assertTrue "nvcc's paths normalised" "grep -q \"normalised: the source's directory\" audit.txt"
	expect_nvcc_runs 2
	local entry
	entry=$(entry_of ptx)
	{ cat "$entry/output.ptx"; echo '// edited'; } >evil.ptx
	replace_artifact "$entry" output.ptx evil.ptx
	"$CJC" audit "$(basename "$entry")" >audit.txt
	assertEquals "a tampered ptx" 1 $?
	assertTrue "differs: $(cat audit.txt)" "grep -q '^differs' audit.txt"
	assertTrue "names it" "grep -q 'differences: output.ptx differs (stored sha256' audit.txt"
}

# What the entry does not hold is not rebuilt, and nothing runs or loads: a
# post-compile hook's code; an NVRTC another user could have replaced.
testJitEntriesWithoutWhatTheyNeedCannotRebuild() {
	have_nvrtc || startSkipping
	printf 'extern "C" __global__ void one(float *a) { a[0] = 1.0f; }\n' >one.cu
	CJC_JIT_COMPILER=nvrtc jit one.cu >/dev/null || fail "NVRTC"
	local entry
	entry=$(entry_of cubin)
	cp "$entry/metadata.json" made.json
	edit_metadata "$entry" '.jit.hook = "strip-debug-1"'
	expect_cannot_rebuild 'made with the post-compile hook strip-debug-1, whose code the entry does not hold'
	cp made.json "$entry/metadata.json"
	mkdir -m 777 "$TEST_DIR/shared"
	touch "$TEST_DIR/shared/libnvrtc.so.13"
	edit_metadata "$entry" '.compiler.realpath = $p' --arg p "$TEST_DIR/shared/libnvrtc.so.13"
	expect_cannot_rebuild "the recorded NVRTC $TEST_DIR/shared/libnvrtc.so.13 is not trusted: $TEST_DIR/shared is writable by others"
}

testBadUsage() {
	"$CJC" audit 2>err.txt
	assertEquals "no argument" 2 $?
	assertTrue "says what to give" "grep -q 'KEY' err.txt"
	"$CJC" audit all --jobs 0 2>/dev/null
	assertEquals "bad --jobs" 2 $?
	"$CJC" audit XYZ 2>/dev/null
	assertEquals "not hex" 2 $?
	"$CJC" audit abcdef 2>err.txt
	assertEquals "no such entry" 1 $?
	assertTrue "says so" "grep -q 'no entry matches' err.txt"
}

testAForgedKindIsShownEscapedOrInvalid() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local entry key
	entry=$(entry_of cubin)
	key=$(basename "$entry")
	edit_metadata "$entry" '.options.kind = "cubin\u001b]0;owned\u0007"'
	"$CJC" show "$key" >show.txt || fail "show"
	"$CJC" audit all >audit.txt
	assertFalse "show prints no control byte" "grep -q '[[:cntrl:]]' show.txt"
	assertContains "show escapes the kind" "$(cat show.txt)" 'cubin\x1b]0;owned\x07'
	assertFalse "audit prints no control byte" "grep -q '[[:cntrl:]]' audit.txt"
	assertContains "audit escapes the kind" "$(cat audit.txt)" 'cubin\x1b]0;owned\x07'
	edit_metadata "$entry" '.options.kind = 7'
	"$CJC" show "$key" >show.txt || fail "show"
	"$CJC" audit all >audit.txt
	assertContains "show: not a string" "$(grep '^kind' show.txt)" "(invalid: not a string)"
	assertContains "audit: not a string" "$(cat audit.txt)" "(invalid: not a string)"
	assertNotContains "$(cat show.txt audit.txt)" "(null)"
}

. "$SHUNIT2"
