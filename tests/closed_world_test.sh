#!/bin/bash
# closed_world_test.sh - the world of the key is closed by observation
# (docs/key.md, the environment): a preload library (closed_world/
# getenv_log.c) logs every name that nvcc and each process it starts
# (cicc, cudafe++, ptxas, fatbinary, nvlink, gcc or clang, cc1plus, as, ld)
# and NVRTC look up, over a representative set of compiles; every name is
# in the table (cjc_env_vars in src/lib/keys/key.c: keyed, uncacheable when
# set, a directory, or no effect) or followed otherwise (PATH: the programs
# it finds are keyed; PWD: the working directory as the compilers record
# it).  A new toolkit or compiler that reads a new name fails here, not a
# user.  The table's "no effect" rows are shown to be so: set all at once,
# nvcc's and NVRTC's outputs are unchanged.  And a few of the rows the
# observation added are shown to do what the table says.

. "$(dirname "$0")/helpers.sh"
: "${CJC_GETENV_LOGGER:?set CJC_GETENV_LOGGER to build/tests/getenv_log.so}"

# Names read and followed otherwise than by the table (docs/key.md).
FOLLOWED="PATH PWD"

# table_names [RULE]: the table's names (of RULE: KEYED, NO_EFFECT, ...), one a line.
table_names() {
	sed -n 's/^\t{ "\([^"]*\)", CJC_ENV_\([A-Z_]*\),.*/\1 \2/p' "$CJC_SOURCE_DIR/src/lib/keys/key.c" |
		awk -v r="${1:-}" 'r == "" || $2 == r { print $1 }'
}

# logged LOG CMD...: runs CMD (status ignored) with the logger preloaded.
logged() {
	local log=$1
	shift
	CJC_GETENV_LOG=$log LD_PRELOAD=$CJC_GETENV_LOGGER "$@" >/dev/null 2>&1
}

write_kernel_source() {
	cat >k.cu <<'SRC'
#include <cstdio>
__global__ void k(int *p) { p[threadIdx.x] = threadIdx.x; }
int main() { return 0; }
SRC
}

testEveryNameTheCompilersReadIsClassified() {
	write_kernel_source
	local log=$TEST_DIR/names.log arch=${ARCH#sm_}
	logged "$log" "$REAL_NVCC" -c k.cu -o c.o -arch=$ARCH
	logged "$log" "$REAL_NVCC" --cubin k.cu -o k.cubin -arch=$ARCH
	logged "$log" "$REAL_NVCC" --fatbin k.cu -o k.fatbin -arch=$ARCH
	logged "$log" "$REAL_NVCC" --ptx k.cu -o k.ptx -arch=$ARCH
	logged "$log" "$REAL_NVCC" -c -G k.cu -o g.o -arch=$ARCH
	logged "$log" "$REAL_NVCC" -c -lineinfo k.cu -o l.o -arch=$ARCH
	logged "$log" "$REAL_NVCC" -c -rdc=true k.cu -o r.o -arch=$ARCH
	logged "$log" "$REAL_NVCC" -dlink r.o -o d.o -arch=$ARCH
	logged "$log" "$REAL_NVCC" -c -rdc=true -gencode "arch=compute_$arch,code=lto_$arch" k.cu -o lto.o
	command -v clang >/dev/null &&
		logged "$log" "$REAL_NVCC" -ccbin clang -c k.cu -o clang.o -arch=$ARCH
	[ -n "${CJC_NVRTC_PROG_LINKED:-}" ] &&
		mkdir -p nvrtc && logged "$log" "$CJC_NVRTC_PROG_LINKED" linked nvrtc saxpy header
	assertTrue "the logger saw nvcc read NVCC_APPEND_FLAGS" "grep -qx NVCC_APPEND_FLAGS '$log'"
	assertTrue "and ptxas read PTXAS_FLAGS" "grep -qx PTXAS_FLAGS '$log'"
	local unknown
	unknown=$(sort -u "$log" | grep -vxF -f <(table_names; tr ' ' '\n' <<<"$FOLLOWED") | tr '\n' ' ')
	assertEquals "names read that the table does not classify (src/lib/keys/key.c, docs/key.md)" \
		"" "$unknown"
}

# Every "no effect" name set at once, to a path that does not exist (or,
# for the locale, a name that is none): the cubin and an object's device
# code are nvcc's without them, and NVRTC's outputs are its own.
testNoEffectNamesSetAtOnceChangeNothing() {
	write_kernel_source
	local name assignments=()
	for name in $(table_names NO_EFFECT); do
		assignments+=("$name=$TEST_DIR/nonexistent")
	done
	assertTrue "the table has no-effect rows" "[ ${#assignments[@]} -gt 20 ]"
	"$REAL_NVCC" --cubin k.cu -o a.cubin -arch=$ARCH || fail "plain"
	env "${assignments[@]}" "$REAL_NVCC" --cubin k.cu -o b.cubin -arch=$ARCH || fail "with them"
	assertTrue "the same cubin" "cmp -s a.cubin b.cubin"
	"$REAL_NVCC" -c k.cu -o a.o -arch=$ARCH || fail "plain object"
	env "${assignments[@]}" "$REAL_NVCC" -c k.cu -o b.o -arch=$ARCH || fail "object with them"
	assert_same_devcode a.o b.o
	[ -n "${CJC_NVRTC_PROG_LINKED:-}" ] || return 0
	mkdir -p ra rb
	"$CJC_NVRTC_PROG_LINKED" linked ra saxpy header || fail "NVRTC"
	env "${assignments[@]}" "$CJC_NVRTC_PROG_LINKED" linked rb saxpy header || fail "NVRTC with them"
	assertTrue "NVRTC's outputs: $(diff -r ra rb | head -3)" "diff -r ra rb >/dev/null"
}

# Rows the observation added: Debian gcc's relocation and nvcc.profile's
# variables (one of which is no shell name) make cjc run nvcc, which fails
# as plain nvcc does (cjc runs the real nvcc here: bash, which the test's
# wrapper is, drops a variable whose name is no shell name); and
# NVRTC_APPEND_FLAGS, whose effect was not shown, keeps NVRTC's compiles
# uncached.
testAddedRowsDoWhatTheTableSays() {
	write_kernel_source
	cjc_nvcc --cubin k.cu -o warm.cubin -arch=$ARCH || fail "warm"
	local a mine theirs
	for a in GCC_ROOT=/nonexistent compiler-bindir=/nonexistent TOP=/nonexistent; do
		env "$a" "$CJC" "$REAL_NVCC" -c k.cu -o cjc.o -arch=$ARCH 2>/dev/null
		mine=$?
		env "$a" "$REAL_NVCC" -c k.cu -o plain.o -arch=$ARCH 2>/dev/null
		theirs=$?
		assertEquals "$a: cjc's status is nvcc's" "$theirs" "$mine"
	done
	expect_stat uncacheable 3
	expect_why cjc.o "TOP is set"
	have_nvrtc || return 0
	printf 'extern "C" __global__ void k(int *p) { *p = 2; }\n' >n.cu
	assertEquals "NVRTC_APPEND_FLAGS: not cached" "miss -" \
		"$(NVRTC_APPEND_FLAGS=-lineinfo CJC_JIT_COMPILER=nvrtc jit n.cu)"
	assertEquals "nor again" "miss -" "$(NVRTC_APPEND_FLAGS=-lineinfo CJC_JIT_COMPILER=nvrtc jit n.cu)"
}

. "$SHUNIT2"
