# helpers.sh - sourced by every shell suite, before shunit2.
#
# Each test gets its own directory, cache ($CJC_DIR) and log; nvcc is a
# wrapper that logs each call and execs the real nvcc, so tests can count
# the compiles that really ran.  A suite whose tools are missing exits 125
# (ctest reports it skipped); CI installs them, so nothing is skipped there.

: "${CJC:?set CJC to the cjc binary}"
# CJC as make takes it (CJC=... on make's command line): a command's words,
# as CC is, so the path is shell-quoted for a checkout with a space in it.
MAKE_CJC=$(printf %q "$CJC")
REAL_NVCC=${REAL_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$REAL_NVCC" ]; then
	echo "nvcc not found (set REAL_NVCC): skipping" >&2
	exit 125
fi
SHUNIT2=${SHUNIT2:-/usr/share/shunit2/shunit2}
if [ ! -r "$SHUNIT2" ]; then
	echo "shunit2 not found: skipping" >&2
	exit 125
fi
command -v jq >/dev/null || { echo "jq not found: skipping" >&2; exit 125; }
ARCH=${CJC_TEST_ARCH:-sm_80}
# What the suites assume of the shell that runs them, set rather than
# inherited: other users (the sharing tests' members) read what a test
# writes and reach its directories, which a umask of 077 or a private
# TMPDIR (libpam-tmpdir's /tmp/user/0) would not let them; and a socket's
# path under TMPDIR must fit in 107 bytes.
umask 022
export TMPDIR=/tmp
# SANITIZED=1 when the cjc under test is the ASan+UBSan build: suites that
# run a matrix of cases take a sample of it there (HACKING.md, the budget).
SANITIZED=
grep -q 'CJC_SANITIZE:BOOL=ON' "${CJC_BUILD_DIR:-/nonexistent}/CMakeCache.txt" 2>/dev/null && SANITIZED=1

# cjc_host: this host as cjc's temporary names say it (fs.c's
# cjc_hostname): the host name with '.' and '/' made '_', and the PID
# namespace its pids are of.
cjc_host() { echo "$(uname -n | tr './' '__')_pidns$(stat -Lc %i /proc/self/ns/pid)"; }

# half_here plain|sanitized: whether this build runs that half of a pair of
# tests that prove the same thing two ways (two generators, two errnos of
# one code path).  CI runs the README's tests on both builds, so each half
# runs there once (HACKING.md, the budget); CJC_ALL_HALVES=1 runs both
# halves in any build.  A half left out says where it runs.
half_here() {
	[ -n "${CJC_ALL_HALVES:-}" ] && return 0
	[ "$1" = sanitized ] && [ -n "$SANITIZED" ] && return 0
	[ "$1" = plain ] && [ -z "$SANITIZED" ] && return 0
	echo "${FUNCNAME[1]}: runs in the $1 build (CJC_ALL_HALVES=1 runs it here)"
	return 1
}

# The key-relevant environment and our own settings must not leak in.
unset CJC_DISABLE CJC_READONLY CJC_CONFIG CJC_DEBUG CJC_MAX_SIZE CJC_REMOTE CJC_UMASK CJC_BASE_DIR
unset CJC_PRINT_COMMANDS CJC_KEEP_PTX CJC_KEEP_SASS CJC_CHECK_SPILLS CJC_HASH_DIR CJC_LEASE_WAIT CJC_REMOTE_ONLY CJC_REMOTE_HELPER CJC_WATCHER
unset NVCC_PREPEND_FLAGS NVCC_APPEND_FLAGS NVCC_CCBIN CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH
unset CJC_JIT_NVCC CJC_JIT_COMPILER CJC_JIT_CACHE_DIR CJC_JIT_DEBUG CJC_JIT_WITH_LINEINFO
unset CJC_JIT_CPP_STANDARD CJC_JIT_PRINT_COMPILER_COMMAND CJC_JIT_PTXAS_VERBOSE
unset CJC_JIT_CHECK_NO_SPILLS CJC_JIT_DUMP_PTX CJC_JIT_DUMP_SASS CJC_JIT_PRINT_LOAD_TIME
unset CJC_JIT_DUMP_ASM CJC_JIT_CHECK_NO_LOCAL_MEMORY
# the JIT drivers' paths are not settings: the library would warn of them
export -n CJC_JIT_CLI CJC_JIT_THREADS

# make_nvcc_wrapper PATH [VERSION-SUFFIX]: an nvcc that logs and execs the real one.
make_nvcc_wrapper() {
	cat >"$1" <<WRAP
#!/bin/sh
echo "\$*" >>"\$NVCC_LOG"
case " \$* " in
*" --version "*) "$REAL_NVCC" --version
	${2:+echo "$2"}
	exit 0 ;;
esac
exec "$REAL_NVCC" "\$@"
WRAP
	chmod +x "$1"
}

write_sources() {
	cat >k.h <<'SRC'
#define SCALE 2.0f
SRC
	cat >dev.h <<'SRC'
#define DEVICE_OFFSET 1.0f
SRC
	cat >host.h <<'SRC'
static const int host_value = 1;
SRC
	cat >k.cu <<'SRC'
#include "k.h"
#ifdef __CUDA_ARCH__
#include "dev.h"
#else
#include "host.h"
#endif
__global__ void scale(float *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef __CUDA_ARCH__
	if (i < n)
		a[i] = a[i] * SCALE + DEVICE_OFFSET;
#endif
}
#ifndef __CUDA_ARCH__
int host_side(void) { return host_value; }
#endif
SRC
}

# use_run_dir DIR: the HTTP helpers that compiles start (docs/remote.md)
# keep their sockets under DIR/run, and stop once DIR is removed.
use_run_dir() {
	export XDG_RUNTIME_DIR=$1/run
	mkdir -p -m 700 "$XDG_RUNTIME_DIR"
}

setUp() {
	TEST_DIR=$(mktemp -d "$TMPDIR/cjc-test.XXXXXX")
	use_run_dir "$TEST_DIR"
	unset CJC_BASE_DIR
	export CJC_DIR="$TEST_DIR/cache" CJC_LOG="$TEST_DIR/cjc.log" NVCC_LOG="$TEST_DIR/nvcc.log"
	mkdir -p "$TEST_DIR/bin" "$TEST_DIR/src"
	NVCC="$TEST_DIR/bin/nvcc"
	make_nvcc_wrapper "$NVCC"
	cd "$TEST_DIR/src" || return 1
	write_sources
	# past the kernel's coarse clock tick (10 ms at most) the sources were
	# written in: a miss does not publish files written in the tick it
	# starts in (miss.c), and the first compile of a test must publish
	sleep 0.02
}

tearDown() {
	stop_holder
	cd / && rm -rf "$TEST_DIR"
}

# hold_locks USER OP FILE...: USER (this one, or another when run as root)
# opens each FILE for reading and holds
# flock(OP) (LOCK_SH or LOCK_EX) on it until stop_holder.  Returns once
# every lock is held: the holder says so on a pipe.
hold_locks() {
	local user=$1 op=$2 said= as=()
	shift 2
	[ "$user" = "$(id -un)" ] || as=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups)
	exec {HOLDER_FD}< <(exec "${as[@]}" perl -MFcntl=:flock -e '
			my $op = shift eq "LOCK_SH" ? LOCK_SH : LOCK_EX;
			my @held;
			for my $f (@ARGV) {
				open(my $h, "<", $f) or die "$f: $!\n";
				flock($h, $op) or die "flock $f: $!\n";
				push @held, $h;
			}
			$| = 1;
			print "held\n";
			sleep;' "$op" "$@")
	HOLDER=$!
	read -r -t 60 -u "$HOLDER_FD" said
	assertEquals "$user holds the locks" held "$said"
}

stop_holder() {
	[ -n "${HOLDER:-}" ] || return 0
	kill "$HOLDER" 2>/dev/null
	exec {HOLDER_FD}<&-
	HOLDER=
}

# cjc_nvcc ARGS...: compile through the cache with the counting nvcc.
cjc_nvcc() {
	"$CJC" "$NVCC" "$@"
}

# How many times nvcc ran for something other than --version.
# nvcc_compiles: the compiles the counting nvcc ran; not its --version
# runs, nor a miss's preprocessing (miss.h: cjc_miss_preprocessed_names).
nvcc_compiles() {
	[ -f "$NVCC_LOG" ] || { echo 0; return; }
	grep -av -- '--version' "$NVCC_LOG" | grep -avc -- '-E -o .*preprocessed\.ii$' || true
}

# nvcc_preprocesses: a miss's preprocessing runs of the counting nvcc.
nvcc_preprocesses() {
	[ -f "$NVCC_LOG" ] || { echo 0; return; }
	grep -ac -- '-E -o .*preprocessed\.ii$' "$NVCC_LOG" || true
}

# jit ARGS...: the JIT library's test driver (tests/jit/jit_cli.c; ctest sets
# CJC_JIT_CLI for the suites that use it) with the counting nvcc, or
# $JIT_NVCC; prints "hit KEY" or "miss KEY".
jit() {
	CJC_JIT_NVCC=${JIT_NVCC:-$NVCC} "${CJC_JIT_CLI:?set CJC_JIT_CLI to build/tests/jit_cli}" \
		--arch "$ARCH" "$@"
}

# NVRTC beside nvcc's toolkit or on the loader's path (the NVRTC cases need it).
have_nvrtc() {
	local root
	root=$(dirname "$(dirname "$(readlink -f "$REAL_NVCC")")")
	[ -e "$root/lib64/libnvrtc.so" ] || [ -e "$root/lib/libnvrtc.so" ] ||
		ldconfig -p | grep -q 'libnvrtc\.so '
}

# wait_until CONDITION: polls the shell condition, for a minute at most.
wait_until() {
	local i
	for i in $(seq 600); do
		eval "$1" && return 0
		sleep 0.1
	done
	return 1
}

# gone PID: the process has exited (or there is no PID).  A zombie counts:
# an orphan is reaped by PID 1 when PID 1 gets to it, which some machines'
# never do.
gone() {
	[ -z "$1" ] || [ ! -e "/proc/$1" ] || grep -q ') Z ' "/proc/$1/stat" 2>/dev/null
}

# expect_why PATH TEXT: the first line of `cjc why PATH` contains TEXT.
expect_why() {
	local said
	said=$("$CJC" why "$1" | head -1)
	assertContains "cjc why $1: $said" "$said" "$2"
}

expect_nvcc_runs() {
	assertEquals "nvcc compiles" "$1" "$(nvcc_compiles)"
}

stat_value() {
	"$CJC" stats --json | jq -r --arg name "$1" '.[$name]'
}

expect_stat() {
	assertEquals "counter $1" "$2" "$(stat_value "$1")"
}

# meta_doc FILE...: entries' metadata.json as their documents, whether
# stored compressed or plain (docs/store.md#compression).
meta_doc() {
	zstd -q -d -c -f "$@"
}

# blob_payload FILE...: the payload of each of the store's blobs (a
# manifest, a hash cache), unpacked where it is packed (docs/store.md).
blob_payload() {
	local f
	for f; do
		tail -c +5 "$f" | head -c -4 | zstd -q -d -c -f || return 1
	done
}

# plain_metadata FILE...: rewrites each metadata.json as its plain
# document, as an entry written with compression_level 0 holds it (read
# alike), for a test to edit with sed or jq.  Its directory is made
# writable: the file is replaced.
plain_metadata() {
	local f
	for f; do
		chmod u+w "$(dirname "$f")" &&
			zstd -q -d -c -f "$f" >"$f.plain" && mv -f "$f.plain" "$f" || return 1
	done
}

entry_count() {
	"$CJC" ls --json | grep -c '"key"' || true
}

# The device code of an object: its .nv_fatbin section (__nv_relfatbin for -dc).
devcode() {
	objcopy -O binary --only-section=.nv_fatbin --only-section=__nv_relfatbin "$1" "$1.devcode" &&
		cat "$1.devcode"
}

# assert_same_devcode A B: objects (*.o) by their device code; cubins and
# the other kinds whole (suites whose subject is not the kind compile
# --cubin: a third of the CPU of -c, no host compile).
assert_same_devcode() {
	case $1 in
	*.o) devcode "$1" >/dev/null && devcode "$2" >/dev/null ;;
	*) cp "$1" "$1.devcode" && cp "$2" "$2.devcode" ;;
	esac
	assertTrue "device code of $1 and $2 differ" "cmp -s '$1.devcode' '$2.devcode'"
	assertTrue "$1 has no device code" "[ -s '$1.devcode' ]"
}

# make_barrier_nvcc N: $TEST_DIR/bin/nvcc-barrier, an nvcc that compiles, then
# waits until N have compiled (so N writers collide at publication); the
# wait ends by state, bounded at 60 s should a writer die.
make_barrier_nvcc() {
	mkdir -p "$TEST_DIR/barrier"
	cat >"$TEST_DIR/bin/nvcc-barrier" <<WRAP
#!/bin/sh
"$NVCC" "\$@" || exit
case " \$* " in *" --version "*) exit 0 ;; esac
touch "$TEST_DIR/barrier/\$\$"
i=0
while [ "\$(ls "$TEST_DIR/barrier" | wc -l)" -lt $1 ] && [ \$i -lt 1200 ]; do
	sleep 0.05; i=\$((i + 1))
done
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-barrier"
}

# make_held_nvcc: nvcc-held, an nvcc whose first compile (of the test) says
# so in $TEST_DIR/held (the pid of the cjc that ran it, then its own), then
# blocks until $TEST_DIR/go exists; every other compile runs at once.  Each
# compile is counted, as by the usual wrapper.
make_held_nvcc() {
	cat >"$TEST_DIR/bin/nvcc-held" <<WRAP
#!/bin/sh
case " \$* " in *" --version "*) exec "$NVCC" "\$@" ;; esac
if mkdir "$TEST_DIR/first" 2>/dev/null; then
	"$NVCC" "\$@" || exit
	echo "\$PPID \$\$" >"$TEST_DIR/held.tmp" && mv "$TEST_DIR/held.tmp" "$TEST_DIR/held"
	while [ ! -e "$TEST_DIR/go" ]; do sleep 0.05; done
	exit 0
fi
exec "$NVCC" "\$@"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-held"
}

# wait_for_file FILE / wait_for_lines N PATTERN FILE: a state, not a time
# (the limit only keeps a broken case from hanging the suite).
wait_for_file() {
	local i=0
	while [ ! -e "$1" ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i + 1)); done
	[ -e "$1" ]
}

lines_in() { cat "$2" 2>/dev/null | grep -c -- "$1"; }

wait_for_lines() {
	local i=0
	while [ "$(lines_in "$2" "$3")" -lt "$1" ] && [ $i -lt 6000 ]; do
		sleep 0.05; i=$((i + 1))
	done
	[ "$(lines_in "$2" "$3")" -ge "$1" ]
}

# use_suite_dir NAME: for suites whose cases share one directory and start
# from template stores: SUITE_DIR with the counting nvcc and the sources,
# and setUp/tearDown that keep to it.
use_suite_dir() {
	SUITE_DIR=$(mktemp -d "$TMPDIR/cjc-$1.XXXXXX")
	mkdir -p "$SUITE_DIR/bin" "$SUITE_DIR/src"
	use_run_dir "$SUITE_DIR"
	NVCC="$SUITE_DIR/bin/nvcc"
	make_nvcc_wrapper "$NVCC"
	cd "$SUITE_DIR/src" && write_sources
	setUp() { cd "$SUITE_DIR/src" || return 1; }
	tearDown() { :; }
}

# cmake_at_least VERSION: whether the cmake on PATH is that version or newer
# (CMAKE_VERSION is set to what it is).
cmake_at_least() {
	CMAKE_VERSION=$(cmake --version | sed -n 's/cmake version \([0-9.]*\).*/\1/p')
	[ "$(printf '%s\n%s\n' "$CMAKE_VERSION" "$1" | sort -V | head -1)" = "$1" ]
}

# use_others_dir: for suites that act as another user. The checkout and the
# build tree may be under a directory nobody else can enter (/root is 0700
# on Debian): OTHERS_DIR is a scratch directory every user can enter, made
# here, and OTHERS_CJC a copy of the cjc under test in it. What another
# user must run or read goes under OTHERS_DIR; the suite removes it
# (rm_others_dir) in its oneTimeTearDown.
use_others_dir() {
	OTHERS_DIR=$(mktemp -d /tmp/cjc-others.XXXXXX) && chmod 755 "$OTHERS_DIR" &&
		cp "$CJC" "$OTHERS_DIR/cjc" && chmod 755 "$OTHERS_DIR/cjc" || exit 1
	OTHERS_CJC=$OTHERS_DIR/cjc
}

rm_others_dir() { [ -z "${OTHERS_DIR:-}" ] || rm -rf "$OTHERS_DIR"; }

# Shares (tests/CMakeLists.txt: SUITE:N runs the script N times side by side
# with CJC_SHARD=I/N): shunit2 calls suite() to list the tests; the I-th
# share takes every N-th test function, in name order.  A suite that divides
# its cases itself sets SHARDS_ITSELF=1 (hostile).
suite() {
	[ -z "${CJC_TEST_TIMES:-}" ] || time_each_test
	[ -n "${CJC_SHARD:-}" ] && [ -z "${SHARDS_ITSELF:-}" ] || return 0
	local i=${CJC_SHARD%/*} n=${CJC_SHARD#*/} k=0 t
	for t in $(declare -F | awk '$3 ~ /^test/ { print $3 }'); do
		[ $((k++ % n)) = $((i - 1)) ] && suite_addTest "$t"
	done
}

# CJC_TEST_TIMES=FILE: each test function's wall time is appended to FILE
# ("SECONDS SCRIPT TEST"), for planning the time budget (HACKING.md).
time_each_test() {
	local t
	for t in $(declare -F | awk '$3 ~ /^test/ { print $3 }'); do
		eval "timed_$(declare -f "$t")"
		eval "$t() { local s=\$EPOCHREALTIME; timed_$t; local rc=\$?
			echo \"\$(bc <<<\"\$EPOCHREALTIME - \$s\") ${0##*/} $t\" >>\"\$CJC_TEST_TIMES\"; return \$rc; }"
	done
}
