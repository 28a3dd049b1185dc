#!/bin/bash
# shim_test.sh - the NVRTC shim (docs/nvrtc-shim.md): a program that knows
# nothing of the cache (tests/shim/nvrtc_prog.c) compiles with the real
# NVRTC through `cjc run`, whichever way it loads NVRTC (linked, dlopen by
# soname or by path, Python's ctypes), and gets exactly what NVRTC gave it
# without the shim: code, log, lowered names.  A second run compiles
# nothing; headers given as strings, options and name expressions are in
# the key; a file a compile read from disk that changes, or a candidate
# that appears, is a miss and never a stale hit; a failed compile is passed
# through; eight processes and sixteen threads at once; entries are
# ordinary (ls, verify, why, audit, stats); CJC_DISABLE leaves NVRTC alone.

. "$(dirname "$0")/helpers.sh"
: "${CJC_NVRTC_PROG:?set CJC_NVRTC_PROG to build/tests/nvrtc_prog}"
if [ -z "${CJC_NVRTC_PROG_LINKED:-}" ]; then
	echo "NVRTC not found beside nvcc: skipping" >&2
	exit 125
fi
NVRTC_LIB=$(ldd "$CJC_NVRTC_PROG_LINKED" | awk '/libnvrtc/ { print $3 }')
NVRTC_SONAME=$(objdump -p "$NVRTC_LIB" | awk '/SONAME/ { print $2 }')
ALL="saxpy template header disk ptx fail"
CACHED="saxpy template header disk ptx"
# NVRTC keeps memory to the end (not the shim's: its leaks stay reported);
# Python loads the sanitized shim only after the sanitizer's runtime
PY_ENV=()
if [ -n "$SANITIZED" ]; then
	export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/shim/lsan.supp:print_suppressions=0"
	PY_ENV=("LD_PRELOAD=$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
		ASAN_OPTIONS=detect_leaks=0)
fi

# prog OUT [ARGS...]: the program, dlopen'ing NVRTC by soname, without the shim.
prog() {
	local out=$1
	shift
	mkdir -p "$out" && "$CJC_NVRTC_PROG" "soname:$NVRTC_SONAME" "$out" "$@"
}

# shimmed HOW OUT [ARGS...]: the program through `cjc run`, loading NVRTC HOW.
shimmed() {
	local how=$1 out=$2 bin=$CJC_NVRTC_PROG
	shift 2
	[ "$how" = linked ] && bin=$CJC_NVRTC_PROG_LINKED
	mkdir -p "$out" && "$CJC" run -- "$bin" "$how" "$out" "$@"
}

# same_as REF OUT: the program got from NVRTC exactly what it got without the shim.
same_as() {
	assertTrue "$2 differs from $1: $(diff -r "$1" "$2" | head -5)" "diff -r '$1' '$2' >/dev/null"
}

# Counter updates lost to a lock held too long (stats.h: bounded, then
# skipped, and logged): a busy machine may lose some, never add any.
lost_counts() {
	grep -c 'cannot update the counters' "$CJC_LOG" || true
}

# expect_counted N: N compiles were each counted a hit or a miss, as far as
# no update was lost.
expect_counted() {
	local counted=$(($(stat_value hits) + $(stat_value misses)))
	assertTrue "counted $counted of $1 ($(lost_counts) updates lost)" \
		"[ $counted -le $1 ] && [ $((counted + $(lost_counts))) -ge $1 ]"
}

write_disk_header() {
	mkdir -p inc
	echo "#define DISK_VALUE $1" >inc/disk.h
}

testEachWayOfLoadingNvrtcIsServedWhatNvrtcGave() {
	write_disk_header 7
	prog ref -I inc $ALL
	assertContains "the reference has a warning in its log" "$(cat ref/saxpy.txt)" 'warning #177-D'
	assertContains "and lowered names" "$(cat ref/template.txt)" 'lowered scale<float> 0 _Z5scaleIfEvPT_S0_'
	shimmed linked linked -I inc $ALL
	same_as ref linked
	expect_stat misses 5
	expect_stat compile_failed 1
	local how n=0
	for how in "soname:$NVRTC_SONAME" "path:$NVRTC_LIB"; do
		shimmed "$how" "out$((++n))" -I inc $ALL
		same_as ref "out$n"
	done
	expect_stat hits 10
	expect_stat misses 5
	expect_stat compile_failed 3
	assertEquals "one entry each" 5 "$(entry_count)"
	assertEquals "no unusable manifest, nothing unpublished" "" \
		"$(grep -v 'published .* for ' "$CJC_LOG")"
}

# Python's ctypes: the template case, its cubin and lowered name, by hand.
testPythonsCtypesIsServedWhatNvrtcGave() {
	cat >prog.py <<'PY'
import ctypes, hashlib, sys
lib = ctypes.CDLL(sys.argv[1])
prog = ctypes.c_void_p()
src = b"template <typename T> __global__ void scale(T *x, T a) { x[threadIdx.x] *= a; }\n"
assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"py.cu", 0, None, None) == 0
assert lib.nvrtcAddNameExpression(prog, b"scale<float>") == 0
print("compile", lib.nvrtcCompileProgram(prog, 1, (ctypes.c_char_p * 1)(b"-arch=sm_80")))
size = ctypes.c_size_t()
lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
cubin = ctypes.create_string_buffer(size.value)
lib.nvrtcGetCUBIN(prog, cubin)
name = ctypes.c_char_p()
lib.nvrtcGetLoweredName(prog, b"scale<float>", ctypes.byref(name))
print("cubin", hashlib.sha256(cubin.raw).hexdigest(), name.value.decode())
PY
	local ref first second
	ref=$(env "${PY_ENV[@]}" /usr/bin/python3 prog.py "$NVRTC_SONAME") || fail "python"
	first=$(env "${PY_ENV[@]}" "$CJC" run -- /usr/bin/python3 prog.py "$NVRTC_SONAME")
	second=$(env "${PY_ENV[@]}" "$CJC" run -- /usr/bin/python3 prog.py "$NVRTC_SONAME")
	assertContains "$ref" "$ref" "_Z5scaleIfEvPT_S0_"
	assertEquals "a miss gives NVRTC's cubin and name" "$ref" "$first"
	assertEquals "so does a hit" "$ref" "$second"
	expect_stat misses 1
	expect_stat hits 1
}

# cuda-python and CuPy first ask whether NVRTC is loaded already (dlopen
# by soname with RTLD_NOLOAD, which finds the toolkit's and loads nothing),
# then load the NVRTC of a wheel by its path: that one is served.
testAProbeThatLoadsNothingChoosesNoNvrtc() {
	mkdir -p wheel/lib
	cp -L "$NVRTC_LIB" "wheel/lib/$NVRTC_SONAME"
	cat >probe.py <<'PY'
import ctypes, os, sys
try:
    ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOLOAD)
    print("loaded already")
except OSError:
    pass
lib = ctypes.CDLL(os.path.abspath(sys.argv[2]))
prog = ctypes.c_void_p()
src = b"__global__ void twice(float *x) { x[threadIdx.x] *= 2; }\n"
assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"probe.cu", 0, None, None) == 0
print("compile", lib.nvrtcCompileProgram(prog, 1, (ctypes.c_char_p * 1)(b"-arch=sm_80")))
PY
	local i
	for i in 1 2; do
		assertEquals "compile 0" "$(env "${PY_ENV[@]}" "$CJC" run -- /usr/bin/python3 probe.py \
			"$NVRTC_SONAME" "wheel/lib/$NVRTC_SONAME")"
	done
	expect_stat misses 1
	expect_stat hits 1
}

# CuPy compiles empty programs (probes of NVRTC's options): cached too,
# though a store keeps no empty file, and rebuilt by cjc audit.
testAnEmptySourceIsCachedAndAudited() {
	cat >empty.py <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
prog = ctypes.c_void_p()
assert lib.nvrtcCreateProgram(ctypes.byref(prog), b"", b"empty.cu", 0, None, None) == 0
print("compile", lib.nvrtcCompileProgram(prog, 1, (ctypes.c_char_p * 1)(b"-arch=sm_80")))
PY
	local i
	for i in 1 2; do
		assertEquals "compile 0" "$(env "${PY_ENV[@]}" "$CJC" run -- /usr/bin/python3 empty.py \
			"$NVRTC_SONAME")"
	done
	expect_stat misses 1
	expect_stat hits 1
	expect_stat errors 0
	assertContains "$("$CJC" audit all 2>&1)" "1 reproducible, 0 differ"
}

testHeadersGivenAsStringsAreKeyed() {
	prog ref header
	prog ref3 --header '#define SCALE 3.0f' header
	shimmed "soname:$NVRTC_SONAME" a header
	shimmed "soname:$NVRTC_SONAME" b --header '#define SCALE 3.0f' header
	shimmed "soname:$NVRTC_SONAME" c --header '#define SCALE 3.0f' header
	same_as ref a
	same_as ref3 b
	same_as ref3 c
	assertFalse "the headers make other code" "cmp -s ref/header.ptx ref3/header.ptx"
	expect_stat misses 2
	expect_stat hits 1
}

# A header read through -I that changes, a candidate that appears in an
# earlier directory, and one in the working directory: each a miss.
testFilesReadFromDiskAreKeyedByContent() {
	write_disk_header 7
	mkdir -p first
	shimmed linked a -I first -I inc disk
	shimmed linked b -I first -I inc disk
	expect_stat misses 1
	expect_stat hits 1
	write_disk_header 8
	prog ref8 -I first -I inc disk
	shimmed linked c -I first -I inc disk
	same_as ref8 c
	expect_stat misses 2
	echo '#define DISK_VALUE 9' >first/disk.h
	prog ref9 -I first -I inc disk
	shimmed linked d -I first -I inc disk
	same_as ref9 d
	expect_stat misses 3
	# the working directory is searched first: "disk.h" there, then not
	echo '#define DISK_VALUE 10' >disk.h
	prog ref10 -I first -I inc disk
	shimmed linked e -I first -I inc disk
	same_as ref10 e
	mkdir -p elsewhere && (cd elsewhere && shimmed linked ../f -I ../first -I ../inc disk)
	(cd elsewhere && prog ../ref9b -I ../first -I ../inc disk)
	same_as ref9b f
	expect_stat misses 5
	expect_stat hits 1
}

testAFailedCompileIsPassedThroughAndNotCached() {
	prog ref fail
	shimmed linked a fail
	shimmed linked b fail
	same_as ref a
	same_as ref b
	assertContains "NVRTC's error and log" "$(cat b/fail.txt)" "compile 6"
	expect_stat compile_failed 2
	expect_stat misses 0
	assertEquals "nothing stored" 0 "$(entry_count)"
}

testEightProcessesAndSixteenThreadsAtOnce() {
	local i pids=()
	prog ref saxpy template header ptx
	for i in 1 2 3 4 5 6 7 8; do
		shimmed "soname:$NVRTC_SONAME" "p$i" saxpy template header ptx &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "a process failed"; done
	for i in 1 2 3 4 5 6 7 8; do same_as ref "p$i"; done
	assertEquals "one entry per program" 4 "$(entry_count)"
	expect_counted 32
	prog tref --threads 16 saxpy
	shimmed linked t1 --threads 16 saxpy
	local hits lost
	hits=$(stat_value hits) lost=$(lost_counts)
	shimmed linked t2 --threads 16 saxpy
	same_as tref t1
	same_as tref t2
	assertEquals "one entry per variant besides" 7 "$(entry_count)"
	lost=$(($(lost_counts) - lost))
	assertTrue "the second run's sixteen all hits: $hits, then $(stat_value hits) ($lost lost)" \
		"[ $(stat_value hits) -le $((hits + 16)) ] && [ $(($(stat_value hits) + lost)) -ge $((hits + 16)) ]"
	assertEquals "nothing unpublished: $(cat "$CJC_LOG")" "" "$(grep -i 'not published\|unusable' "$CJC_LOG")"
	"$CJC" verify >/dev/null || fail "cjc verify"
}

# A child forked after the parent compiled: served, as it would be served.
testAForkedChildIsServed() {
	prog ref saxpy template
	shimmed linked a --fork saxpy template
	local c
	for c in saxpy template; do
		assertTrue "$c in the child" "cmp -s ref/$c.txt a/$c-child.txt"
		assertTrue "$c's cubin in the child" "cmp -s ref/$c.cubin a/$c-child.cubin"
	done
	expect_stat misses 2
	expect_stat hits 2
}

testEntriesAreOrdinary() {
	write_disk_header 7
	shimmed linked a -I inc template disk
	shimmed linked b -I inc template disk
	local key
	key=$("$CJC" ls --json | jq -r '.[] | select(.kind == "nvrtc") | .key' | head -1)
	[ -n "$key" ] || fail "no entry of kind nvrtc: $("$CJC" ls)"
	"$CJC" verify >/dev/null || fail "cjc verify"
	assertContains "cjc why" "$("$CJC" why --jit template)" "through the NVRTC shim"
	assertContains "cjc audit rebuilds them" "$("$CJC" audit all)" \
		"audited 2 entries: 2 reproducible"
	assertEquals "counted as their own target" 2 \
		"$("$CJC" stats --by-target --json | jq '.targets["nvrtc-shim"].hits')"
	write_disk_header 8
	assertContains "an entry whose input changed" "$("$CJC" audit all)" "input inc/disk.h changed"
}

# compression_level (docs/settings.md) holds for the shim's entries too.
testCompressionLevelIsHonoured() {
	CJC_COMPRESSION_LEVEL=0 shimmed linked a saxpy
	local keys key
	keys=$("$CJC" ls --json | jq -r '.[] | select(.kind == "nvrtc") | .key')
	[ -n "$keys" ] || fail "no entry of kind nvrtc: $("$CJC" ls)"
	for key in $keys; do
		assertEquals "level 0: $key stored as it is" false \
			"$("$CJC" show "$key" --json | jq '[.files[] | has("zstd")] | any')"
	done
}

testDisableLeavesNvrtcAlone() {
	prog ref saxpy
	CJC_DISABLE=1 shimmed linked a saxpy
	same_as ref a
	assertFalse "no store" "[ -e '$CJC_DIR' ]"
	# an unusable store: NVRTC compiles, the log says why
	CJC_DIR=/proc/version shimmed linked b saxpy
	same_as ref b
	assertContains "$(cat "$CJC_LOG")" "$(cat "$CJC_LOG")" "compiling without the cache"
}

# An option that makes NVRTC write a file: NVRTC compiles, each time.
testAnOptionThatWritesAFileIsNotCached() {
	local i
	for i in 1 2; do
		shimmed linked "o$i" --option --fdevice-time-trace=trace$i.json saxpy
		assertTrue "NVRTC wrote trace$i.json" "ls trace$i.json* >/dev/null 2>&1"
	done
	expect_stat uncacheable 2
	expect_stat misses 0
	assertContains "$(cat "$CJC_LOG")" "$(cat "$CJC_LOG")" "not cached: an option reads or writes files"
}

# A time macro in an option, or in a header behind a line splice: NVRTC
# (which ignores SOURCE_DATE_EPOCH) compiles each time.
testATimeMacroInAnOptionOrASplicedHeaderIsNotCached() {
	local i
	for i in 1 2; do
		shimmed linked "o$i" --option -DNOW=__TIME__ saxpy
		shimmed linked "h$i" --header $'#define WHEN __TI\\\nME__' header
	done
	expect_stat uncacheable 4
	expect_stat misses 0
	assertContains "$(cat "$CJC_LOG")" "not cached: an option names __DATE__"
}

# A header NVRTC read from disk that names a time macro: not published,
# so never served (NVRTC ignores SOURCE_DATE_EPOCH).
testATimeMacroInAHeaderReadFromDiskIsNotPublished() {
	write_disk_header '7 /* built at __TIME__ */'
	shimmed linked a -I inc disk
	shimmed linked b -I inc disk
	expect_stat hits 0
	expect_stat misses 2
	assertEquals "no entry" 0 "$(entry_count)"
	assertContains "$(cat "$CJC_LOG")" "not published: __TIME__ in inc/disk.h"
}

testCjcRunEnvAndItsMistakes() {
	prog ref saxpy
	assertEquals "cjc run without a program" 2 "$("$CJC" run >/dev/null 2>&1; echo $?)"
	assertEquals "a program that is not there" 127 "$("$CJC" run -- ./nothing 2>/dev/null; echo $?)"
	assertEquals "a program that never calls NVRTC" "hello" "$("$CJC" run -- echo hello)"
	local env
	env=$("$CJC" run --env)
	assertContains "cjc run --env" "$env" "export LD_AUDIT="
	assertContains "cjc run --env" "$env" "libcudajitcache-audit.so"
	(
		eval "$env"
		mkdir -p a b && "$CJC_NVRTC_PROG_LINKED" linked a saxpy && "$CJC_NVRTC_PROG_LINKED" linked b saxpy
	)
	same_as ref a
	same_as ref b
	expect_stat hits 1
}

. "$SHUNIT2"
