#!/bin/bash
# The watching helper (docs/store.md#the-watching-helper): once it watches
# a record's files, a hit stats none of its headers; an edit, a link
# switched, a helper killed or stopped, or a socket another user planted
# never serves a wrong hit, and costs at most the stats of today.
. "$(dirname "$0")/helpers.sh"
command -v strace >/dev/null || { echo "strace not found: skipping" >&2; exit 125; }

HEADERS=40

# A kernel that includes HEADERS headers of inc/ (a link to inc1/), each
# defining one value the kernel stores.
oneTimeSetUp() { :; }

write_watched_sources() {
	mkdir -p inc1 inc2
	ln -sfn inc1 inc
	: >k.cu
	for i in $(seq $HEADERS); do
		echo "#define V$i $i.0f" >"inc1/h$i.cuh"
		echo "#define V$i $((i + 100)).0f" >"inc2/h$i.cuh"
		echo "#include \"inc/h$i.cuh\"" >>k.cu
	done
	echo '__global__ void k(float *x) {' >>k.cu
	for i in $(seq $HEADERS); do echo "  x[$i] = V$i;" >>k.cu; done
	echo '}' >>k.cu
}

setUp() {
	TEST_DIR=$(mktemp -d "$TMPDIR/cjc-test.XXXXXX")
	use_run_dir "$TEST_DIR"
	export CJC_DIR="$TEST_DIR/cache" CJC_LOG="$TEST_DIR/cjc.log" NVCC_LOG="$TEST_DIR/nvcc.log"
	mkdir -p "$TEST_DIR/bin" "$TEST_DIR/src"
	NVCC="$TEST_DIR/bin/nvcc"
	make_nvcc_wrapper "$NVCC"
	cd "$TEST_DIR/src" && write_watched_sources
}

tearDown() {
	local pid
	pid=$(helper_pid)
	[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || :
	cd / && rm -rf "$TEST_DIR"
}

# The pid of the last helper started, from the log.
helper_pid() {
	sed -n 's/.*started the watcher (pid \([0-9]*\),.*/\1/p' "$CJC_LOG" 2>/dev/null | tail -1
}

compile() { cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH; }

# The log's lines of the compile whose pid is $1.
lines_of() { grep "\[$1\]" "$CJC_LOG"; }

# Compiles until a compile is one the helper vouched for (it may be
# starting, busy checking a record, or descheduled past its bound), at
# most 30 compiles: a state, not a time.  With "strace", once the helper
# is up, each compile runs under strace -f (which would wait for a helper
# the compile started), its stats in $TEST_DIR/stats.
# traced CMD...: CMD under strace -f, its stats in $TEST_DIR/stats
# (LeakSanitizer cannot run under ptrace: off for a sanitized cjc).
traced() {
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -e trace=newfstatat,statx,stat,lstat -o "$TEST_DIR/stats" "$@"
}

compile_until_vouched() {
	local i pid
	[ "${1:-}" != strace ] || compile_until_vouched || return 1
	for i in $(seq 30); do
		if [ "${1:-}" = strace ]; then
			traced "$CJC" "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH || return 1
			pid=$(head -1 "$TEST_DIR/stats" | cut -d' ' -f1)
		else
			compile || return 1
			pid=$(tail -1 "$CJC_LOG" | sed 's/^[^[]*\[\([0-9]*\)\].*/\1/')
		fi
		lines_of "$pid" | grep -q 'watcher vouched for' && return 0
	done
	return 1
}

# How many stats named a header (by its path, or by its name in its
# directory opened once: filehash.h).
header_stats() { grep -c 'h[0-9]*\.cuh"' "$TEST_DIR/stats" || true; }

plain_cubin() {
	"$REAL_NVCC" --cubin k.cu -o plain.cubin -arch=$ARCH
}

testAHitTheHelperVouchesForStatsNoHeader() {
	compile || fail "miss"
	CJC_WATCHER=false traced "$CJC" "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH || fail "hit by stat"
	local by_stat
	by_stat=$(header_stats)
	assertTrue "a hit by stat stats each of the $HEADERS headers ($by_stat)" \
		"[ $by_stat -ge $HEADERS ]"
	compile_until_vouched strace || fail "the helper never vouched"
	assertEquals "header stats of a vouched hit" 0 "$(header_stats)"
	expect_nvcc_runs 1
	plain_cubin
	assert_same_devcode k.cubin plain.cubin
}

testAnEditedHeaderIsAMissWithTheRightOutput() {
	compile || fail "miss"
	compile_until_vouched || fail "the helper never vouched"
	echo '#define V7 77.0f' >inc1/h7.cuh
	compile || fail "after the edit"
	expect_nvcc_runs 2
	plain_cubin
	assert_same_devcode k.cubin plain.cubin
	compile_until_vouched || fail "the helper never vouched for the new record"
	expect_nvcc_runs 2
}

testALinkSwitchedIsAMissWithTheRightOutput() {
	compile || fail "miss"
	compile_until_vouched || fail "the helper never vouched"
	ln -sfn inc2 inc
	compile || fail "after the switch"
	expect_nvcc_runs 2
	plain_cubin
	assert_same_devcode k.cubin plain.cubin
}

testAKilledHelperCostsSpeedNotCorrectness() {
	compile || fail "miss"
	compile_until_vouched || fail "the helper never vouched"
	local pid
	pid=$(helper_pid)
	kill -9 "$pid"
	wait_until "gone $pid" || fail "the helper lives on"
	echo '#define V3 33.0f' >inc1/h3.cuh
	compile || fail "after the kill"
	expect_nvcc_runs 2
	plain_cubin
	assert_same_devcode k.cubin plain.cubin
	assertNotEquals "a new helper was started" "$pid" "$(helper_pid)"
	compile_until_vouched || fail "the new helper never vouched"
	expect_nvcc_runs 2
}

# A helper that does not answer (stopped: a hung or descheduled one) is
# waited for CJC_WATCHER_WAIT_US, then the compile stats as before.
testAStoppedHelperIsNotWaitedFor() {
	compile || fail "miss"
	compile_until_vouched || fail "the helper never vouched"
	local pid
	pid=$(helper_pid)
	kill -STOP "$pid"
	echo '#define V5 55.0f' >inc1/h5.cuh
	compile || fail "with the helper stopped"
	kill -CONT "$pid"
	assertTrue "not answered in time" "grep -q 'watcher did not answer in time' '$CJC_LOG'"
	expect_nvcc_runs 2
	plain_cubin
	assert_same_devcode k.cubin plain.cubin
}

# The helper keeps nothing open in the file systems it watches: a mount
# that holds a record's headers can be unmounted while the helper lives.
testTheHelperDoesNotHoldAMountBusy() {
	if [ "$(id -u)" != 0 ]; then
		startSkipping
		return
	fi
	mkdir inc3 && cp inc1/* inc3/ && mount --bind inc3 inc1 || fail "bind mount"
	compile || fail "miss"
	compile_until_vouched || fail "the helper never vouched"
	umount inc1
	assertEquals "unmounted while the helper lives" 0 $?
	mountpoint -q inc1 && umount -l inc1
	assertTrue "the helper lives" "kill -0 $(helper_pid)"
}

# A socket at the helper's name whose listener is another user's is not
# used, and the user is told once (once.h).
testASocketAnotherUserMadeIsNotUsed() {
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || [ ! -x /usr/bin/python3 ]; then
		startSkipping
		return
	fi
	id -u cjc-watch-other >/dev/null 2>&1 || useradd -M -N -s /usr/sbin/nologin cjc-watch-other ||
		fail "user"
	compile || fail "miss"
	compile_until_vouched || fail "the helper never vouched"
	local pid name other
	pid=$(helper_pid)
	name=$(sed -n 's/.*started the watcher (pid [0-9]*, \(.*\)\.sock).*/\1/p' "$CJC_LOG" | tail -1)
	kill -9 "$pid"
	wait_until "gone $pid" || fail "the helper lives on"
	other=$(mktemp -d /tmp/cjc-watch-other.XXXXXX) && chmod 777 "$other"
	setpriv --reuid=cjc-watch-other --regid="$(id -g cjc-watch-other)" --init-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1] + "/planted.sock")
s.listen(8)
open(sys.argv[1] + "/ready", "w").close()
while True:
    c, _ = s.accept()
    if c.recv(64):
        open(sys.argv[1] + "/asked", "w").close()
' "$other" &
	local planter=$!
	wait_for_file "$other/ready" || fail "no planted listener"
	mv "$other/planted.sock" "$XDG_RUNTIME_DIR/cudajitcache/$name.sock"
	echo '#define V9 99.0f' >inc1/h9.cuh
	compile 2>first.err || fail "with the planted socket"
	compile 2>second.err || fail "again"
	kill "$planter" 2>/dev/null
	wait "$planter" 2>/dev/null
	assertTrue "told: $(cat first.err)" "grep -q \"watching helper's socket $name.sock .* another user's: not used\" first.err"
	assertFalse "told once: $(cat second.err)" "grep -q 'another user' second.err"
	assertFalse "the planted helper was asked" "[ -e '$other/asked' ]"
	expect_nvcc_runs 2
	plain_cubin
	assert_same_devcode k.cubin plain.cubin
	rm -rf "$other"
}

. "$SHUNIT2"
