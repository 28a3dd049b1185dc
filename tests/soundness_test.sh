#!/bin/bash
# docs/key.md: a miss for every change that can change the output, a hit for
# every change that cannot.  A wrong hit is the worst bug we can have.
# And for each miss, `cjc why` names the change that caused it.
. "$(dirname "$0")/helpers.sh"

# compile OUTPUT [ARG...]: an object, or a cubin when OUTPUT is *.cubin (a
# third of the time: the tests whose subject is not host code use cubins).
compile() {
	local kind=-c
	[ "${1##*.}" = cubin ] && kind=--cubin
	cjc_nvcc $kind k.cu -o "$1" -arch=$ARCH "${@:2}" || fail "compile of $1 failed"
}

# expect_miss_after ACTION...: compile, do ACTION, compile again: nvcc must
# run.  Objects, or cubins with EXT=cubin.
expect_miss_after() {
	local ext=${EXT:-o} kind=-c
	[ "$ext" = cubin ] && kind=--cubin
	compile before.$ext
	"$@"
	compile after.$ext
	expect_nvcc_runs 2
	"$REAL_NVCC" $kind k.cu -o plain.$ext -arch=$ARCH
	assert_same_devcode after.$ext plain.$ext
}

# A header of both passes, in a cubin (the device-only and host-only
# headers below are the object's).
testHeaderChangeMisses() {
	EXT=cubin expect_miss_after sed -i 's/2.0f/3.0f/' k.h
	expect_why after.cubin "miss: k.h changed"
	expect_why before.cubin "miss: no earlier compile of k.cu"
	"$CJC" why after.cubin >why.txt
	assertTrue "old and new hash" "grep -Eq 'k.h changed: sha256 [0-9a-f]{16} -> [0-9a-f]{16}' why.txt"
	assertFalse "device code should differ" "cmp -s before.cubin after.cubin"
}

testDeviceOnlyHeaderChangeMisses() {
	expect_miss_after sed -i 's/1.0f/5.0f/' dev.h
	expect_why after.o "miss: dev.h changed"
}

testHostOnlyHeaderChangeMisses() {
	expect_miss_after sed -i 's/= 1;/= 7;/' host.h
	expect_why after.o "miss: host.h changed"
}

testHostOnlyLineChangeMisses() {
	expect_miss_after sed -i 's/return host_value;/return host_value + 1;/' k.cu
	expect_why after.o "miss: k.cu changed"
}

testDefineMisses() {
	compile a.cubin -DFOO=1
	compile b.cubin -DFOO=2
	compile c.cubin -DFOO=1
	expect_nvcc_runs 2
	expect_why b.cubin "miss: -DFOO=2 added; -DFOO=1 removed"
	expect_why c.cubin "hit: served from entry"
}

testArchListMisses() {
	cjc_nvcc --fatbin k.cu -o a.fatbin -arch=sm_80 || fail
	cjc_nvcc --fatbin k.cu -o b.fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 || fail
	expect_nvcc_runs 2
	assertFalse "fatbins should differ" "cmp -s a.fatbin b.fatbin"
	expect_why b.fatbin "-gencode arch=compute_90,code=sm_90 added; -arch=sm_80 removed"
}

testOptionsFileContentMisses() {
	echo "-DFOO=1 -I$PWD" >opts.rsp
	compile a.cubin --options-file opts.rsp
	compile b.cubin --options-file opts.rsp
	echo "-DFOO=2 -I$PWD" >opts.rsp
	compile c.cubin -optf opts.rsp
	expect_nvcc_runs 2
	expect_why c.cubin "-DFOO=2 added"
	expect_why c.cubin "-DFOO=1 removed"
}

testEachEnvironmentVariableMisses() {
	mkdir -p empty
	compile base.cubin
	local n=1 var
	for var in "NVCC_PREPEND_FLAGS=-DPRE=1" "NVCC_APPEND_FLAGS=-DAPP=1" "NVCC_CCBIN=/usr/bin/gcc" \
		"CPATH=$PWD/empty" "C_INCLUDE_PATH=$PWD/empty" "CPLUS_INCLUDE_PATH=$PWD/empty"; do
		env "$var" "$CJC" "$NVCC" --cubin k.cu -o env.cubin -arch=$ARCH || fail "compile with $var failed"
		n=$((n + 1))
		assertEquals "a miss with $var" "$n" "$(nvcc_compiles)"
		case $var in
		NVCC_*_FLAGS=*) expect_why env.cubin "${var%%=*} set" ;; # by hash: it may hold secrets
		*) expect_why env.cubin "${var%%=*} set to '${var#*=}'" ;;
		esac
	done
	env NVCC_APPEND_FLAGS=-DAPP=1 "$CJC" "$NVCC" --cubin k.cu -o again.cubin -arch=$ARCH || fail
	assertEquals "the same value again hits" "$n" "$(nvcc_compiles)"
}

testOtherHostCompilerOnPathMisses() {
	mkdir hostbin
	printf '#!/bin/sh\nexec /usr/bin/gcc "$@"\n' >hostbin/gcc
	chmod +x hostbin/gcc
	compile a.o
	PATH="$PWD/hostbin:$PATH" compile b.o
	PATH="$PWD/hostbin:$PATH" compile c.o
	expect_nvcc_runs 2
	expect_why b.o "miss: host compiler changed from "
	expect_why b.o " to $PWD/hostbin/gcc"
}

testOtherNvccVersionAtSamePathMisses() {
	compile a.cubin
	make_nvcc_wrapper "$NVCC" "Cuda compilation tools, release 99.9"
	compile b.cubin
	expect_nvcc_runs 2
	expect_why b.cubin "miss: nvcc changed (version 'Cuda compilation tools, release 99.9', was 'Build cuda_"
}

testShadowingHeaderInEarlierIncludeDirMisses() {
	mkdir inc1 inc2
	echo '#define SHADOW 1.0f' >inc2/shadow.h
	cat >s.cu <<'SRC'
#include <shadow.h>
__global__ void f(float *a) { a[0] = SHADOW; }
SRC
	cjc_nvcc --cubin s.cu -o a.cubin -Iinc1 -Iinc2 -arch=$ARCH || fail
	echo '#define SHADOW 2.0f' >inc1/shadow.h
	cjc_nvcc --cubin s.cu -o b.cubin -Iinc1 -Iinc2 -arch=$ARCH || fail
	expect_nvcc_runs 2
	expect_why b.cubin "miss: inc1/shadow.h is now read; inc2/shadow.h is no longer read"
	"$REAL_NVCC" --cubin s.cu -o plain.cubin -Iinc1 -Iinc2 -arch=$ARCH
	assert_same_devcode b.cubin plain.cubin
}

testShadowingHeaderBesideSourceMisses() {
	mkdir inc
	echo '#define NEAR 1.0f' >inc/near.h
	cat >n.cu <<'SRC'
#include "near.h"
__global__ void f(float *a) { a[0] = NEAR; }
SRC
	cjc_nvcc --cubin n.cu -o a.cubin -Iinc -arch=$ARCH || fail
	echo '#define NEAR 2.0f' >near.h
	cjc_nvcc --cubin n.cu -o b.cubin -Iinc -arch=$ARCH || fail
	expect_nvcc_runs 2
	expect_why b.cubin "miss: near.h is now read; inc/near.h is no longer read"
}

testMtimeOnlyTouchHits() {
	compile a.cubin
	touch k.cu k.h dev.h host.h
	compile b.cubin
	expect_nvcc_runs 1
	expect_why b.cubin "hit: served from entry"
}

testOtherOutputPathAndTargetLabelHit() {
	"$CJC" --target one "$NVCC" --cubin k.cu -o a.cubin -arch=$ARCH || fail
	mkdir -p sub
	"$CJC" --target two -- "$NVCC" --cubin k.cu -o sub/b.cubin -arch=$ARCH || fail
	"$CJC" --target=three "$NVCC" --cubin k.cu -o sub/c.cubin -arch=$ARCH || fail
	expect_nvcc_runs 1
	expect_stat hits 2
	assertTrue "label recorded" "\"$CJC\" ls | grep -q ' one '"
}

# (cubins: -lineinfo is device code's, and where a compile runs is keyed
# alike for every kind: src/lib/keys/place.h)
testSameSourceFromAnotherDirectoryHitsUnlessDebugInfo() {
	local src=$PWD
	compile a.cubin
	compile g.cubin -lineinfo
	mkdir -p elsewhere && cd elsewhere || fail
	"$CJC" "$NVCC" --cubin "$src/k.cu" -o a.cubin -arch=$ARCH || fail
	"$CJC" "$NVCC" --cubin ../k.cu -o b.cubin -arch=$ARCH -lineinfo || fail
	cd .. || fail
	# the absolute path is another argument: one more miss; -lineinfo in another cwd: one more
	assertEquals "compiles" 4 "$(nvcc_compiles)"
	"$CJC" "$NVCC" --cubin "$src/k.cu" -o c.cubin -arch=$ARCH || fail
	assertEquals "absolute source path from the first directory hits" 4 "$(nvcc_compiles)"
	expect_why c.cubin "hit: served from entry"
}

testDamagedArtifactIsRecompiledNotServed() {
	compile a.cubin
	local entry
	entry=$("$CJC" ls --json | sed -n 's/.*"path": "\(.*\)".*/\1/p')
	chmod u+w "$entry/output.cubin"
	printf '\x55' | dd of="$entry/output.cubin" bs=1 seek=100 conv=notrunc 2>/dev/null
	local before
	before=$(sha256sum "$entry/output.cubin")
	compile b.cubin
	expect_nvcc_runs 2
	assert_same_devcode a.cubin b.cubin
	expect_stat damaged 1
	assertEquals "damaged entry untouched" "$before" "$(sha256sum "$entry/output.cubin")"
	assertTrue "stats says how to repair" "\"$CJC\" stats | grep -q 'cjc verify --fix'"
	local key=${entry##*/}
	expect_why b.cubin "miss: entry ${key:0:12} was damaged: "
}

testHeaderEditedDuringCompileIsNotPublished() {
	cat >"$TEST_DIR/bin/nvcc-edits" <<WRAP
#!/bin/sh
"$NVCC" "\$@" || exit
case " \$* " in *" --version "*) exit 0 ;; esac
sleep 0.05
echo '#define EDITED 1' >>"$PWD/k.h"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-edits"
	"$CJC" "$TEST_DIR/bin/nvcc-edits" --cubin k.cu -o a.cubin -arch=$ARCH || fail "build broke"
	assertTrue "output delivered" "[ -s a.cubin ]"
	assertEquals "nothing published" 0 "$(entry_count)"
	assertTrue "reason logged" "grep -q 'k.h changed during the compile' \"$CJC_LOG\""
	assertTrue "and told by why" "\"$CJC\" why a.cubin | grep -q '^  not published: .*k.h changed during the compile'"
	compile b.cubin
	compile c.cubin
	expect_nvcc_runs 2
}

# A header directory swapped for another during the compile, its header
# older than the compile (so no time stamp says it changed): the miss
# records what nvcc read, not what the lookup before it had hashed
# (filehash.h: cjc_filehash_recheck).  Else the entry compiled from the new
# header would be recorded under the old one's hash, and served wrongly to
# a build that has the old header back.
testHeaderDirectorySwappedDuringCompileIsRecordedAsRead() {
	mkdir gen gen.new
	echo '#define GVAL 1.0f' >gen/g.h
	echo '#define GVAL 2.0f' >gen.new/g.h
	touch -d '1 hour ago' gen/g.h gen.new/g.h
	printf '#include "gen/g.h"\n#include "k.h"\n__global__ void g(float *a) { a[0] = GVAL * SCALE; }\n' >g.cu
	touch -d '1 hour ago' g.cu # every compile here publishes (none starts in their tick)
	# one compiler for all three compiles (it is in the key); it swaps once
	cat >"$TEST_DIR/bin/nvcc-swaps" <<WRAP
#!/bin/sh
if [ -e "$TEST_DIR/swap" ] && ! case " \$* " in *" --version "*) true ;; *) false ;; esac; then
	rm "$TEST_DIR/swap" && mv "$PWD/gen" "$PWD/gen.old" && mv "$PWD/gen.new" "$PWD/gen" || exit 1
fi
exec "$NVCC" "\$@"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-swaps"
	"$CJC" "$TEST_DIR/bin/nvcc-swaps" --cubin g.cu -o a.cubin -arch=$ARCH || fail "first compile"
	echo '#define SCALE 3.0f' >k.h # the lookup hashes gen/g.h, then misses on k.h
	touch -d '1 hour ago' k.h
	touch "$TEST_DIR/swap"
	"$CJC" "$TEST_DIR/bin/nvcc-swaps" --cubin g.cu -o b.cubin -arch=$ARCH || fail "swapping compile"
	assertFalse "swapped" "[ -e '$TEST_DIR/swap' ]"
	assertEquals "the swapping compile published" 2 "$(entry_count)"
	mv gen gen.new && mv gen.old gen # the old header back, k.h as in b's compile
	"$CJC" "$TEST_DIR/bin/nvcc-swaps" --cubin g.cu -o c.cubin -arch=$ARCH || fail "third compile"
	expect_nvcc_runs 3
	"$NVCC" --cubin g.cu -o direct.cubin -arch=$ARCH
	assertTrue "c.cubin is what nvcc makes of the old header" "cmp -s c.cubin direct.cubin"
}

# The hash cache (filehash.h): unchanged files are not read again, and a
# changed one is, even when its size and mtime are put back.
testHashCacheRereadsOnlyChangedFiles() {
	sleep 2.1 # older than the racy window: their hashes may be remembered
	compile a.cubin
	compile b.cubin
	assertTrue "a hit reads no file: $(grep hit "$CJC_LOG")" "grep -q 'hit .* 0 files read' '$CJC_LOG'"
	assertTrue "the first hit parses the metadata" "grep -q 'hit .* metadata parsed' '$CJC_LOG'"
	compile b2.cubin
	assertTrue "a later hit recognises it by its hash" "grep -q 'hit .* metadata recognised by its hash' '$CJC_LOG'"
	local mtime
	mtime=$(stat -c %y k.h)
	sed -i 's/2.0f/3.0f/' k.h
	touch -d "$mtime" k.h
	compile c.cubin
	expect_nvcc_runs 2
	assertFalse "the edit is compiled in" "cmp -s a.cubin c.cubin"
	sed -i 's/3.0f/2.0f/' k.h
	touch -d "$mtime" k.h
	compile d.cubin
	expect_nvcc_runs 2
	assert_same_devcode a.cubin d.cubin
}

# The shared hash cache (filehash.h): a translation unit new to the store
# takes the system headers' hashes another one took, and reads its own.
# Its own file keeps only what it looked at: not <map>'s headers, which
# only the first unit read.
testNewTranslationUnitRemembersTheSystemHeaders() {
	{ echo '#include <map>'; cat k.cu; } >big.cu
	cjc_nvcc --cubin big.cu -o a.cubin -arch=$ARCH || fail "the first unit"
	cp k.cu k2.cu
	cjc_nvcc --cubin k2.cu -o b.cubin -arch=$ARCH || fail "the second unit"
	local first second own
	first=$(sed -n 's/.*miss for big.cu (\([0-9]*\) file hashes remembered.*/\1/p' "$CJC_LOG")
	second=$(sed -n 's/.*miss for k2.cu (\([0-9]*\) file hashes remembered, \([0-9]*\) files read.*/\1 \2/p' "$CJC_LOG")
	assertEquals "the first unit remembered nothing: $(grep miss "$CJC_LOG")" 0 "$first"
	assertTrue "the second remembered the system's headers: $second" "[ ${second% *} -ge 50 ]"
	assertTrue "and read its own: $second" "[ ${second#* } -ge 1 ]"
	own=$(printf '%s\0%s' "$PWD" k2.cu | sha256sum | cut -c1-64)
	own=$(echo "$CJC_DIR"/v1/*)/hashes/${own:0:2}/$own
	assertTrue "the second unit's own hash cache" "[ -s '$own' ]"
	assertEquals "<map>'s headers stay out of it" 0 "$(blob_payload "$own" | grep -ac stl_tree.h)"
	assertTrue "they are in the shared one" "blob_payload \"$CJC_DIR\"/v1/*/hashes/*/* | grep -aq stl_tree.h"
	expect_nvcc_runs 2
	assert_same_devcode a.cubin b.cubin
}

# Settled metadata is recognised by its stamp, unread (metamemo.h); edited
# in place, even with its mtime put back, it is read, and refused.
testMetadataRecognisedByItsStampStillCatchesAnEdit() {
	compile a.cubin
	sleep 2.1 # the entry older than the racy window
	compile b.cubin
	compile c.cubin
	assertTrue "a settled entry is recognised unread: $(grep hit "$CJC_LOG")" \
		"grep -q 'hit .* metadata recognised by its stamp' '$CJC_LOG'"
	local entry mtime
	entry=$("$CJC" ls --json | sed -n 's/.*"path": "\(.*\)".*/\1/p')
	mtime=$(stat -c %y "$entry/metadata.json")
	chmod u+w "$entry/metadata.json"
	plain_metadata "$entry/metadata.json"
	sed -i 's/cudajitcache.entry.v1/cudajitcache.entry.v9/' "$entry/metadata.json"
	touch -d "$mtime" "$entry/metadata.json"
	compile d.cubin
	expect_nvcc_runs 2
	expect_stat damaged 1
	assert_same_devcode a.cubin d.cubin
}

# For the absent-candidate tests: inc1, searched first, and inc2 holding
# NAME.h (MACRO 1.0f) and sub/deep.h (DEEP 1.0f); a.cu includes both.
# build compiles a.cu into out<n>.o, n counting up; like_plain checks the
# last one against what plain nvcc makes now.
two_include_dirs() {
	mkdir -p inc1 inc2/sub
	echo "#define $2 1.0f" >"inc2/$1.h"
	echo '#define DEEP 1.0f' >inc2/sub/deep.h
	printf '#include <%s.h>\n#include <sub/deep.h>\n__global__ void f(float *a) { a[0] = %s + DEEP; }\n' \
		"$1" "$2" >a.cu
	BUILT=0
}
build() {
	BUILT=$((BUILT + 1))
	cjc_nvcc --cubin a.cu -o out$BUILT.cubin -Iinc1 -Iinc2 -arch=$ARCH || fail
}
like_plain() {
	"$REAL_NVCC" --cubin a.cu -o plain.cubin -Iinc1 -Iinc2 -arch=$ARCH
	assert_same_devcode out$BUILT.cubin plain.cubin
}
# settle_since T: sleeps until 2.1 s after T, an $EPOCHREALTIME taken just
# after some files were written: they are then older than the racy window,
# as after a `sleep 2.1` at T, and the compiles in between count towards it.
settle_since() {
	local left=$((${1//[.,]/} + 2100000 - ${EPOCHREALTIME//[.,]/}))
	[ $left -le 0 ] || sleep "$((left / 1000000)).$(printf %06d $((left % 1000000)))"
}

# Absent include candidates are known absent by the stamp of their
# directory (filehash.h); a header planted there, or in a directory made
# there, is still seen.
testAbsentCandidatesKnownByTheirDirectoryStillSeePlantedHeaders() {
	two_include_dirs shadow SHADOW
	sleep 2.1 # inc1 older than the racy window
	build && build && build
	expect_nvcc_runs 1
	assertTrue "the hit knew names absent by their directory: $(grep hit "$CJC_LOG")" \
		"grep -q 'hit .* [1-9][0-9]* absent names known by their directory' '$CJC_LOG'"
	mkdir inc1/sub && echo '#define DEEP 2.0f' >inc1/sub/deep.h
	local written=$EPOCHREALTIME
	build
	expect_nvcc_runs 2
	like_plain
	settle_since "$written"
	build # compiles again when deep.h, just written, kept the last one from publishing
	local before
	before=$(nvcc_compiles)
	build && build
	assertEquals "then hits" "$before" "$(nvcc_compiles)"
	echo '#define SHADOW 2.0f' >inc1/shadow.h
	build
	assertEquals "the planted header misses" $((before + 1)) "$(nvcc_compiles)"
	like_plain
}

# A dangling link is a name, not an absence: its target can appear without
# its directory changing, and must be seen, for a header and for a
# directory on the way to one.
testDanglingLinksAmongTheCandidatesSeeTheirTargetsAppear() {
	two_include_dirs conf CONF
	ln -s ../gen/conf.h inc1/conf.h
	ln -s ../scratch inc1/sub
	sleep 2.1 # inc1 older than the racy window
	build && build && build
	expect_nvcc_runs 1
	mkdir gen && echo '#define CONF 2.0f' >gen/conf.h
	local written=$EPOCHREALTIME
	build
	expect_nvcc_runs 2
	like_plain
	settle_since "$written"
	build && build
	local before
	before=$(nvcc_compiles)
	mkdir scratch && echo '#define DEEP 2.0f' >scratch/deep.h
	build
	assertEquals "the header behind the link misses" $((before + 1)) "$(nvcc_compiles)"
	like_plain
}

# The source is checked by its bytes: edited during the compile, it is not
# published; written just before the compile (as a build's generator or a
# copy does), it is.
testSourceEditedDuringCompileIsNotPublished() {
	cat >"$TEST_DIR/bin/nvcc-edits" <<WRAP
#!/bin/sh
"$NVCC" "\$@" || exit
case " \$* " in *" --version "*) exit 0 ;; esac
echo '// edited' >>"$PWD/k.cu"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-edits"
	"$CJC" "$TEST_DIR/bin/nvcc-edits" --cubin k.cu -o a.cubin -arch=$ARCH || fail "build broke"
	assertEquals "nothing published" 0 "$(entry_count)"
	assertTrue "reason logged" "grep -q 'k.cu changed during the compile' \"$CJC_LOG\""
}

testSourceWrittenJustBeforeTheCompileIsPublished() {
	local i
	for i in 1 2 3 4 5; do
		sed "s/2.0f/$i.0f/" k.cu >new$i.cu && cjc_nvcc --cubin new$i.cu -o new$i.cubin -arch=$ARCH || fail
	done
	cjc_nvcc --cubin new1.cu -o again.cubin -arch=$ARCH || fail
	expect_nvcc_runs 5
	assertTrue "all five published" "[ \$(entry_count) -eq 5 ]"
}

# The host compiler named by -ccbin in NVCC_APPEND_FLAGS is the one keyed.
testHostCompilerInFlagVariableIsIdentified() {
	printf '#!/bin/sh\ncase "$*" in *--version*) echo "mygcc 1.0"; exit 0;; esac\nexec gcc "$@"\n' >mygcc
	chmod +x mygcc
	NVCC_APPEND_FLAGS="-ccbin $PWD/mygcc" "$CJC" "$NVCC" -c k.cu -o a.o -arch=$ARCH || fail
	sed -i 's/mygcc 1.0/mygcc 2.0/' mygcc
	NVCC_APPEND_FLAGS="-ccbin $PWD/mygcc" "$CJC" "$NVCC" -c k.cu -o b.o -arch=$ARCH || fail
	assertEquals "a new host compiler misses" 2 "$(nvcc_compiles)"
	expect_why b.o "host compiler changed"
}

# CPATH directories come before -isystem ones: a header planted there must miss.
testHeaderNewlyShadowingInCpathMisses() {
	mkdir -p first second
	echo '#define FROM_SECOND 1' >second/where.h
	printf '#include <where.h>\n#include "k.h"\n__global__ void f(float *a) { a[0] = SCALE; }\n' >w.cu
	CPATH=$PWD/first "$CJC" "$NVCC" --cubin w.cu -o w1.cubin -isystem second -arch=$ARCH || fail
	echo '#define FROM_FIRST 1' >first/where.h
	CPATH=$PWD/first "$CJC" "$NVCC" --cubin w.cu -o w2.cubin -isystem second -arch=$ARCH || fail
	assertEquals "the shadowing header is seen" 2 "$(nvcc_compiles)"
}

# fake_toolkit: $TEST_DIR/cuda, the real toolkit through links but for its
# __nvcc_device_query (device_query sets what it does), with the counting
# $NVCC in its bin.  nvcc runs the query beside the nvcc it was run as for
# -arch=native, and so does cjc, so the two agree on the GPU.
fake_toolkit() {
	local real f
	real=$(dirname "$(dirname "$(readlink -f "$REAL_NVCC")")")
	mkdir -p "$TEST_DIR/cuda/bin"
	for f in "$real"/*; do [ "${f##*/}" = bin ] || ln -s "$f" "$TEST_DIR/cuda/"; done
	for f in "$real"/bin/*; do ln -s "$f" "$TEST_DIR/cuda/bin/"; done
	rm -f "$TEST_DIR/cuda/bin/__nvcc_device_query" "$TEST_DIR/cuda/bin/nvcc"
	ln -s "$real/bin/nvcc" "$TEST_DIR/cuda/bin/nvcc.real"
	REAL_NVCC=$TEST_DIR/cuda/bin/nvcc.real make_nvcc_wrapper "$TEST_DIR/cuda/bin/nvcc.inner"
	# The fake toolkit's nvcc resolves -arch=native through the fake
	# __nvcc_device_query itself, as nvcc does on a machine with that GPU: the
	# real nvcc, on CI, did not always run the fake query beside it (it ran it
	# here, through PATH).  The gpu suite checks -arch=native on a real GPU.
	cat >"$TEST_DIR/cuda/bin/nvcc" <<WRAP
#!/bin/sh
for a; do
	shift
	[ "\$a" = -arch=native ] && cc=\$("$TEST_DIR/cuda/bin/__nvcc_device_query" --silent) && a=-arch=sm_\$cc
	set -- "\$@" "\$a"
done
exec "$TEST_DIR/cuda/bin/nvcc.inner" "\$@"
WRAP
	chmod +x "$TEST_DIR/cuda/bin/nvcc"
	NVCC=$TEST_DIR/cuda/bin/nvcc
}

# device_query SHELL-COMMAND: what the fake toolkit's __nvcc_device_query does
# (the real one prints the GPUs' compute capabilities: "80" or "80,90").
device_query() {
	printf '#!/bin/sh\necho "query $*" >>%s\n%s\n' "$TEST_DIR/query.log" "$1" \
		>"$TEST_DIR/cuda/bin/__nvcc_device_query"
	chmod +x "$TEST_DIR/cuda/bin/__nvcc_device_query"
}

testNativeArchIsKeyedByTheGpuItResolvesTo() {
	fake_toolkit
	device_query 'printf 80'
	cjc_nvcc --cubin k.cu -o a.cubin -arch=native || fail
	device_query 'printf 90'
	cjc_nvcc --cubin k.cu -o b.cubin -arch=native || fail
	device_query 'printf 80'
	cjc_nvcc --cubin k.cu -o c.cubin -arch=native || fail
	expect_nvcc_runs 2
	"$REAL_NVCC" --cubin k.cu -o plain90.cubin -arch=sm_90
	assertEquals "cjc asked 3 times, nvcc twice: $(cat "$TEST_DIR/query.log")" "3 2" \
		"$(grep -c '^query $' "$TEST_DIR/query.log") $(grep -c '^query --silent$' "$TEST_DIR/query.log")"
	assertTrue "the cubin for the GPU now here" "cmp -s b.cubin plain90.cubin"
	assertFalse "sm_80 and sm_90 cubins differ" "cmp -s a.cubin b.cubin"
	assertTrue "the sm_80 entry serves sm_80" "cmp -s a.cubin c.cubin"
	expect_why b.cubin "miss: -arch=native now resolves to sm_90 (was sm_80)"
	expect_why c.cubin "hit: served from entry"
}

testNativeArchRunsUncachedWhenNoGpuIsFound() {
	fake_toolkit
	device_query 'exit 1'
	cjc_nvcc --cubin k.cu -o a.cubin -arch=native || fail
	cjc_nvcc --cubin k.cu -o a.cubin -gencode arch=compute_80,code=native 2>/dev/null
	NVCC_APPEND_FLAGS=-arch=native cjc_nvcc --cubin k.cu -o b.cubin || fail
	expect_nvcc_runs 3
	expect_stat uncacheable 3
	assertEquals "the reason logged" 3 \
		"$(grep -c 'uncacheable: -arch=native, and __nvcc_device_query beside nvcc names no GPU' "$CJC_LOG")"
	# the usual wrapper has no __nvcc_device_query beside it at all
	NVCC=$TEST_DIR/bin/nvcc
	cjc_nvcc --cubin k.cu -o c.cubin --gpu-architecture native || fail
	cjc_nvcc --cubin k.cu -o c.cubin --gpu-architecture native || fail
	expect_stat uncacheable 5
	expect_stat misses 0
}

# -B names where gcc takes cc1plus from: not a file cjc can key.
testHostCompilerProgramDirectoryRunsUncached() {
	mkdir hostbin
	printf '#!/bin/sh\necho ran >>%s\nexec %s "$@"\n' "$PWD/cc1plus.log" \
		"$(gcc -print-prog-name=cc1plus)" >hostbin/cc1plus
	chmod +x hostbin/cc1plus
	compile a.o -Xcompiler -B"$PWD/hostbin/"
	compile b.o -Xcompiler -B"$PWD/hostbin/"
	expect_nvcc_runs 2
	expect_stat uncacheable 2
	assertTrue "gcc ran the cc1plus in -B's directory" "[ -s cc1plus.log ]"
	assertTrue "the reason logged: $(cat "$CJC_LOG")" \
		"grep -q 'uncacheable: a host-compiler option names a program' \"$CJC_LOG\""
}

# A host compiler's identity record renamed onto another's name in ids/ (a
# member of a group store can) is not believed: the record says which
# compiler it was made for (identity.c).
testAnIdentityRecordMovedToAnotherNameIsNotBelieved() {
	mkdir hc1 hc2
	printf '#!/bin/sh\nexec /usr/bin/gcc "$@"\n' >hc1/gcc
	printf '#!/bin/sh\nexec /usr/bin/gcc -DV=42 "$@"\n' >hc2/gcc
	chmod +x hc1/gcc hc2/gcc
	printf '#ifndef V\n#define V 1\n#endif\n__global__ void set(int *p) { *p = V; }\n' >v.cu
	# a record is believed only for files past the racy window (stamp.h)
	# when it was made, ctime included, which touch cannot set back
	sleep 2.1
	PATH="$PWD/hc2:$PATH" cjc_nvcc --cubin v.cu -o two.cubin -arch=$ARCH || fail "with hc2"
	PATH="$PWD/hc1:$PATH" cjc_nvcc --cubin v.cu -o one.cubin -arch=$ARCH || fail "with hc1"
	local ids hc1_id hc2_id
	ids=$(echo "$CJC_DIR"/v1/*/ids)
	hc1_id=$(grep -lF "$PWD/hc1/gcc" "$ids"/*) && hc2_id=$(grep -lF "$PWD/hc2/gcc" "$ids"/*) ||
		fail "the records: $(ls "$ids")"
	mv "$hc2_id" "$hc1_id"
	PATH="$PWD/hc1:$PATH" cjc_nvcc --cubin v.cu -o again.cubin -arch=$ARCH || fail "hc1 again"
	PATH="$PWD/hc1:$PATH" "$REAL_NVCC" --cubin v.cu -o plain.cubin -arch=$ARCH || fail "plain"
	expect_nvcc_runs 2
	assertFalse "the wrappers make different cubins" "cmp -s two.cubin plain.cubin"
	assertTrue "hc1's cubin" "cmp -s one.cubin plain.cubin"
	assertTrue "hc1's cubin after the rename, not hc2's" "cmp -s again.cubin plain.cubin"
	assertTrue "hc1's record made again" "grep -qF '$PWD/hc1/gcc' '$hc1_id'"
}

# changed_then NAME CHANGE ARG...: a cubin through cjc, CHANGE (shell
# words), again through cjc: the second is what plain nvcc makes now.
changed_then() {
	local name=$1 change=$2
	shift 2
	cjc_nvcc --cubin -arch=$ARCH "$@" -o c1.cubin || fail "$name: first"
	eval "$change"
	cjc_nvcc --cubin -arch=$ARCH "$@" -o c2.cubin || fail "$name: second"
	"$REAL_NVCC" --cubin -arch=$ARCH "$@" -o p.cubin || fail "$name: nvcc"
	assertTrue "$name: the second is nvcc's" "cmp -s c2.cubin p.cubin"
}

# What a hostile review found (each was a wrong hit): __has_include of a
# header that appears; include spellings the preprocessor takes (a comment
# before or after the '#', the digraph, #import, a splice in the word);
# -include's file, looked for in the working directory first; an include
# directory given to the host compiler; a ptxas options file.
testEveryIncludeSpellingAndFileReadIsFollowed() {
	local f
	mkdir -p inc q
	printf '#if __has_include("opt.h")\n#define V 1\n#else\n#define V 2\n#endif\n__global__ void k(int *o) { *o = V; }\n' >h.cu
	changed_then __has_include "touch opt.h" h.cu
	changed_then "__has_include, removed" "rm opt.h" h.cu
	echo '#define V 1' >inc/a.h
	for f in '/**/#include "a.h"' '%:include "a.h"' '#include/**/"a.h"' '#import "a.h"' \
		$'#inc\\\nlude "a.h"'; do
		printf '%s\n__global__ void k(int *o) { *o = V; }\n' "$f" >s.cu
		changed_then "[$f]" "echo '#define V 2' >a.h" -Iinc s.cu
		rm -f a.h
	done
	printf '__global__ void k(int *o) { *o = V; }\n' >n.cu
	changed_then "-include" "echo '#define V 2' >a.h" -Iinc -include a.h n.cu
	rm -f a.h
	printf '#include "a.h"\n__global__ void k(int *o) { *o = V; }\n' >i.cu
	changed_then "-Xcompiler -iquote" "echo '#define V 2' >q/a.h" -Xcompiler -iquote,q -Iinc i.cu
	printf '__global__ void k(float *o, float a) { float s = 0; for (int i = 0; i < 64; i++) s += o[i * threadIdx.x] * a; *o = s; }\n' >p.cu
	echo -O3 >popt
	changed_then "-Xptxas -optf" "echo -O0 >popt" -Xptxas -optf,popt p.cu
}

# gcc's long spellings of its include options (hostile30): a header that
# appears in --include-directory's directory, or -imacros' file found
# earlier on the search path.
testHostIncludeLongSpellingsAreFollowed() {
	mkdir -p inc1 inc2
	echo '#define V 1' >inc2/cfg.h
	printf '#include <cfg.h>\n__global__ void k(int *o) { *o = V; }\n' >c.cu
	changed_then "--include-directory=" "echo '#define V 2' >inc1/cfg.h" \
		-isystem inc2 -Xcompiler --include-directory=inc1 c.cu
	printf '__global__ void k(int *o) { *o = W; }\n' >w.cu
	echo '#define W 1' >inc2/pre.h
	changed_then "--imacros=" "echo '#define W 2' >inc1/pre.h" \
		--compiler-options=--imacros=pre.h -Iinc1 -Iinc2 w.cu
	expect_why c2.cubin "uncacheable: a host-compiler option adds an include directory"
}

# host_section OBJECT SECTION: the section's bytes' digest.
host_section() {
	objcopy -O binary --only-section="$2" "$1" /dev/stdout | md5sum | cut -c1-12
}

# changed_host_then NAME SECTION CHANGE ARG...: as changed_then, objects
# compared by a host section (objects differ in __nv_module_id), which
# CHANGE must change.
changed_host_then() {
	local name=$1 section=$2 change=$3
	shift 3
	cjc_nvcc -c -arch=$ARCH "$@" -o c1.o || fail "$name: first"
	eval "$change"
	cjc_nvcc -c -arch=$ARCH "$@" -o c2.o || fail "$name: second"
	"$REAL_NVCC" -c -arch=$ARCH "$@" -o p.o || fail "$name: nvcc"
	assertNotEquals "$name: the change changes nvcc's output" \
		"$(host_section c1.o "$section")" "$(host_section p.o "$section")"
	assertEquals "$name: the second is nvcc's" \
		"$(host_section p.o "$section")" "$(host_section c2.o "$section")"
}

# Files read that nvcc's dependency list leaves out (hostile30): the
# assembler's .incbin; cudafe++'s -Xcudafe --preinclude; the time of
# #pragma GCC dependency's file, which fails the compile under -Werror.
testAssemblerIncbinIsNotCached() {
	printf 'asm(".section .rodata\\n.incbin \\"data.bin\\"\\n.previous\\n");\n__global__ void k(int *p) { *p = 1; }\n' >b.cu
	printf AAAA >data.bin
	changed_host_then .incbin .rodata "printf BBBB >data.bin" b.cu
	expect_why c2.o "uncacheable: an assembler directive that reads a file"
}

testCudafePreincludeIsNotCached() {
	printf 'const char tag[] = V;\nconst char *use() { return tag; }\n__global__ void k(int *p) { *p = 1; }\n' >t.cu
	echo '#define V "one"' >pre.h
	changed_host_then "-Xcudafe --preinclude" .rodata "echo '#define V \"two\"' >pre.h" \
		-Xcudafe --preinclude=pre.h t.cu
}

testGccDependencyPragmaIsNotCached() {
	printf '_Pragma("GCC dependency \\"dep.txt\\"")\n__global__ void k(int *p) { *p = 1; }\n' >d.cu
	echo v1 >dep.txt
	touch -d '1 hour ago' dep.txt d.cu
	cjc_nvcc --cubin -arch=$ARCH -Xcompiler -Werror d.cu -o d1.cubin || fail "dependency: first"
	touch dep.txt
	assertFalse "a newer dependency fails the compile" \
		"cjc_nvcc --cubin -arch=$ARCH -Xcompiler -Werror d.cu -o d2.cubin 2>/dev/null"
}

# -Xcompiler -fprofile-use: gcc reads the profile by the output's name,
# which no key covers (and cjc's own output name hides it on a miss).
testHostProfileUseIsNotCached() {
	printf 'int f(int x) { for (int i = 0; i < 100; i++) if (x %% 7 == i) x += i * 3; else x ^= i; return x; }\nint main(int c, char **) { int s = 0; for (int i = 0; i < 100000; i++) s += f(i + c); return s == 1; }\n__global__ void k(int *p) { *p = 1; }\n' >g.cu
	"$REAL_NVCC" -c -arch=$ARCH -Xcompiler -fprofile-generate g.cu -o g.o || fail "instrumented"
	"$REAL_NVCC" -arch=$ARCH g.o -lgcov -o prog && ./prog
	assertTrue "the run wrote a profile" "[ -s g.gcda ]"
	mv g.gcda profile
	local use="-c -arch=$ARCH -Xcompiler -fprofile-use,-Wno-missing-profile g.cu -o g.o" before
	cjc_nvcc $use || fail "without a profile"
	before=$(host_section g.o .text)
	cp profile g.gcda
	cjc_nvcc $use || fail "with the profile"
	expect_why g.o "uncacheable: a host-compiler option reads or writes a file"
	cp g.o c.o
	"$REAL_NVCC" $use || fail "nvcc"
	assertNotEquals "the profile changes nvcc's code" "$before" "$(host_section g.o .text)"
	assertEquals "the second is nvcc's" "$(host_section g.o .text)" "$(host_section c.o .text)"
	NVCC_APPEND_FLAGS="-Xcompiler -fprofile-use,-Wno-missing-profile" \
		cjc_nvcc -c -arch=$ARCH g.cu -o g.o || fail "in NVCC_APPEND_FLAGS"
	expect_why g.o "uncacheable: a host-compiler option reads or writes a file"
}

# wait_for_stat NAME N: until the counter reaches N (a verifier runs
# apart from the build), bounded by two minutes.
wait_for_stat() {
	local i
	for i in $(seq 600); do
		[ "$(stat_value "$1")" -ge "$2" ] && return 0
		sleep 0.2
	done
	fail "counter $1 never reached $2: $(stat_value "$1")"
}

# verify_rate, the net for an input no rule knows: a wrapper around the
# real nvcc reads a variable cjc does not know (WRAPPED_X) and passes
# -DX=$WRAPPED_X.  With X=2 the key is X=1's, so X=1's cubin is served (a
# wrong hit no table can see); the sampled verification compiles again,
# finds the difference, counts it and records it for `cjc why`, and the
# entry is never served again: the next compile runs nvcc, until `cjc
# clean` removes the entry and its marker.  A compile that
# reproduces is counted verified; a -G one is not sampled.
testVerifyRateCatchesAnInputNoRuleKnows() {
	mkdir -p wrap
	printf '#!/bin/sh\nexec "%s" -DX="${WRAPPED_X:-1}" "$@"\n' "$REAL_NVCC" >wrap/nvcc
	chmod +x wrap/nvcc
	printf '__global__ void k(int *p) { *p = X; }\n' >x.cu
	WRAPPED_X=1 "$CJC" wrap/nvcc --cubin -arch=$ARCH x.cu -o a.cubin || fail "X=1"
	WRAPPED_X=2 CJC_VERIFY_RATE=1 "$CJC" wrap/nvcc --cubin -arch=$ARCH x.cu -o b.cubin || fail "X=2"
	assertTrue "X=1's cubin was served for X=2 (the hit verify_rate is for)" "cmp -s a.cubin b.cubin"
	wait_for_stat verify_mismatches 1
	expect_why b.cubin "did not reproduce when it was compiled again"
	WRAPPED_X=2 "$CJC" wrap/nvcc --cubin -arch=$ARCH x.cu -o c.cubin || fail "X=2 again"
	"$REAL_NVCC" -DX=2 --cubin -arch=$ARCH x.cu -o d.cubin || fail "nvcc"
	assertTrue "never served again: nvcc's cubin for X=2" "cmp -s c.cubin d.cubin"
	expect_why c.cubin "did not reproduce"
	"$CJC" clean >/dev/null || fail "cjc clean"
	assertFalse "clean removes the marker with its entry" "ls -d '$CJC_DIR'/v1/*/unsound 2>/dev/null"
	WRAPPED_X=2 "$CJC" wrap/nvcc --cubin -arch=$ARCH x.cu -o c.cubin || fail "after the clean"
	WRAPPED_X=2 "$CJC" wrap/nvcc --cubin -arch=$ARCH x.cu -o c.cubin || fail "after the clean"
	expect_why c.cubin "hit"
	compile e.cubin
	CJC_VERIFY_RATE=100% compile f.cubin
	wait_for_stat verified 1
	compile g.o -G
	CJC_VERIFY_RATE=1 compile h.o -G
	expect_stat verify_skipped 1
	expect_stat verify_mismatches 1
}

. "$SHUNIT2"
