#!/bin/bash
# `cjc audit` rebuilds entries from their metadata and proves them, or says
# what differs or why it cannot rebuild.
. "$(dirname "$0")/helpers.sh"

# entry_of OUTPUT-KIND: the entry directory of the only entry of that kind.
entry_of() {
	"$CJC" ls --json | tr -d '\n ' | sed 's/},{/}\n{/g' | grep "\"kind\":\"$1\"" |
		sed -n 's/.*"path":"\([^"]*\)".*/\1/p'
}

# replace_artifact ENTRY NAME FILE: puts FILE in place of an artifact and
# rewrites metadata.json to match, so that the entry still verifies.
replace_artifact() {
	local meta=$1/metadata.json old_sha new_sha old_size new_size
	old_sha=$(sha256sum "$1/$2" | cut -d' ' -f1)
	new_sha=$(sha256sum "$3" | cut -d' ' -f1)
	old_size=$(stat -c %s "$1/$2")
	new_size=$(stat -c %s "$3")
	chmod u+w "$1" "$1/$2" "$meta"
	cp "$3" "$1/$2"
	sed -i "s/$old_sha/$new_sha/; s/\"size\": $old_size,/\"size\": $new_size,/" "$meta"
}

# expect_cannot_rebuild DETAIL [VAR=VALUE...]: `cjc audit all` (in that
# environment) exits 1, reports "cannot rebuild" and gives the detail.
expect_cannot_rebuild() {
	env "${@:2}" "$CJC" audit all >audit.txt
	assertEquals "exit status" 1 $?
	assertTrue "cannot rebuild" "grep -q '^cannot rebuild' audit.txt"
	assertTrue "says why: $1" "grep -q \"details: $1\" audit.txt"
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
	cjc_nvcc -c k.cu -o k.o -arch=$ARCH || fail
	sed -i 's/1.0f/4.0f/' dev.h
	expect_cannot_rebuild 'input dev.h changed (recorded sha256 [0-9a-f]*, now [0-9a-f]*)'
	expect_nvcc_runs 1
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
	sed -i 's/^  "duration_ms": \([0-9]*\)$/  "duration_ms": \1,\n  "diagnostics": {"keep_ptx": false, "keep_sass": true, "check_spills": false}/' \
		"$entry/metadata.json"
	assertTrue "metadata edited" "grep -q '\"keep_sass\": true' '$entry/metadata.json'"
	expect_cannot_rebuild 'the entry keeps SASS, and cuobjdump is not installed here' PATH=/usr/bin:/bin
}

testParallelAuditMatchesSerial() {
	cjc_nvcc -c k.cu -o a.o -arch=$ARCH || fail
	cjc_nvcc -c k.cu -o b.o -arch=$ARCH -DFOO=1 || fail
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
	NVCC_APPEND_FLAGS=-DSCALE_IS_SET=1 cjc_nvcc --fatbin k.cu -o k.fatbin -arch=$ARCH || fail
	"$CJC" audit all >audit.txt
	assertEquals "reproducible without the variable in the auditor's environment" 0 $?
	NVCC_APPEND_FLAGS=-DOTHER=1 "$CJC" audit all >audit2.txt
	assertEquals "and with another value in it" 0 $?
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

. "$SHUNIT2"
