#!/bin/bash
# environment_test.sh - every variable nvcc, its stages and the host compiler
# read is keyed, makes the compile uncacheable, or has no effect (the table
# in docs/key.md), shown against plain nvcc: with the cache warmed without
# it, each variable set to a value that changes nvcc's output (or its exit
# status) gives, through cjc and through the JIT library's nvcc path, the
# bytes and status plain nvcc gives.  And the time: a file that uses
# __TIME__, __DATE__ or __TIMESTAMP__ is uncacheable (said by `cjc why` and
# the counters) unless SOURCE_DATE_EPOCH fixes it, then keyed by its value.

. "$(dirname "$0")/helpers.sh"
unset INCLUDES SYSTEM_INCLUDES CUDAFE_FLAGS PTXAS_FLAGS NVVM_FLAGS OCG_FLAGS SOURCE_DATE_EPOCH \
	COMPILER_PATH GCC_EXEC_PREFIX DEPENDENCIES_OUTPUT SUNPRO_DEPENDENCIES

# env.cu: device code that each variable below changes.  <val.h> is found
# in sys/ (-isystem); an -I directory from the environment shadows it.
write_env_source() {
	mkdir -p sys shadow
	echo '#define VAL 1' >sys/val.h
	echo '#define VAL 2' >shadow/val.h
	cat >env.cu <<'SRC'
#include <val.h>
__global__ void k(int *p, int n)
{
	for (int i = 0; i < n; i++)
#ifdef X
		p[i] = X * VAL + i;
#else
		p[i] = VAL + i;
#endif
}
SRC
}

# A fake assembler: fails, as a broken one found first would.
write_fake_as() {
	mkdir -p "$TEST_DIR/fakeas"
	printf '#!/bin/sh\necho "fake as" >&2\nexit 1\n' >"$TEST_DIR/fakeas/as"
	chmod +x "$TEST_DIR/fakeas/as"
}

kind_flag() {
	case $1 in o) echo -c ;; cubin) echo --cubin ;; fatbin) echo --fatbin ;; esac
}

# same_as_nvcc EXT ASSIGNMENT: with the cache warm for env.cu without it,
# cjc with ASSIGNMENT gives plain nvcc's status and (device) bytes, and the
# assignment does change one of them (else it proves nothing).
same_as_nvcc() {
	local ext=$1 flag mine theirs
	flag=$(kind_flag "$ext")
	[ -f "warm.$ext" ] || cjc_nvcc "$flag" -arch=$ARCH -isystem sys env.cu -o "warm.$ext" ||
		fail "warm $ext"
	rm -f "cjc.$ext" "plain.$ext"
	env "$2" "$CJC" "$NVCC" "$flag" -arch=$ARCH -isystem sys env.cu -o "cjc.$ext" 2>/dev/null
	mine=$?
	env "$2" "$REAL_NVCC" "$flag" -arch=$ARCH -isystem sys env.cu -o "plain.$ext" 2>/dev/null
	theirs=$?
	assertEquals "$2 ($ext): cjc's status is nvcc's" "$theirs" "$mine"
	if [ "$theirs" = 0 ]; then
		assert_same_devcode "plain.$ext" "cjc.$ext"
		[ "$ext" = o ] && devcode warm.o >/dev/null
		[ "$ext" = o ] || cp "warm.$ext" "warm.$ext.devcode"
		assertFalse "$2 changes nvcc's output ($ext)" "cmp -s warm.$ext.devcode plain.$ext.devcode"
	fi
}

testEveryVariableForCubin() {
	write_env_source
	write_fake_as
	local a
	for a in INCLUDES=-DX=7 "SYSTEM_INCLUDES=-I$PWD/shadow" "INCLUDES=-I shadow" \
		"CPATH=$PWD/shadow" PTXAS_FLAGS=-O0 OCG_FLAGS=-O0 NVVM_FLAGS=-no-such-flag \
		NVCC_APPEND_FLAGS=-DX=3 NVCC_PREPEND_FLAGS=-DX=5 GCC_EXEC_PREFIX=/nowhere/ \
		TMPDIR=/nowhere "INCLUDES=-Wp,-DX=9"; do
		same_as_nvcc cubin "$a"
	done
}

testRepresentativeVariablesForObjectsAndFatbins() {
	write_env_source
	write_fake_as
	local a
	for a in INCLUDES=-DX=7 "COMPILER_PATH=$TEST_DIR/fakeas" CUDAFE_FLAGS=--no-such-flag; do
		same_as_nvcc o "$a"
	done
	for a in PTXAS_FLAGS=-O0 "SYSTEM_INCLUDES=-I$PWD/shadow"; do
		same_as_nvcc fatbin "$a"
	done
}

# includescan.h: an -I directory of INCLUDES is searched before -isystem,
# so a header created there later must cause a miss.
testHeaderCreatedInAnIncludesDirectoryMisses() {
	write_env_source
	mkdir -p later
	INCLUDES="-I$PWD/later" cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu -o a.cubin || fail "miss"
	cp shadow/val.h later/val.h
	INCLUDES="-I$PWD/later" cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu -o b.cubin || fail "again"
	INCLUDES="-I$PWD/later" "$REAL_NVCC" --cubin -arch=$ARCH -isystem sys env.cu -o c.cubin || fail "nvcc"
	expect_nvcc_runs 2
	assertTrue "the new header is compiled in" "cmp -s b.cubin c.cubin"
}

# later_header_seen DIR ASSIGNMENT ARGS...: env.cu compiled through cjc
# with ASSIGNMENT (VAR=value) and ARGS, then a val.h created in DIR, which
# nvcc searches before sys/: cjc's second compile is plain nvcc's, new.
later_header_seen() {
	local dir=$1 set=$2
	shift 2
	write_env_source
	mkdir -p "$dir"
	rm -f "$dir/val.h"
	env "$set" "$CJC" "$NVCC" --cubin -arch=$ARCH "$@" env.cu -o a.cubin || fail "first"
	cp shadow/val.h "$dir/val.h"
	env "$set" "$CJC" "$NVCC" --cubin -arch=$ARCH "$@" env.cu -o b.cubin || fail "again"
	env "$set" "$REAL_NVCC" --cubin -arch=$ARCH "$@" env.cu -o c.cubin || fail "nvcc"
	assertFalse "$set $*: the new header changes nvcc's output" "cmp -s a.cubin c.cubin"
	assertTrue "$set $*: the new header is compiled in" "cmp -s b.cubin c.cubin"
}

# NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS are parsed as the command's words.
testIncludeOptionsInFlagVariables() {
	later_header_seen later "NVCC_PREPEND_FLAGS=-Ilater" -isystem sys
	later_header_seen later "NVCC_APPEND_FLAGS=-Ilater" -isystem sys
}

testIncludeCommaListsAreSplit() {
	later_header_seen later NO_SETTING=1 -Ilater,sys
	later_header_seen later NO_SETTING=1 -isystem later,sys
}

# An empty element of CPATH is the working directory.
testEmptyCpathElementIsTheWorkingDirectory() {
	later_header_seen . "CPATH=:/nonexistent" -isystem sys
}

# gcc drops an -I naming a directory also given by -isystem (the same
# inode, through a link too): -I later then comes first.
testIncludeDirectoryDuplicatingASystemOneIsDropped() {
	ln -s sys link
	later_header_seen later NO_SETTING=1 -Isys -Ilater -isystem sys
	later_header_seen later NO_SETTING=1 -Ilink -Ilater -isystem sys
	# and an -I naming a standard directory: <zlib.h> from later/ first
	[ -f /usr/include/zlib.h ] || return 0
	printf '#include <zlib.h>\n#ifndef TAG\n#define TAG 1\n#endif\n%s\n' \
		'__global__ void k(int *p) { *p = TAG; }' >z.cu
	rm -f later/zlib.h
	cjc_nvcc --cubin -arch=$ARCH -I/usr/include -Ilater z.cu -o z1.cubin || fail "zlib first"
	echo '#define TAG 2' >later/zlib.h
	cjc_nvcc --cubin -arch=$ARCH -I/usr/include -Ilater z.cu -o z2.cubin || fail "zlib again"
	"$REAL_NVCC" --cubin -arch=$ARCH -I/usr/include -Ilater z.cu -o z3.cubin || fail "zlib nvcc"
	assertFalse "later/zlib.h changes nvcc's output" "cmp -s z1.cubin z3.cubin"
	assertTrue "-I/usr/include: later/zlib.h is compiled in" "cmp -s z2.cubin z3.cubin"
}

# X.h defines X, first from pre/; one created in later/ (searched first)
# replaces it, wherever -include X.h is given.
forced_header_seen() {
	local set=$1
	shift
	write_env_source
	mkdir -p later pre
	rm -f later/X.h
	echo '#define X 4' >pre/X.h
	env "$set" "$CJC" "$NVCC" --cubin -arch=$ARCH -isystem sys "$@" env.cu -o a.cubin || fail "first"
	echo '#define X 6' >later/X.h
	env "$set" "$CJC" "$NVCC" --cubin -arch=$ARCH -isystem sys "$@" env.cu -o b.cubin || fail "again"
	env "$set" "$REAL_NVCC" --cubin -arch=$ARCH -isystem sys "$@" env.cu -o c.cubin || fail "nvcc"
	assertFalse "$set $*: the new header changes nvcc's output" "cmp -s a.cubin c.cubin"
	assertTrue "$set $*: the new header is compiled in" "cmp -s b.cubin c.cubin"
}

testForcedIncludesFromEveryOrigin() {
	forced_header_seen "INCLUDES=-I$PWD/later -I$PWD/pre -include X.h"
	# a comma list, in NVCC_PREPEND_FLAGS
	forced_header_seen "NVCC_PREPEND_FLAGS=-include sys/val.h,X.h" -Ilater -Ipre
}

# Options files named in NVCC_APPEND_FLAGS are keyed by their contents.
testOptionsFileInFlagVariable() {
	write_env_source
	echo -DX=3 >opts.txt
	NVCC_APPEND_FLAGS="-optf opts.txt" cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu \
		-o a.cubin || fail "first"
	echo -DX=5 >opts.txt
	NVCC_APPEND_FLAGS="-optf opts.txt" cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu \
		-o b.cubin || fail "again"
	NVCC_APPEND_FLAGS="-optf opts.txt" "$REAL_NVCC" --cubin -arch=$ARCH -isystem sys env.cu \
		-o c.cubin || fail "nvcc"
	assertFalse "the file changes nvcc's output" "cmp -s a.cubin c.cubin"
	assertTrue "the file's new contents are compiled in" "cmp -s b.cubin c.cubin"
}

# -G in NVCC_APPEND_FLAGS records the working directory, as on the command
# line; -MD there writes a dependency file a hit would not: uncacheable.
testDebugAndDependencyOptionsInFlagVariable() {
	write_env_source
	mkdir -p A B
	local src=$PWD/env.cu sys=$PWD/sys
	(cd A && NVCC_APPEND_FLAGS=-G cjc_nvcc --cubin -arch=$ARCH -isystem "$sys" "$src" \
		-o a.cubin) || fail "in A"
	(cd B && NVCC_APPEND_FLAGS=-G cjc_nvcc --cubin -arch=$ARCH -isystem "$sys" "$src" \
		-o b.cubin) || fail "in B"
	expect_why B/b.cubin "working directory changed"
	NVCC_APPEND_FLAGS=-MD cjc_nvcc -c -arch=$ARCH -isystem sys env.cu -o m.o || fail "-MD"
	expect_why m.o "uncacheable"
	assertTrue "nvcc wrote the dependency file" "[ -s m.d ]"
}

testUncacheableVariablesAreCountedAndSaid() {
	write_env_source
	cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu -o a.cubin || fail "warm"
	DEPENDENCIES_OUTPUT=$TEST_DIR/deps.d cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu \
		-o b.cubin || fail "uncached"
	assertTrue "gcc wrote the dependency file, as with plain nvcc" "[ -s '$TEST_DIR/deps.d' ]"
	expect_nvcc_runs 2
	expect_stat uncacheable 1
	expect_why b.cubin "DEPENDENCIES_OUTPUT is set"
	"$CJC" stats --json | jq -e '.uncacheable_reasons | keys | any(test("DEPENDENCIES_OUTPUT"))' \
		>/dev/null || fail "no counter for the reason: $("$CJC" stats --json)"
	# a stage's flags are keyed as text: one that may name a file runs uncached
	local mine theirs
	PTXAS_FLAGS="-O3 $PWD/sys/val.h" "$CJC" "$NVCC" --cubin -arch=$ARCH -isystem sys env.cu \
		-o c.cubin 2>/dev/null
	mine=$?
	PTXAS_FLAGS="-O3 $PWD/sys/val.h" "$REAL_NVCC" --cubin -arch=$ARCH -isystem sys env.cu \
		-o d.cubin 2>/dev/null
	theirs=$?
	assertEquals "PTXAS_FLAGS naming a file: cjc's status is nvcc's" "$theirs" "$mine"
	expect_stat uncacheable 2
	expect_why c.cubin "flags variable"
}

write_time_source() {
	cat >t.cu <<'SRC'
#include "stamp.h"
__device__ const char when[] = STAMP;
__global__ void k(char *p) { p[threadIdx.x] = when[threadIdx.x % sizeof when]; }
SRC
	echo "#define STAMP $1" >stamp.h
}

testTimeMacroIsUncacheable() {
	write_time_source '"fixed"'
	echo '__global__ void at(char *p) { p[threadIdx.x] = __TIME__[threadIdx.x % 8]; }' >>t.cu
	cjc_nvcc --cubin -arch=$ARCH t.cu -o a.cubin || fail "first"
	cjc_nvcc --cubin -arch=$ARCH t.cu -o b.cubin || fail "second"
	expect_nvcc_runs 2
	expect_stat hits 0
	expect_stat uncacheable 2
	assertEquals "nothing is stored" 0 "$(entry_count)"
	expect_why b.cubin "__TIME__ in"
	"$CJC" stats --json | jq -e '.uncacheable_reasons | keys | any(test("time macro"))' \
		>/dev/null || fail "no counter for the reason: $("$CJC" stats --json)"
}

testTimeMacroInAHeaderCounts() {
	write_time_source __DATE__
	cjc_nvcc --cubin -arch=$ARCH t.cu -o a.cubin || fail "first"
	cjc_nvcc --cubin -arch=$ARCH t.cu -o b.cubin || fail "second"
	expect_nvcc_runs 2
	expect_stat uncacheable 2
	expect_why b.cubin "__DATE__ in"
	write_time_source __TIMESTAMP__
	SOURCE_DATE_EPOCH=1 cjc_nvcc --cubin -arch=$ARCH t.cu -o c.cubin || fail "timestamp"
	expect_stat uncacheable 3
	expect_why c.cubin "__TIMESTAMP__ in"
}

testSourceDateEpochKeysTheTime() {
	write_time_source '__DATE__ " " __TIME__'
	SOURCE_DATE_EPOCH=1000000000 cjc_nvcc --cubin -arch=$ARCH t.cu -o a.cubin || fail "miss"
	SOURCE_DATE_EPOCH=1000000000 cjc_nvcc --cubin -arch=$ARCH t.cu -o b.cubin || fail "hit"
	expect_nvcc_runs 1
	expect_stat hits 1
	SOURCE_DATE_EPOCH=2000000000 cjc_nvcc --cubin -arch=$ARCH t.cu -o c.cubin || fail "other"
	SOURCE_DATE_EPOCH=2000000000 "$REAL_NVCC" --cubin -arch=$ARCH t.cu -o d.cubin || fail "nvcc"
	expect_nvcc_runs 2
	assertTrue "another time, another cubin" "cmp -s c.cubin d.cubin"
	assertFalse "the time is in the cubin" "cmp -s a.cubin c.cubin"
}

# A time macro in an option word, from each origin nvcc takes words from
# (the command, an options file, NVCC_APPEND_FLAGS, INCLUDES): every compile
# runs nvcc; with SOURCE_DATE_EPOCH it is cached, keyed by the time.
testATimeMacroInAnOptionIsUncacheable() {
	write_env_source
	local i word='-DX=__TIME__[7]'
	echo "$word" >opts.txt
	for i in 1 2; do
		cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu "$word" -o a.cubin || fail "command"
		cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu --options-file opts.txt -o b.cubin ||
			fail "options file"
		NVCC_APPEND_FLAGS=$word cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu -o c.cubin ||
			fail "NVCC_APPEND_FLAGS"
		INCLUDES=$word cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu -o d.cubin || fail "INCLUDES"
	done
	expect_nvcc_runs 8
	expect_stat hits 0
	expect_stat uncacheable 8
	expect_why b.cubin "an option names a time macro"
	for i in 1 2; do
		SOURCE_DATE_EPOCH=1000000000 cjc_nvcc --cubin -arch=$ARCH -isystem sys env.cu "$word" \
			-o e.cubin || fail "with SOURCE_DATE_EPOCH"
	done
	expect_nvcc_runs 9
	SOURCE_DATE_EPOCH=1000000000 "$REAL_NVCC" --cubin -arch=$ARCH -isystem sys env.cu "$word" \
		-o f.cubin || fail "nvcc"
	assertTrue "the hit is nvcc's cubin" "cmp -s e.cubin f.cubin"
}

# A line splice inside the name (the preprocessor joins it first) hides
# no time macro.
testALineSpliceHidesNoTimeMacro() {
	write_time_source '"fixed"'
	printf '#define STAMP __TI\\\nME__\n' >stamp.h
	cjc_nvcc --cubin -arch=$ARCH t.cu -o a.cubin || fail "first"
	cjc_nvcc --cubin -arch=$ARCH t.cu -o b.cubin || fail "second"
	expect_nvcc_runs 2
	expect_stat uncacheable 2
	expect_why b.cubin "__TIME__ in"
}

# A name pasted together (a ## b or %:%:, nested, a splice inside a piece,
# the pieces in -D options) is seen where the preprocessor expanded it, in
# the texts nvcc -keep kept.  __TIMESTAMP__ is the source's stamp: after a
# touch, the second compile is nvcc's of the new stamp, not the first's.
testAPastedTimeMacroIsSeen() {
	write_time_source '"fixed"'
	printf '#define CAT(a, b) a %%:%%: b\n#define XCAT(a, b) CAT(a, b)\n%s\n%s\n' \
		'#define STAMP XCAT(CAT(_, _), TIMES\' 'TAMP__)' >stamp.h
	touch -d @1000000000 t.cu
	cjc_nvcc --cubin -arch=$ARCH t.cu -o a.cubin || fail "first"
	touch -d @2000000000 t.cu
	cjc_nvcc --cubin -arch=$ARCH t.cu -o b.cubin || fail "second"
	"$REAL_NVCC" --cubin -arch=$ARCH t.cu -o c.cubin || fail "nvcc"
	assertTrue "the second cubin is nvcc's of the new stamp" "cmp -s b.cubin c.cubin"
	assertFalse "the stamp is in the cubin" "cmp -s a.cubin b.cubin"
	expect_why b.cubin "__TIMESTAMP__ expanded"
	printf '#define CAT(a, b) a##b\n#define XCAT(a, b) CAT(a, b)\n#define STAMP XCAT(L, R)\n' \
		>stamp.h
	cjc_nvcc --cubin -arch=$ARCH t.cu -DL=__TI -DR=ME__ -o d.cubin || fail "pieces 1"
	cjc_nvcc --cubin -arch=$ARCH t.cu -DL=__TI -DR=ME__ -o e.cubin || fail "pieces 2"
	expect_nvcc_runs 4
	expect_stat hits 0
	expect_stat uncacheable 4
	assertEquals "nothing is stored" 0 "$(entry_count)"
	[ -n "${CJC_JIT_CLI:-}" ] || return 0
	local said
	said=$(jit --out f.cubin t.cu -I"$PWD" -DL=__TI -DR=ME__) || fail "JIT 1"
	said=$(jit --out g.cubin t.cu -I"$PWD" -DL=__TI -DR=ME__) || fail "JIT 2"
	assertEquals "the JIT library's nvcc path sees it too" miss "${said%% *}"
}

# The JIT library's nvcc path: the same keying, the same time rule.
testJitNvccPath() {
	[ -n "${CJC_JIT_CLI:-}" ] || { startSkipping; return; }
	write_env_source
	local said
	said=$(jit --out a.cubin env.cu -isystem "$PWD/sys") || fail "warm"
	said=$(INCLUDES=-DX=7 jit --out b.cubin env.cu -isystem "$PWD/sys") || fail "with INCLUDES"
	assertEquals "INCLUDES is keyed" miss "${said%% *}"
	INCLUDES=-DX=7 "$REAL_NVCC" --cubin -arch=$ARCH env.cu -isystem sys -o c.cubin || fail "nvcc"
	assertTrue "the JIT library's cubin is nvcc's" "cmp -s b.cubin c.cubin"
	GCC_EXEC_PREFIX=/nowhere/ jit --out d.cubin env.cu -isystem "$PWD/sys" >/dev/null 2>&1 &&
		fail "plain nvcc fails with GCC_EXEC_PREFIX=/nowhere/; the JIT library succeeded"
	write_time_source __TIME__
	said=$(jit --out t1.cubin t.cu -I"$PWD") || fail "time 1"
	said=$(jit --out t2.cubin t.cu -I"$PWD") || fail "time 2"
	assertEquals "a time macro is not cached" miss "${said%% *}"
	write_time_source '"fixed"'
	said=$(jit t.cu -I"$PWD" '-DX=__TIME__') || fail "time option 1"
	said=$(jit t.cu -I"$PWD" '-DX=__TIME__') || fail "time option 2"
	assertEquals "an option's time macro is not cached" "miss -" "$said"
	expect_stat hits 0
}

# The JIT library's nvcc path splits -I's comma list too.
testJitNvccPathSplitsCommaLists() {
	[ -n "${CJC_JIT_CLI:-}" ] || { startSkipping; return; }
	write_env_source
	mkdir -p later
	jit --out a.cubin env.cu -I"$PWD/later,$PWD/sys" >/dev/null || fail "warm"
	cp shadow/val.h later/val.h
	jit --out b.cubin env.cu -I"$PWD/later,$PWD/sys" >/dev/null || fail "again"
	"$REAL_NVCC" --cubin -arch=$ARCH env.cu -I"$PWD/later,$PWD/sys" -o c.cubin || fail "nvcc"
	assertTrue "the new header is compiled in" "cmp -s b.cubin c.cubin"
}

. "$SHUNIT2"
