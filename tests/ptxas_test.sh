#!/bin/bash
# `cjc ptxas` and cjc called as ptxas (docs/command-line.md#ptxas): PTX to
# cubin through the cache, as Triton and TorchInductor run ptxas, with the
# real ptxas and PTX that the real nvcc made.
. "$(dirname "$0")/helpers.sh"

# Beside nvcc, or the toolkit's where nvcc is a wrapper script elsewhere.
REAL_PTXAS=${REAL_PTXAS:-$(dirname "$(readlink -f "$REAL_NVCC")")/ptxas}
[ -x "$REAL_PTXAS" ] || REAL_PTXAS=/usr/local/cuda/bin/ptxas
if [ ! -x "$REAL_PTXAS" ]; then
	echo "ptxas not found beside $REAL_NVCC nor in /usr/local/cuda/bin (set REAL_PTXAS): skipping" >&2
	exit 125
fi
GPU=sm_90a # Triton's --gpu-name on an H100

# The PTX of two kernels, made once for the suite: saxpy, and one in double
# precision (ptxas -warn-double-usage names the input in its warnings).
oneTimeSetUp() {
	PTX_DIR=$(mktemp -d "$TMPDIR/cjc-ptxas.XXXXXX")
	cat >"$PTX_DIR/k.cu" <<'SRC'
__global__ void saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}
SRC
	cat >"$PTX_DIR/d.cu" <<'SRC'
__global__ void triple(double *x) { x[threadIdx.x] = x[threadIdx.x] * 3.0 + 1.0; }
SRC
	"$REAL_NVCC" --ptx -lineinfo -arch=$GPU "$PTX_DIR/k.cu" -o "$PTX_DIR/k.ptx" &&
		"$REAL_NVCC" --ptx -arch=$GPU "$PTX_DIR/d.cu" -o "$PTX_DIR/d.ptx" || exit 1
}

oneTimeTearDown() { rm -rf "$PTX_DIR"; }

# ptxas, as cjc finds it (CJC_PTXAS): a wrapper that logs each run but
# --version (which its identity asks until the wrapper is 2 s old).
setUp() {
	TEST_DIR=$(mktemp -d "$TMPDIR/cjc-test.XXXXXX")
	export CJC_DIR="$TEST_DIR/cache" CJC_LOG="$TEST_DIR/cjc.log"
	export CJC_PTXAS="$TEST_DIR/bin/ptxas" PTXAS_LOG="$TEST_DIR/ptxas.log"
	mkdir -p "$TEST_DIR/bin" "$TEST_DIR/src"
	printf '#!/bin/sh\n[ "$*" = --version ] || echo run >>"$PTXAS_LOG"\nexec %q "$@"\n' \
		"$REAL_PTXAS" >"$CJC_PTXAS"
	chmod +x "$CJC_PTXAS"
	cd "$TEST_DIR/src" && cp "$PTX_DIR/k.ptx" "$PTX_DIR/d.ptx" .
}

tearDown() { cd / && rm -rf "$TEST_DIR"; }

expect_ptxas_runs() {
	assertEquals "ptxas runs" "$1" "$(cat "$PTXAS_LOG" 2>/dev/null | wc -l)"
}

# Triton's call (triton/backends/nvidia/compiler.py, make_cubin): a
# temporary .ptx, the cubin beside it as NAME.o, stderr into a log.
triton_ptxas() { # PTX_FILE PTXAS...
	local tmp ptx=$1
	shift
	tmp=$(mktemp "$TMPDIR/tmpXXXXXXXX") && mv "$tmp" "$tmp.ptx" && cp "$ptx" "$tmp.ptx"
	"$@" -lineinfo -v --gpu-name=$GPU "$tmp.ptx" -o "$tmp.ptx.o" 2>"$tmp.log" || return
	cat "$tmp.ptx.o"
	rm -f "$tmp.ptx" "$tmp.ptx.o" "$tmp.log"
}

testMissThenHitServesPlainPtxasCubin() {
	"$CJC" ptxas -v --gpu-name=$GPU k.ptx -o a.cubin 2>a.err || fail "miss failed"
	"$CJC" ptxas -v --gpu-name=$GPU k.ptx -o b.cubin 2>b.err || fail "hit failed"
	"$REAL_PTXAS" -v --gpu-name=$GPU k.ptx -o plain.cubin 2>/dev/null
	expect_ptxas_runs 1
	expect_stat misses 1
	expect_stat hits 1
	assertTrue "the hit's cubin is plain ptxas's" "cmp b.cubin plain.cubin"
	assertTrue "the miss's cubin is plain ptxas's" "cmp a.cubin plain.cubin"
	assertTrue "the hit says what the miss said" "cmp a.err b.err"
	assertContains "-v's report replayed" "$(cat b.err)" "Used"
	assertEquals "kind" ptxas "$("$CJC" ls --json | jq -r '.[0].kind')"
	assertEquals "target" ptxas "$("$CJC" ls --json | jq -r '.[0].target')"
	expect_why b.cubin "hit: served from entry"
	assertContains "cjc why names ptxas" "$("$CJC" why b.cubin)" "of ptxas"
	assertEquals "the journal's compiler" ptxas "$("$CJC" why --json b.cubin | jq -r .facts.compiler)"
}

# path_lookups NAME...: how often a hit, run under strace with an empty
# directory first on PATH, looked for ptxas or nvcc there.
path_lookups() {
	mkdir -p "$TEST_DIR/probe"
	# LeakSanitizer cannot run under ptrace (the ASan build)
	PATH=$TEST_DIR/probe:$PATH ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -o "$TEST_DIR/trace" \
		"$CJC" ptxas --gpu-name=$GPU k.ptx -o hit.cubin || fail "the hit failed"
	grep -cE "\"$TEST_DIR/probe/(ptxas|nvcc)\"" "$TEST_DIR/trace"
}

# Finding the real ptxas (ptxas.h) asks each candidate only when those
# before it are not there: none walks PATH where CJC_PTXAS names it, and
# one walk finds nvcc, with ptxas beside it, where nothing does.
testFindingPtxasWalksPathOnce() {
	command -v strace >/dev/null || { startSkipping; return; }
	"$CJC" ptxas --gpu-name=$GPU k.ptx -o miss.cubin || fail "the miss failed"
	assertEquals "lookups with CJC_PTXAS" 0 "$(path_lookups)"
	local said
	said=$(unset CJC_PTXAS CUDA_HOME CUDA_PATH
		PATH=$(dirname "$REAL_PTXAS"):$PATH
		"$CJC" ptxas --gpu-name=$GPU k.ptx -o miss.cubin || echo "the miss failed"
		echo "$(path_lookups) $(grep -c "probe/nvcc" "$TEST_DIR/trace")")
	assertEquals "lookups without, the one for nvcc" "1 1" "$said"
}

testTritonCallFromTwoTemporaryNamesHits() {
	triton_ptxas k.ptx "$CJC" ptxas >first.cubin || fail "first run failed"
	triton_ptxas k.ptx "$CJC" ptxas >second.cubin || fail "second run failed"
	triton_ptxas k.ptx "$REAL_PTXAS" >plain.cubin
	expect_ptxas_runs 1
	expect_stat hits 1
	assertTrue "served cubin is plain ptxas's" "cmp second.cubin plain.cubin"
}

testChangedPtxOrOptionMisses() {
	"$CJC" ptxas --gpu-name=$GPU k.ptx -o a.cubin || fail
	sed 's/mul.wide.s32/mul.wide.s32 /' k.ptx >changed.ptx
	"$CJC" ptxas --gpu-name=$GPU changed.ptx -o b.cubin || fail
	"$CJC" ptxas --fmad=false --gpu-name=$GPU k.ptx -o c.cubin || fail
	"$CJC" ptxas --gpu-name=$GPU --opt-level 1 k.ptx -o d.cubin || fail
	expect_ptxas_runs 4
	expect_stat hits 0
	"$REAL_PTXAS" --fmad=false --gpu-name=$GPU k.ptx -o plain.cubin
	assertTrue "-fmad=false's cubin" "cmp c.cubin plain.cubin"
}

testAnotherPtxasMisses() {
	"$CJC" ptxas --gpu-name=$GPU k.ptx -o a.cubin || fail
	echo "# another build of ptxas" >>"$CJC_PTXAS"
	"$CJC" ptxas --gpu-name=$GPU k.ptx -o b.cubin || fail
	expect_ptxas_runs 2
	expect_stat hits 0
	"$CJC" ptxas --gpu-name=$GPU k.ptx -o c.cubin || fail
	expect_ptxas_runs 2
}

testOutputThroughALinkIsWrittenByPtxas() {
	"$CJC" ptxas --gpu-name=$GPU k.ptx -o first.cubin || fail
	touch target.cubin && ln -s target.cubin link.cubin
	"$CJC" ptxas --gpu-name=$GPU k.ptx -o link.cubin || fail
	assertTrue "the link stays a link" "[ -L link.cubin ]"
	assertTrue "ptxas wrote through it" "cmp target.cubin first.cubin"
	expect_stat uncacheable 1
}

testQueriesPassThroughByteForByte() {
	"$CJC" ptxas --version >cjc.out 2>cjc.err
	local got=$?
	"$REAL_PTXAS" --version >plain.out 2>plain.err
	assertEquals "exit status" "$?" "$got"
	assertTrue "--version's output" "cmp cjc.out plain.out"
	assertTrue "--version's messages" "cmp cjc.err plain.err"
	assertTrue "--help's output" "cmp <(\"$CJC\" ptxas --help) <(\"$REAL_PTXAS\" --help)"
	assertEquals "entries" 0 "$(entry_count)"
	expect_stat uncacheable 0
	expect_ptxas_runs 1 # --help, as given (the wrapper does not log --version)
}

testFailingPtxasPassesThroughAndPublishesNothing() {
	printf '.version 9.0\n.target %s\nnot ptx at all\n' $GPU >bad.ptx
	"$CJC" ptxas --gpu-name=$GPU bad.ptx -o bad.cubin 2>cjc.err
	local got=$?
	"$REAL_PTXAS" --gpu-name=$GPU bad.ptx -o bad.cubin 2>plain.err
	assertEquals "ptxas's exit status" "$?" "$got"
	assertNotEquals "it failed" 0 "$got"
	assertTrue "ptxas's messages" "cmp cjc.err plain.err"
	assertEquals "entries" 0 "$(entry_count)"
	expect_stat compile_failed 1
}

testDebugKeysTheNamesItRecords() {
	cp k.ptx other.ptx
	"$CJC" ptxas -g --gpu-name=$GPU k.ptx -o a.cubin 2>/dev/null || fail
	"$CJC" ptxas -g --gpu-name=$GPU other.ptx -o a.cubin 2>/dev/null || fail
	expect_ptxas_runs 2
	"$REAL_PTXAS" -g --gpu-name=$GPU other.ptx -o a.cubin 2>/dev/null && mv a.cubin plain.cubin
	"$CJC" ptxas -g --gpu-name=$GPU other.ptx -o a.cubin 2>/dev/null || fail
	expect_ptxas_runs 2
	assertTrue "-g's cubin, names and all, is plain ptxas's" "cmp a.cubin plain.cubin"
}

testNameInMessagesIsNotPublished() {
	cp d.ptx other.ptx
	"$CJC" ptxas -warn-double-usage --gpu-name=$GPU d.ptx -o a.cubin 2>a.err || fail
	"$CJC" ptxas -warn-double-usage --gpu-name=$GPU other.ptx -o b.cubin 2>b.err || fail
	expect_ptxas_runs 2
	assertContains "ptxas's own warning, naming this input" "$(cat b.err)" "other.ptx"
	assertEquals "entries" 0 "$(entry_count)"
	expect_stat uncacheable 2
	assertEquals "counted under its reason" 2 "$("$CJC" stats --json |
		jq '.uncacheable_reasons["a file name reaches what ptxas made"]')"
}

testMasqueradeServesTritonThroughTritonPtxasPath() {
	command -v python3 >/dev/null || startSkipping
	mkdir masq && ln -s "$CJC" masq/ptxas
	local snippet='
import os, subprocess, sys, tempfile
ptxas, src = os.environ["TRITON_PTXAS_PATH"], open(sys.argv[1]).read()
with tempfile.NamedTemporaryFile(delete=False, mode="w", suffix=".ptx") as fsrc, \
        tempfile.NamedTemporaryFile(delete=False, mode="r", suffix=".log") as flog:
    fsrc.write(src)
    fsrc.flush()
    fbin = fsrc.name + ".o"
    subprocess.run([ptxas, "-lineinfo", "-v", "--gpu-name=sm_90a", fsrc.name, "-o", fbin],
                   check=True, close_fds=False, stderr=flog)
    sys.stdout.buffer.write(open(fbin, "rb").read())
    for f in (fsrc.name, flog.name, fbin):
        os.remove(f)
'
	TRITON_PTXAS_PATH=$PWD/masq/ptxas python3 -c "$snippet" k.ptx >first.cubin || fail "first"
	TRITON_PTXAS_PATH=$PWD/masq/ptxas python3 -c "$snippet" k.ptx >second.cubin || fail "second"
	"$REAL_PTXAS" -lineinfo -v --gpu-name=sm_90a k.ptx -o plain.cubin 2>/dev/null
	expect_ptxas_runs 1
	expect_stat hits 1
	assertTrue "Triton got plain ptxas's cubin" "cmp second.cubin plain.cubin"
	assertEquals "the masquerade answers --version as ptxas" "$("$REAL_PTXAS" --version)" \
		"$(masq/ptxas --version)"
}

testMasqueradeNeverRunsItself() {
	mkdir masq && ln -s "$CJC" masq/ptxas
	CJC_PTXAS=$PWD/masq/ptxas PATH=$PWD/masq:$PATH timeout 60 masq/ptxas --gpu-name=$GPU \
		k.ptx -o a.cubin || fail "the masquerade did not find the real ptxas"
	"$REAL_PTXAS" --gpu-name=$GPU k.ptx -o plain.cubin
	assertTrue "the real ptxas's cubin" "cmp a.cubin plain.cubin"
}

. "$SHUNIT2"
