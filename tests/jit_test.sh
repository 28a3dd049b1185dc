#!/bin/bash
# jit_test.sh - the JIT library (docs/jit.md) through its drivers
# tests/jit/jit_cli.c and jit_threads_test.c: a hit returns the bytes
# `nvcc --cubin` makes without compiling, every option and setting is in the
# key, damaged entries are recompiled and left alone, the store's races
# (8 processes, a killed writer, 16 threads, fork) hold, the settings
# resolve DeepJIT's way, and a miss works in a private directory that no
# other user can reach (docs/trust.md), as a second user tries.

. "$(dirname "$0")/helpers.sh"
: "${CJC_JIT_CLI:?set CJC_JIT_CLI to build/tests/jit_cli}"
: "${CJC_JIT_THREADS:?set CJC_JIT_THREADS to build/tests/jit_threads_test}"

write_kernel() {
	cat >kernel.cu <<'SRC'
#include "tile.h"
extern "C" __global__ void scale(float *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] = a[i] * FACTOR;
}
SRC
	mkdir -p inc
	echo '#define FACTOR 2.0f' >inc/tile.h
}

entry_dir() {
	echo "$CJC_DIR"/v1/*/entries/"${1:0:2}"/"$1"
}

# make_spy_nvcc: $TEST_DIR/bin/nvcc-spy, an nvcc that writes to
# $TEST_DIR/spy, for each compile, the mode, owner and path of its TMPDIR,
# and the sources it was given.
make_spy_nvcc() {
	cat >"$TEST_DIR/bin/nvcc-spy" <<WRAP
#!/bin/sh
case " \$* " in *" --version "*) ;; *)
	stat -c '%a %u %n' "\$TMPDIR" >>"$TEST_DIR/spy"
	for a; do case \$a in *.cu) echo "source \$a" >>"$TEST_DIR/spy" ;; esac; done ;;
esac
exec "$NVCC" "\$@"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-spy"
}

# The miss works in a directory of its own under TMPDIR (0700, the caller's,
# gone when the call returns), not in the store; where that was is in no
# key, so a copy of the store hits.
testAHitSkipsTheCompileAndReturnsNvccsCubin() {
	write_kernel
	make_spy_nvcc
	mkdir "$TEST_DIR/tmp"
	local spy=$TEST_DIR/bin/nvcc-spy first second copied mode owner private source
	first=$(JIT_NVCC=$spy TMPDIR=$TEST_DIR/tmp jit --out a.cubin kernel.cu -I"$PWD/inc") || fail "miss"
	second=$(JIT_NVCC=$spy jit --out b.cubin kernel.cu -I"$PWD/inc") || fail "hit"
	cp -a "$CJC_DIR" "$TEST_DIR/copy"
	copied=$(JIT_NVCC=$spy CJC_DIR=$TEST_DIR/copy jit --out c.cubin kernel.cu -I"$PWD/inc") ||
		fail "copy"
	assertEquals "miss ${first#miss }" "$first"
	assertEquals "hit ${first#miss }" "$second"
	assertEquals "a copy of the store hits" "hit ${first#miss }" "$copied"
	expect_nvcc_runs 1
	read -r mode owner private <"$TEST_DIR/spy"
	source=$(sed -n 's/^source //p' "$TEST_DIR/spy")
	assertEquals "the private directory's mode" 700 "$mode"
	assertEquals "and owner" "$(id -u)" "$owner"
	assertEquals "in TMPDIR" "$(readlink -f "$TEST_DIR/tmp")" "$(dirname "$private")"
	assertEquals "the source is in it" "$private/" "${source%"${source#"$private/"}"}"
	assertFalse "it is gone after the call" "[ -e '$private' ]"
	assertEquals "and nothing is left in TMPDIR" "" "$(ls -A "$TEST_DIR/tmp")"
	assertFalse "nothing in the store but the store" "[ -e '$CJC_DIR/jit-sources' ]"
	"$REAL_NVCC" --cubin -arch=$ARCH -I"$PWD/inc" kernel.cu -o nvcc.cubin || fail "nvcc"
	assertTrue "the miss returns nvcc's bytes" "cmp -s a.cubin nvcc.cubin"
	assertTrue "the hit returns nvcc's bytes" "cmp -s b.cubin nvcc.cubin"
	assertTrue "and the copy's" "cmp -s c.cubin nvcc.cubin"
	expect_stat hits 1
	expect_stat misses 1
}

# A member of a group store (2775, umask 002) plants jit-sources in its root,
# a link to a directory of hers with a tile.h where the old layout put the
# source (the first place #include "tile.h" looks), and root's TMPDIR is
# that directory too.  Root's compile returns what nvcc makes of root's code
# and writes nothing there: nothing is created or removed in any directory
# of hers (their mtimes and ctimes hold).
testAMemberCannotReachAJitCompile() {
	local member=cjc-member2 group=cjc-team
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v useradd >/dev/null; then
		startSkipping
		return
	fi
	getent group $group >/dev/null || groupadd $group || getent group $group >/dev/null || fail "group"
	id -u $member >/dev/null 2>&1 || useradd -M -N -s /usr/sbin/nologin -g $group $member ||
		id -u $member >/dev/null 2>&1 || fail "user"
	write_kernel
	chmod 755 "$TEST_DIR"
	mkdir -p "$CJC_DIR" "$TEST_DIR/hers" && chgrp $group "$CJC_DIR" && chmod 2775 "$CJC_DIR" &&
		chown $member "$TEST_DIR/hers" || fail "the store"
	local h
	h=$({ printf 'kernel.cu\0'; cat kernel.cu; printf '\0'; } | sha256sum | cut -c1-64)
	setpriv --reuid=$member --regid="$(id -g $member)" --init-groups sh -c '
		mkdir -p "$1/$2" && echo "#define FACTOR 666.0f" >"$1/$2/tile.h" &&
		chmod -R a+rwx "$1" && ln -s "$1" "$3/jit-sources"' sh "$TEST_DIR/hers" "${h:0:2}/$h" \
		"$CJC_DIR" || fail "the member cannot plant"
	local before
	before=$(find "$TEST_DIR/hers" -printf '%p %T@ %C@\n')
	(umask 002 && CJC_UMASK=002 TMPDIR=$TEST_DIR/hers jit --out a.cubin kernel.cu -I"$PWD/inc") \
		>/dev/null || fail "the compile"
	"$REAL_NVCC" --cubin -arch=$ARCH -I"$PWD/inc" kernel.cu -o nvcc.cubin || fail "nvcc"
	assertTrue "root gets nvcc's cubin of root's code" "cmp -s a.cubin nvcc.cubin"
	assertEquals "nothing written in her directory" "$before" \
		"$(find "$TEST_DIR/hers" -printf '%p %T@ %C@\n')"
}

testTheEntryIsAnOrdinaryEntry() {
	write_kernel
	local key
	key=$(jit kernel.cu -I"$PWD/inc" | cut -d' ' -f2)
	assertEquals "cjc ls lists it" 1 "$(entry_count)"
	"$CJC" ls | grep -q "$key.*cubin.*jit" || fail "ls shows kind and target"
	assertEquals "cjc show --json" "$key" "$("$CJC" show "$key" --json | jq -r .key)"
	"$CJC" show "$key" --json | jq -e '.inputs | map(.path) | any(endswith("inc/tile.h"))' >/dev/null ||
		fail "metadata lists the header nvcc read"
	"$CJC" verify >/dev/null || fail "cjc verify"
	"$CJC" gc --max-size 1 >/dev/null || fail "cjc gc"
	assertEquals "gc evicted it" 0 "$(entry_count)"
	assertEquals "and the next compile misses" miss "$(jit kernel.cu -I"$PWD/inc" | cut -d' ' -f1)"
}

testAHeaderChangeOrAShadowingHeaderMisses() {
	write_kernel
	local dirs=(-I"$PWD/inc0" -I"$PWD/inc" -I"$PWD/inc2")
	jit kernel.cu "${dirs[@]}" >/dev/null || fail
	echo '#define FACTOR 3.0f' >inc/tile.h
	assertEquals "a changed header" miss "$(jit kernel.cu "${dirs[@]}" | cut -d' ' -f1)"
	assertEquals "unchanged" hit "$(jit kernel.cu "${dirs[@]}" | cut -d' ' -f1)"
	mkdir -p inc2 inc0 && echo '#define FACTOR 4.0f' >inc2/tile.h
	assertEquals "a new header searched later is harmless" hit "$(jit kernel.cu "${dirs[@]}" | cut -d' ' -f1)"
	echo '#define FACTOR 5.0f' >inc0/tile.h
	assertEquals "a new header searched earlier misses" miss "$(jit kernel.cu "${dirs[@]}" | cut -d' ' -f1)"
	expect_nvcc_runs 3
}

# One handle remembers headers' hashes and directory listings: a change
# made between two compiles of one handle must still be seen.
testOneHandleSeesAChangeBetweenCompiles() {
	write_kernel
	local dirs=(-I"$PWD/inc0" -I"$PWD/inc" -I"$PWD/inc2")
	mkdir -p inc0 inc2
	jit kernel.cu "${dirs[@]}" >/dev/null || fail
	local said
	said=$(jit --between "echo '#define FACTOR 5.0f' >inc0/tile.h" kernel.cu "${dirs[@]}" | cut -d' ' -f1)
	assertEquals "a header planted earlier in the search path" "hit miss" "$(echo $said)"
	said=$(jit --between "rm inc0/tile.h" kernel.cu "${dirs[@]}" | cut -d' ' -f1)
	# its first compile misses when the header planted above was written in
	# the clock tick that nvcc started in, which kept that miss from publishing
	local unpublished=0
	[ "$(echo $said | cut -d' ' -f1)" = miss ] && unpublished=1
	assertEquals "and taken away again" hit "$(echo $said | cut -d' ' -f2)"
	said=$(jit --between "echo '#define FACTOR 6.0f' >inc/tile.h" kernel.cu "${dirs[@]}" | cut -d' ' -f1)
	assertEquals "a header changed in place" "hit miss" "$(echo $said)"
	expect_nvcc_runs $((3 + unpublished))
}

# The memory tier (src/jit/memory.c): a request the handle served is served
# again from memory, with the store emptied in between; its hits are
# counted when the handle closes.  (A header changed between two requests
# is still a miss: testOneHandleSeesAChangeBetweenCompiles.)
testARepeatedRequestIsServedFromMemory() {
	local said compiler
	printf 'extern "C" __global__ void one(float *a) { a[threadIdx.x] = 1.0f; }\n' >one.cu
	for compiler in nvcc nvrtc; do
		said=$(CJC_JIT_COMPILER=$compiler jit --between "'$CJC' clean >/dev/null" one.cu |
			cut -d' ' -f1)
		assertEquals "$compiler: compiled, then served with the store emptied" "miss hit" "$(echo $said)"
	done
	expect_nvcc_runs 1
	"$CJC" stats --zero >/dev/null
	CJC_JIT_COMPILER=nvrtc jit --repeat 5 one.cu >/dev/null || fail
	expect_stat hits 4
	expect_stat misses 1
}

testEveryOptionAndSettingIsANewEntry() {
	write_kernel
	local i
	jit kernel.cu -I"$PWD/inc" >/dev/null || fail
	jit kernel.cu -I"$PWD/inc" -DEXTRA=1 >/dev/null || fail
	jit kernel.cu -I"$PWD/inc" -O1 >/dev/null || fail
	jit --format ptx kernel.cu -I"$PWD/inc" >/dev/null || fail
	jit --format fatbin kernel.cu -I"$PWD/inc" >/dev/null || fail
	jit --arch sm_90 kernel.cu -I"$PWD/inc" >/dev/null || fail
	jit --name other.cu kernel.cu -I"$PWD/inc" >/dev/null || fail
	for i in WITH_LINEINFO DEBUG PTXAS_VERBOSE CHECK_NO_SPILLS DUMP_PTX; do
		env "JITT_JIT_$i=1" CJC_JIT_NVCC="$NVCC" "$CJC_JIT_CLI" --prefix JITT --arch $ARCH \
			kernel.cu -I"$PWD/inc" >/dev/null 2>&1 || fail "$i"
	done
	JITT_JIT_CPP_STANDARD=17 CJC_JIT_NVCC="$NVCC" "$CJC_JIT_CLI" --prefix JITT --arch $ARCH \
		kernel.cu -I"$PWD/inc" >/dev/null || fail "CPP_STANDARD"
	assertEquals "13 compiles, 13 entries" 13 "$(entry_count)"
	expect_nvcc_runs 13
	"$CJC" ls --json | jq -e 'all(.[]; .target == "jit")' >/dev/null || fail "all labelled jit"
}

# damage HOW: compiles, damages the entry's metadata or artifact HOW, and
# checks that the next compile recompiles with the right bytes and leaves the
# entry as it was.
damage() {
	write_kernel
	local key dir before
	key=$(jit --out good.cubin kernel.cu -I"$PWD/inc" | cut -d' ' -f2)
	dir=$(entry_dir "$key")
	chmod u+w "$dir" "$dir"/*
	case $1 in
	missing) rm "$dir/metadata.json" ;;
	empty) : >"$dir/metadata.json" ;;
	not-json) echo 'not json {' >"$dir/metadata.json" ;;
	format) jq '.format = "cudajitcache.entry.v0"' "$dir/metadata.json" >m && cat m >"$dir/metadata.json" ;;
	size-bool) jq '.files["output.cubin"].size = true' "$dir/metadata.json" >m && cat m >"$dir/metadata.json" ;;
	size-string) jq '.files["output.cubin"].size |= tostring' "$dir/metadata.json" >m && cat m >"$dir/metadata.json" ;;
	bad-sha) jq '.files["output.cubin"].sha256 = "ABC"' "$dir/metadata.json" >m && cat m >"$dir/metadata.json" ;;
	truncated) head -c 100 "$dir/output.cubin" >t && cat t >"$dir/output.cubin" ;;
	esac
	before=$(cd "$dir" && ls -l --time-style=+%s.%N && cat ./* 2>/dev/null | sha256sum)
	assertEquals "$1: recompiled" "miss $key" "$(jit --out again.cubin kernel.cu -I"$PWD/inc")"
	assertTrue "$1: the right bytes" "cmp -s good.cubin again.cubin"
	assertEquals "$1: the entry is untouched" "$before" \
		"$(cd "$dir" && ls -l --time-style=+%s.%N && cat ./* 2>/dev/null | sha256sum)"
	expect_nvcc_runs 2
	expect_stat damaged 1
}

testMissingMetadataIsRecompiled() { damage missing; }
testEmptyMetadataIsRecompiled() { damage empty; }
testMetadataThatIsNotJsonIsRecompiled() { damage not-json; }
testAWrongFormatIsRecompiled() { damage format; }
testASizeThatIsABooleanIsRecompiled() { damage size-bool; }
testASizeThatIsAStringIsRecompiled() { damage size-string; }
testABadSha256IsRecompiled() { damage bad-sha; }
testATruncatedArtifactIsRecompiled() { damage truncated; }

testAnEmptyArtifactIsNeverPublished() {
	write_kernel
	cat >"$TEST_DIR/bin/nvcc-empty" <<WRAP
#!/bin/bash
"$NVCC" "\$@" || exit
out=; prev=
for a in "\$@"; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
[ -n "\$out" ] && : >"\$out"
exit 0
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-empty"
	JIT_NVCC=$TEST_DIR/bin/nvcc-empty jit kernel.cu -I"$PWD/inc" 2>err && fail "an empty output is an error"
	assertContains "$(cat err)" "made no output"
	assertEquals "nothing published" 0 "$(entry_count)"
}

testEightProcessesCompilingOneKeyLeaveOneEntry() {
	write_kernel
	make_barrier_nvcc 8
	local i pids=()
	for i in $(seq 8); do
		JIT_NVCC=$TEST_DIR/bin/nvcc-barrier jit --out out$i.cubin kernel.cu -I"$PWD/inc" >said$i &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "a compile failed"; done
	expect_nvcc_runs 8
	assertEquals "one entry" 1 "$(entry_count)"
	assertEquals "no staging left" 0 "$(find "$CJC_DIR"/v1/*/staging -mindepth 1 | wc -l)"
	assertEquals "all name the same key" 1 "$(cat said* | sort -u | wc -l)"
	for i in $(seq 2 8); do assertTrue "out$i" "cmp -s out1.cubin out$i.cubin"; done
	assertEquals "7 lost the race" 7 "$(grep -c 'already published' "$CJC_LOG")"
	"$CJC" verify >/dev/null || fail "verify"
}

testAWriterKilledMidCompileLeavesNothingVisible() {
	write_kernel
	cat >"$TEST_DIR/bin/nvcc-hold" <<WRAP
#!/bin/sh
case " \$* " in *" --version "*) exec "$NVCC" "\$@" ;; esac
"$NVCC" "\$@" || exit
echo \$\$ >"$TEST_DIR/held.tmp" && mv "$TEST_DIR/held.tmp" "$TEST_DIR/held"
while [ ! -e "$TEST_DIR/never" ]; do sleep 0.05; done
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-hold"
	JIT_NVCC=$TEST_DIR/bin/nvcc-hold jit kernel.cu -I"$PWD/inc" >/dev/null 2>&1 &
	local pid=$!
	while [ ! -e "$TEST_DIR/held" ]; do sleep 0.05; done
	kill -KILL $pid
	wait $pid 2>/dev/null
	kill -KILL "$(cat "$TEST_DIR/held")" 2>/dev/null # the wrapper, left waiting
	assertEquals "no entry" 0 "$(entry_count)"
	assertEquals "the next compile misses and publishes" miss "$(jit kernel.cu -I"$PWD/inc" | cut -d' ' -f1)"
	assertEquals "one entry" 1 "$(entry_count)"
}

testSixteenThreadsOverFourKeys() {
	CJC_JIT_NVCC=$NVCC "$CJC_JIT_THREADS" threads || fail "threads"
	assertEquals "four entries" 4 "$(entry_count)"
	# all 16 start together, so each may compile; the second round only hits
	assertTrue "at most 16 compiles" "[ $(nvcc_compiles) -ge 4 ] && [ $(nvcc_compiles) -le 16 ]"
}

testAHitIsNotHeldUpByAnotherThreadsCompile() {
	cat >"$TEST_DIR/bin/nvcc-block" <<WRAP
#!/bin/sh
case " \$* " in
*" -DJIT_BLOCK "*)
	touch "$TEST_DIR/blocked"
	while [ ! -e "$TEST_DIR/release" ]; do sleep 0.05; done ;;
esac
exec "$NVCC" "\$@"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-block"
	CJC_JIT_NVCC=$TEST_DIR/bin/nvcc-block "$CJC_JIT_THREADS" nonblocking "$TEST_DIR/blocked" \
		"$TEST_DIR/release" || fail "nonblocking"
}

testAForkedChildCompilesAndHits() {
	CJC_JIT_NVCC=$NVCC "$CJC_JIT_THREADS" fork || fail "fork"
	expect_nvcc_runs 2
}

testPrintCompilerCommandAndPtxasVerboseOnAMissOnly() {
	write_kernel
	export JITT_JIT_PRINT_COMPILER_COMMAND=1 JITT_JIT_PTXAS_VERBOSE=1
	jit --prefix JITT kernel.cu -I"$PWD/inc" >/dev/null 2>miss.err || fail
	jit --prefix JITT kernel.cu -I"$PWD/inc" >/dev/null 2>hit.err || fail
	unset JITT_JIT_PRINT_COMPILER_COMMAND JITT_JIT_PTXAS_VERBOSE
	assertContains "$(cat miss.err)" "Running command: $NVCC --cubin"
	assertContains "$(grep -v '^ptxas info' miss.err | head -0; cat miss.err)" "ptxas info"
	assertNotContains "$(grep -v '^ptxas' hit.err)" "Running command"
}

testSettingsResolveDeepJitsWay() {
	local v
	v=$(CJC_JIT_DEBUG=1 "$CJC_JIT_CLI" --prefix LIB --setting DEBUG)
	assertEquals "the global variable" 1 "$v"
	v=$(CJC_JIT_DEBUG=1 LIB_JIT_DEBUG=0 "$CJC_JIT_CLI" --prefix LIB --setting DEBUG)
	assertEquals "the library's 0 beats a global 1" 0 "$v"
	v=$(JIT_DEBUG=1 "$CJC_JIT_CLI" --prefix LIB --setting DEBUG)
	assertEquals "unprefixed JIT_* is ignored" 0 "$v"
	v=$(CJC_PRINT_COMMANDS=1 "$CJC_JIT_CLI" --prefix LIB --setting PRINT_COMPILER_COMMAND)
	assertEquals "the cjc setting below both" 1 "$v"
	v=$("$CJC_JIT_CLI" --prefix LIB --setting CACHE_DIR)
	assertEquals "CACHE_DIR defaults to the cjc store" "$CJC_DIR" "$v"
	v=$(LIB_JIT_CACHE_DIR=/x CJC_JIT_CACHE_DIR=/y "$CJC_JIT_CLI" --prefix LIB --setting CACHE_DIR)
	assertEquals "PREFIX_JIT_* first" /x "$v"
	v=$(LIB_JIT_CPP_STANDARD=20 "$CJC_JIT_CLI" --prefix LIB --setting CPP_STANDARD)
	assertEquals "a C++ standard" c++20 "$v"
	v=$(CUDA_HOME=/nowhere PATH=/usr/bin:/bin "$CJC_JIT_CLI" --setting NVCC_COMPILER)
	assertEquals "nvcc when nothing names it" /usr/local/cuda/bin/nvcc "$v"
	v=$(CJC_JIT_NVCC=/opt/nvcc LIB_JIT_NVCC_COMPILER=/p/nvcc "$CJC_JIT_CLI" --prefix LIB --setting NVCC_COMPILER)
	assertEquals "PREFIX_JIT_NVCC_COMPILER, then CJC_JIT_NVCC" /p/nvcc "$v"
	LIB_JIT_DEBUG=maybe "$CJC_JIT_CLI" --prefix LIB --setting DEBUG 2>err && fail "a bad value fails open"
	assertContains "$(cat err)" "LIB_JIT_DEBUG=maybe: expected 1 or 0"
	LIB_JIT_COMPILER=clang "$CJC_JIT_CLI" --prefix LIB --setting DEBUG 2>err && fail "a bad compiler"
	assertContains "$(cat err)" "LIB_JIT_COMPILER=clang: expected nvcc or nvrtc"
}

testNvrtcCachesCodeWithoutIncludes() {
	have_nvrtc || startSkipping
	cat >plain.cu <<'SRC'
extern "C" __global__ void twice(float *a) { a[threadIdx.x] *= 2.0f; }
SRC
	local first second
	first=$(CJC_JIT_COMPILER=nvrtc jit --out a.cubin plain.cu) || fail "nvrtc miss"
	second=$(CJC_JIT_COMPILER=nvrtc jit --out b.cubin plain.cu) || fail "nvrtc hit"
	assertEquals "miss ${first#miss }" "$first"
	assertEquals "hit ${first#miss }" "$second"
	assertTrue "the same cubin" "cmp -s a.cubin b.cubin"
	assertEquals "another arch, another entry" miss \
		"$(CJC_JIT_COMPILER=nvrtc jit --arch sm_90 plain.cu | cut -d' ' -f1)"
	assertEquals "ptx" miss "$(CJC_JIT_COMPILER=nvrtc jit --format ptx plain.cu | cut -d' ' -f1)"
	"$CJC" verify >/dev/null || fail "verify"
	"$CJC" show "${first#miss }" --json | jq -e '.compiler.version | startswith("NVRTC")' >/dev/null ||
		fail "metadata names NVRTC"
	expect_nvcc_runs 0
}

testNvrtcDoesNotCacheWhatIncludesFiles() {
	have_nvrtc || startSkipping
	write_kernel
	assertEquals "not cached" "miss -" "$(CJC_JIT_COMPILER=nvrtc jit kernel.cu -I"$PWD/inc")"
	assertEquals "still not cached" "miss -" "$(CJC_JIT_COMPILER=nvrtc jit kernel.cu -I"$PWD/inc")"
	assertEquals "no entry" 0 "$(entry_count)"
	grep -q 'not cached: an option names an include directory' "$CJC_LOG" || fail "the log says why"
}

testNoGpuAndNoArchIsAClearError() {
	nvidia-smi -L >/dev/null 2>&1 && startSkipping
	write_kernel
	"$CJC_JIT_CLI" --arch gpu kernel.cu 2>err && fail "no arch, no GPU"
	assertContains "$(cat err)" "give the request an arch"
}

testNullOptionsWithACountIsAClearError() {
	write_kernel
	jit --null-options 5 kernel.cu >out 2>err && fail "options = NULL with noptions = 5 succeeded"
	assertContains "a message, not a crash" "$(cat err)" "noptions = 5 but options = NULL"
	expect_nvcc_runs 0
}

testTheErrorDescribesTheLastCallOnly() {
	write_kernel
	# jit_cli fails when cjc_jit_error() is not empty after a success
	jit --fail-first 1 kernel.cu -I"$PWD/inc" >out 2>err || fail "$(cat err)"
	assertEquals "the compile after the failed call" miss "$(cut -d' ' -f1 out)"
}

testOptionsThatChooseTheOutputAreRefused() {
	write_kernel
	local opt
	for opt in --ptx -ptx --fatbin --cubin -c -dc -E -M -lib -ox.ptx --output-file=x.ptx \
		-odir=out -MF=x.d; do
		jit kernel.cu -I"$PWD/inc" "$opt" >out 2>err && fail "$opt was taken: $(cat out)"
		assertContains "$opt is named" "$(cat err)" "option $opt chooses the output kind"
	done
	expect_nvcc_runs 0
	assertEquals "nothing published" 0 "$(entry_count)"
	assertFalse "no output where -o said" "[ -e x.ptx ]"
}

. "$SHUNIT2"
