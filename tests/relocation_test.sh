#!/bin/bash
# relocation_test.sh - docs/key.md (where paths resolve) and base_dir:
# a second build tree hits, a second checkout hits with base_dir, and nothing
# is ever served to a place whose files or directories differ.  Real CMake
# projects with both generators, and Make-style relative paths.

. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/cmake_helpers.sh"

# write_project DIR: a library and a program sharing a header; app.h is the
# program's alone.
write_project() {
	mkdir -p "$1/include" "$1/src"
	cat >"$1/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(reloc LANGUAGES CUDA)
find_package(CudaJitCache REQUIRED)
set(CMAKE_CUDA_ARCHITECTURES 80)
add_library(shift STATIC src/shift.cu)
target_include_directories(shift PUBLIC include)
add_executable(app src/main.cu src/scale.cu)
target_link_libraries(app PRIVATE shift)
cudajitcache_enable()
EOF
	echo '#define SHIFT 1.0f' >"$1/include/shared.h"
	echo '#define FACTOR 3.0f' >"$1/src/app.h"
	cat >"$1/src/shift.cu" <<'EOF'
#include "shared.h"
__global__ void shift(float *a) { a[threadIdx.x] += SHIFT; }
void launch_shift(float *a) { shift<<<1, 32>>>(a); }
EOF
	cat >"$1/src/scale.cu" <<'EOF'
#include "shared.h"
__global__ void scale(float *a) { a[threadIdx.x] *= SHIFT * 2.0f; }
void launch_scale(float *a) { scale<<<1, 32>>>(a); }
EOF
	cat >"$1/src/main.cu" <<'EOF'
#include "shared.h"
#include "app.h"
void launch_shift(float *a);
void launch_scale(float *a);
__global__ void apply(float *a) { a[threadIdx.x] *= FACTOR; }
int main() { float *a = 0; launch_shift(a); launch_scale(a); apply<<<1, 32>>>(a); return 0; }
EOF
}

# build_tree SRC BUILD GENERATOR [CMAKE-ARG...]: configure and build, with
# compile_commands.json.
build_tree() {
	local src=$1 build=$2 gen=$3
	shift 3
	configure_build "$src" "$build" "$gen" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@"
}

# tree_names BUILD DIR: how many of the build tree's objects contain DIR.
tree_names() {
	local o n=0
	for o in $(find "$1" -path '*.dir/*' -name '*.o'); do
		grep -qaF "$2" "$o" && n=$((n + 1))
	done
	echo "$n"
}

# assert_plain_nvcc_agrees BUILD: every object of the tree has the device code
# that plain nvcc makes from that tree's own command (compile_commands.json).
assert_plain_nvcc_agrees() {
	local dir cmd out n=0
	while IFS=$'\t' read -r dir cmd; do
		[[ $cmd =~ \ -o\ ([^ ]+) ]] && out=${BASH_REMATCH[1]}
		(cd "$dir" && sh -c "${cmd/ -o $out/ -o $TEST_DIR/plain.o}") || fail "plain nvcc: $cmd"
		assert_same_devcode "$dir/$out" "$TEST_DIR/plain.o"
		n=$((n + 1))
	done < <(jq -r '.[] | [.directory, .command] | @tsv' "$1/compile_commands.json")
	assertEquals "objects compared in $1" 3 "$n"
}

# Two build trees of one checkout with -lineinfo: the second runs no nvcc.
check_lineinfo_trees() {
	local gen=$1 tag=${1// /}
	export CJC_DIR=$TEST_DIR/cache-$tag
	write_project "$TEST_DIR/p-$tag"
	build_tree "$TEST_DIR/p-$tag" "$TEST_DIR/t1-$tag" "$gen" -DCMAKE_CUDA_FLAGS=-lineinfo || fail
	expect_counts "$gen -lineinfo, first tree" 3 0
	build_tree "$TEST_DIR/p-$tag" "$TEST_DIR/t2-$tag" "$gen" -DCMAKE_CUDA_FLAGS=-lineinfo || fail
	expect_counts "$gen -lineinfo, second tree: no nvcc" 3 3
	assertEquals "$gen: the same device code" "$(tree_devcode "$TEST_DIR/t1-$tag")" \
		"$(tree_devcode "$TEST_DIR/t2-$tag")"
}

# Each generator's pair of tests runs in one of CI's two builds (half_here).
testLineinfoSecondBuildTreeHitsWithNinja() { half_here plain || return 0; check_lineinfo_trees Ninja; }
testLineinfoSecondBuildTreeHitsWithMakefiles() {
	half_here sanitized || return 0
	check_lineinfo_trees "Unix Makefiles"
}

# Two trees whose objects record their own directory (-g: the host
# compiler's compile directory; -G: device debug information, seen in the
# object when the fatbin is not compressed).
check_debug_trees() {
	local gen=$1 tag=${1// /}$2 t1 t2
	shift 2
	export CJC_DIR=$TEST_DIR/cache-$tag
	t1=$TEST_DIR/t1-$tag t2=$TEST_DIR/t2-$tag
	write_project "$TEST_DIR/p-$tag"
	build_tree "$TEST_DIR/p-$tag" "$t1" "$gen" "$@" || fail
	build_tree "$TEST_DIR/p-$tag" "$t2" "$gen" "$@" || fail
	expect_counts "$gen $*: each tree compiles" 6 0
	assertEquals "$gen $*: the first tree's objects name it" 3 "$(tree_names "$t1" "$t1")"
	assertEquals "$gen $*: no object of the second names the first" 0 "$(tree_names "$t2" "$t1")"
}

# One generator each: both generators' paths are covered by the lineinfo and
# checkout tests, and each of these costs six compiles (HACKING.md, the budget).
testDebugTreesAreNotSharedWithMakefiles() { check_debug_trees "Unix Makefiles" g -DCMAKE_BUILD_TYPE=Debug; }
testDeviceDebugTreesAreNotSharedWithNinja() {
	check_debug_trees Ninja G "-DCMAKE_CUDA_FLAGS=-G --no-compress"
}

# Checkouts at different places, base_dir above them: the second runs no
# nvcc and gets what its own command makes; a third whose app.h differs
# recompiles exactly its dependent.
check_checkouts() {
	local gen=$1 tag=${1// /} co
	export CJC_DIR=$TEST_DIR/cache-$tag CJC_BASE_DIR=$TEST_DIR
	for co in 1 2 3; do
		write_project "$TEST_DIR/co$co-$tag/reloc"
	done
	echo '#define FACTOR 4.0f' >"$TEST_DIR/co3-$tag/reloc/src/app.h"
	build_tree "$TEST_DIR/co1-$tag/reloc" "$TEST_DIR/co1-$tag/reloc/build" "$gen" || fail
	expect_counts "$gen: first checkout" 3 0
	build_tree "$TEST_DIR/co2-$tag/reloc" "$TEST_DIR/co2-$tag/reloc/build" "$gen" || fail
	expect_counts "$gen: second checkout runs no nvcc" 3 3
	assert_plain_nvcc_agrees "$TEST_DIR/co2-$tag/reloc/build"
	build_tree "$TEST_DIR/co3-$tag/reloc" "$TEST_DIR/co3-$tag/reloc/build" "$gen" || fail
	expect_counts "$gen: third checkout, app.h changed" 4 5
	assert_plain_nvcc_agrees "$TEST_DIR/co3-$tag/reloc/build"
	echo '#define SHIFT 2.0f' >"$TEST_DIR/co2-$tag/reloc/include/shared.h"
	rebuild "$TEST_DIR/co2-$tag/reloc/build" || fail
	expect_counts "$gen: the dependency files are the second checkout's own" 7 5
}

testSecondCheckoutHitsWithBaseDirWithNinja() { half_here plain || return 0; check_checkouts Ninja; }
testSecondCheckoutHitsWithBaseDirWithMakefiles() {
	half_here sanitized || return 0
	check_checkouts "Unix Makefiles"
}

# Make-style: the same relative command in two directories.
testRelativeIncludeResolvingToAnotherFileMisses() {
	local d
	for d in a b; do
		mkdir -p "$TEST_DIR/$d/inc" && cp k.cu dev.h host.h "$TEST_DIR/$d/" && cp k.h "$TEST_DIR/$d/inc/"
	done
	echo '#define SCALE 5.0f' >"$TEST_DIR/b/inc/k.h"
	for d in a b; do
		(cd "$TEST_DIR/$d" && cjc_nvcc --cubin k.cu -Iinc -o k.cubin -arch=$ARCH) || fail
	done
	expect_nvcc_runs 2
	assertFalse "each directory's own header" "cmp -s '$TEST_DIR/a/k.cubin' '$TEST_DIR/b/k.cubin'"
	# with base_dir the relative paths are keyed as written: the files decide
	export CJC_BASE_DIR=$TEST_DIR
	(cd "$TEST_DIR/a" && cjc_nvcc --cubin k.cu -Iinc -o k.cubin -arch=$ARCH) || fail
	(cd "$TEST_DIR/b" && cjc_nvcc --cubin k.cu -Iinc -o k.cubin -arch=$ARCH) || fail
	expect_nvcc_runs 4
	cp "$TEST_DIR/a/inc/k.h" "$TEST_DIR/b/inc/k.h"
	(cd "$TEST_DIR/b" && cjc_nvcc --cubin k.cu -Iinc -o k2.cubin -arch=$ARCH) || fail
	expect_nvcc_runs 4
	assert_same_devcode "$TEST_DIR/a/k.cubin" "$TEST_DIR/b/k2.cubin"
}

# Without base_dir a relative path is keyed by where it resolves.
testRelativeIncludeDirectoryIsKeyedByWhereItResolves() {
	local src=$PWD
	mkdir -p b1 b2 inc && mv k.h inc/
	(cd b1 && cjc_nvcc --cubin "$src/k.cu" -I../inc -o k.cubin -arch=$ARCH -lineinfo) || fail
	(cd b2 && cjc_nvcc --cubin "$src/k.cu" -I../inc -o k.cubin -arch=$ARCH -lineinfo) || fail
	expect_nvcc_runs 2
	expect_why b2/k.cubin "miss: ../inc now resolves to $src/b2/../inc (was $src/b1/../inc)"
	"$CJC" why b2/k.cubin >why.txt
	assertTrue "the rule" "grep -q 'working directory: relative paths are keyed by where they resolve' why.txt"
}

# -lineinfo with absolute paths: any working directory; -G and -g: only the same.
testDebugOptionsAndTheWorkingDirectory() {
	local src=$PWD
	mkdir -p elsewhere
	cjc_nvcc -c "$src/k.cu" -o li.o -arch=$ARCH -lineinfo || fail
	(cd elsewhere && cjc_nvcc -c "$src/k.cu" -o li.o -arch=$ARCH -lineinfo) || fail
	expect_nvcc_runs 1
	cjc_nvcc -c "$src/k.cu" -o G.o -arch=$ARCH -G || fail
	(cd elsewhere && cjc_nvcc -c "$src/k.cu" -o G.o -arch=$ARCH -G) || fail
	expect_nvcc_runs 3
	expect_why elsewhere/G.o "miss: working directory changed from $src (-G records it in the output)"
	cjc_nvcc -c "$src/k.cu" -o g.o -arch=$ARCH -g || fail
	(cd elsewhere && cjc_nvcc -c "$src/k.cu" -o g.o -arch=$ARCH -g) || fail
	expect_nvcc_runs 5
	assertFalse "a -g object names its own directory only" "grep -qaF '$src/elsewhere' g.o"
	assertTrue "the one made elsewhere names elsewhere: it was compiled, not served" \
		"grep -qaF '$src/elsewhere' elsewhere/g.o"
	# mapped away, the working directory leaves the key
	cjc_nvcc -c "$src/k.cu" -o m.o -arch=$ARCH -g -Xcompiler -fdebug-prefix-map="$src"=. || fail
	(cd elsewhere && cjc_nvcc -c "$src/k.cu" -o m.o -arch=$ARCH -g -Xcompiler -fdebug-prefix-map="$src"=.) || fail
	expect_nvcc_runs 6
	assertFalse "a mapped -g object names no directory" "grep -qaF '$src/elsewhere' elsewhere/m.o"
}

# -G records the working directory as $PWD names it (gcc's getpwd): a
# directory reached through a symbolic link is another directory to the
# key, and its hit is what nvcc makes there; a stale $PWD is not used.
testDebugThroughASymbolicLinkIsWhatNvccMakesThere() {
	local here=$PWD
	mkdir -p real && cp k.cu k.h dev.h host.h real/ && ln -s real via
	(cd real && cjc_nvcc --cubin k.cu -o ../a.cubin -arch=$ARCH -G) || fail "real"
	(cd via && cjc_nvcc --cubin k.cu -o ../b.cubin -arch=$ARCH -G) || fail "via the link"
	(cd via && cjc_nvcc --cubin k.cu -o ../c.cubin -arch=$ARCH -G) || fail "via the link again"
	expect_nvcc_runs 2
	# (a -G cubin names nvcc's temporary files: compared by the directory it names)
	assertTrue "served through the link: it names the link, as nvcc's there does" \
		"grep -qaF '$here/via' c.cubin"
	assertFalse "and not the directory the link leads to" "grep -qaF '$here/real' c.cubin"
	(cd real && PWD=$here cjc_nvcc --cubin k.cu -o ../e.cubin -arch=$ARCH -G) ||
		fail "a PWD that names another directory"
	expect_nvcc_runs 2
	assertTrue "a stale PWD is not believed" "grep -qaF '$here/real' e.cubin"
}

# -lineinfo names each checkout's directories: base_dir does not share it.
testLineinfoIsNotSharedAcrossCheckouts() {
	local d
	export CJC_BASE_DIR=$TEST_DIR
	for d in c1 c2; do
		mkdir -p "$TEST_DIR/$d" && cp k.cu k.h dev.h host.h "$TEST_DIR/$d/"
		(cd "$TEST_DIR/$d" && cjc_nvcc -c "$TEST_DIR/$d/k.cu" -o k.o -arch=$ARCH -lineinfo) || fail
	done
	expect_nvcc_runs 2
	assertFalse "the second checkout's object names the first" "grep -qaF '$TEST_DIR/c1' '$TEST_DIR/c2/k.o'"
}

# hash_dir = false (ccache's name): by choice, a second checkout of a
# -lineinfo project hits every compile, and its objects name the checkout
# that compiled them; without it, a checkout hits none.
testHashDirFalseSharesLineinfoAcrossCheckouts() {
	local co
	export CJC_BASE_DIR=$TEST_DIR
	for co in 1 2; do write_project "$TEST_DIR/co$co/reloc"; done
	CJC_HASH_DIR=false build_tree "$TEST_DIR/co1/reloc" "$TEST_DIR/co1/reloc/build" Ninja \
		-DCMAKE_CUDA_FLAGS=-lineinfo || fail
	expect_counts "first checkout" 3 0
	CJC_HASH_DIR=false build_tree "$TEST_DIR/co2/reloc" "$TEST_DIR/co2/reloc/build" Ninja \
		-DCMAKE_CUDA_FLAGS=-lineinfo || fail
	expect_counts "second checkout, hash_dir false: every compile hits" 3 3
	assertEquals "its objects name the first checkout" 3 \
		"$(tree_names "$TEST_DIR/co2/reloc/build" "$TEST_DIR/co1/reloc")"
	build_tree "$TEST_DIR/co2/reloc" "$TEST_DIR/co2/reloc/plain" Ninja -DCMAKE_CUDA_FLAGS=-lineinfo || fail
	expect_counts "the same checkout without it: none hits" 6 3
	assertEquals "and its objects name it alone" 0 \
		"$(tree_names "$TEST_DIR/co2/reloc/plain" "$TEST_DIR/co1/reloc")"
	local o=$TEST_DIR/co2/reloc/build/CMakeFiles/shift.dir/src/shift.cu.o
	"$CJC" why "$o" >why.txt
	assertTrue "cjc why says so: $(cat why.txt)" "grep -q 'working directory: hash_dir is false' why.txt"
	assertEquals "recorded in metadata.json" 3 "$("$CJC" ls --json | jq -r '.[].key' | while read -r k; do
		"$CJC" show "$k" --json | jq -r '.hash_dir'; done | grep -c '^false$')"
}

# base_dir: the command as given and as run, the dependency file, `cjc why`.
testBaseDirIsRecorded() {
	local src=$PWD
	export CJC_BASE_DIR=$TEST_DIR
	mkdir -p build
	(cd build && cjc_nvcc -c "$src/k.cu" -I"$src" -o k.o -MD -arch=$ARCH) || fail
	"$CJC" show "$("$CJC" ls --json | jq -r '.[0].key')" --json >meta.json || fail
	assertEquals "as given" "$PWD/k.cu" "$(jq -r '.argv[2]' meta.json)"
	assertEquals "as run" "../k.cu" "$(jq -r '.argv_run[2]' meta.json)"
	assertEquals "include as run" "-I.." "$(jq -r '.argv_run[3]' meta.json)"
	assertEquals "base_dir" "$TEST_DIR" "$(jq -r '.base_dir' meta.json)"
	assertTrue "nvcc ran the relative command" "grep -q -- '-c ../k.cu -I.. ' '$NVCC_LOG'"
	assertTrue "dependency file for the build" "grep -q '^k.o : ../k.cu' build/k.d"
	"$CJC" why build/k.o >why.txt
	assertTrue "the rule" "grep -q 'working directory: base_dir $TEST_DIR: paths under it are keyed relative' why.txt"
	unset CJC_BASE_DIR
	(cd build && cjc_nvcc -c "$src/k.cu" -I"$src" -o k.o -MD -arch=$ARCH) || fail
	expect_why build/k.o "miss: base_dir unset (was $TEST_DIR); "
}

testBadBaseDirIsAnErrorAndTheCompileRuns() {
	CJC_BASE_DIR=relative/dir cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt || fail
	assertTrue "names the variable" "grep -q 'CJC_BASE_DIR.*absolute directory' err.txt"
	assertTrue "the output" "[ -s k.cubin ]"
}

. "$SHUNIT2"
