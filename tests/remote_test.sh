#!/bin/bash
# remote_test.sh - docs/remote.md: remote stores on real servers (redis-server,
# nginx's WebDAV over http and https, s3rver), started on 127.0.0.1 by this
# suite.  Two local stores stand for two machines: what A compiled, B is
# served with no nvcc run and the same bytes.  Whatever a server holds may be
# damaged, stale, unsigned or absent, and the server may hang, refuse or die:
# each is a miss (and a compile), never a wrong or failed build.

. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/servers.sh"

for tool in redis-server redis-cli nginx openssl curl; do
	command -v $tool >/dev/null || { echo "$tool not found: skipping" >&2; exit 125; }
done
[ -x "$S3RVER" ] || { echo "s3rver not found (scripts/install-deps --tests): skipping" >&2; exit 125; }

# libcurl's connect timeout covers the TLS handshake, which under ASan on a
# busy machine can outlast the 100 ms default: the https cases wait longer.
TLS_TIME='|connect-timeout=10s'

oneTimeSetUp() {
	use_suite_dir remote
	setUp() { case_setup; } # use_suite_dir's own setUp is not enough here
	# the case's helpers stop (one starting now may add a file as rm reads: again)
	tearDown() { rm -rf "$CASE/run" 2>/dev/null || rm -rf "$CASE/run"; }
	start_redis "$SUITE_DIR/redis" || exit 1
	start_nginx "$SUITE_DIR/nginx" || exit 1
	start_s3 "$SUITE_DIR/s3" || exit 1
	start_blackhole "$SUITE_DIR/blackhole" || exit 1
	openssl genpkey -algorithm ed25519 -out "$SUITE_DIR/sign.pem" 2>/dev/null &&
		openssl pkey -in "$SUITE_DIR/sign.pem" -pubout -out "$SUITE_DIR/trusted.pem" &&
		openssl genpkey -algorithm ed25519 -out "$SUITE_DIR/other.pem" 2>/dev/null &&
		openssl pkey -in "$SUITE_DIR/other.pem" -pubout -out "$SUITE_DIR/other.pub" || exit 1
	# The template: what machine A compiled, signed; uploaded where a case needs it.
	CJC_DIR="$SUITE_DIR/template" CJC_SIGN_KEY="$SUITE_DIR/sign.pem" NVCC_LOG=/dev/null \
		"$CJC" "$NVCC" --cubin k.cu -o a.cubin -arch=$ARCH || exit 1
}

oneTimeTearDown() {
	servers_stop_all
	rm_others_dir
	rm -rf "$SUITE_DIR"
}

case_setup() {
	cd "$SUITE_DIR/src" || return 1
	CASE=$(mktemp -d "$SUITE_DIR/case.XXXXXX")
	use_run_dir "$CASE"
	export CJC_LOG="$CASE/cjc.log" NVCC_LOG="$CASE/nvcc.log"
	unset CJC_REMOTE CJC_SIGN_KEY CJC_TRUSTED_KEYS CJC_REMOTE_ONLY
	redis_cli FLUSHALL >/dev/null
	rm -rf "${NGINX_ROOT:?}"/*/v1
}

# on A|B|... CMD...: runs cjc with that machine's local store.
on() {
	local machine=$1
	shift
	CJC_DIR="$CASE/$machine" "$@"
}

# compile_on MACHINE: the suite's compile through the cache on MACHINE.
compile_on() {
	on "$1" "$CJC" "$NVCC" --cubin k.cu -o "$CASE/$1.cubin" -arch=$ARCH 2>"$CASE/$1.err"
}

remote_stat() {
	on "$1" "$CJC" stats --json | jq -r ".$2"
}

# upload_template [URL]: what A compiled, on the server (default: Redis).
upload_template() {
	CJC_REMOTE=${1:-$REDIS_URL} CJC_DIR="$SUITE_DIR/template" "$CJC" remote upload >/dev/null
}

# expect_shared URL: A compiles and publishes to URL; B hits with no nvcc.
expect_shared() {
	export CJC_REMOTE=$1
	compile_on A
	assertEquals "A compiled" 1 "$(nvcc_compiles)"
	compile_on B
	assertEquals "B compiled nothing" 1 "$(nvcc_compiles)"
	assertEquals "B's remote hits" 1 "$(remote_stat B remote_hits)"
	assertEquals "B's hits" 1 "$(remote_stat B hits)"
	assertTrue "B got A's bytes" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	assertTrue "B's store verifies" "on B '$CJC' verify >/dev/null"
}

testRedisSharesBetweenMachines() {
	expect_shared "$REDIS_URL"
	assertEquals "A's bytes written" true "$(on A "$CJC" stats --json | jq '.remote_bytes_written > 0')"
	# a third machine, with the entry on B's disk already counted as B's
	assertEquals "B's store holds the entry" 1 "$(on B "$CJC" ls --json | grep -c '"key"')"
}

# A remote manifest's newest record's entry is fetched while this machine's
# files are matched (remote.c: fetch_ahead).  Where an older record is the
# one that matches here, that fetch is stopped and dropped and the older
# entry served: B reads the manifest and both combined values (each a
# record with its artifact), is served A's bytes, compiles nothing, and
# leaves nothing in staging.
testOlderRecordIsServedWhenTheNewestDoesNotMatch() {
	export CJC_REMOTE=$REDIS_URL
	local header
	header=$(cat k.h)
	compile_on A
	echo '#define SCALE 3.0f' >k.h
	touch -d '1 minute ago' k.h # not written in the tick C's compile starts in
	compile_on C
	assertEquals "two records on the server" 2 "$(redis_cli --scan --pattern 'cjc/*/e/*' | wc -l)"
	printf '%s\n' "$header" >k.h
	touch -d '1 minute ago' k.h
	compile_on B
	assertEquals "A and C compiled, B did not" 2 "$(nvcc_compiles)"
	assertEquals "B's remote hits" 1 "$(remote_stat B remote_hits)"
	assertTrue "B was served A's cubin" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	assertFalse "C's cubin differs" "cmp -s '$CASE/A.cubin' '$CASE/C.cubin'"
	assertEquals "B read the manifest and both combined values" \
		"$(redis_values_size 'cjc/*/[mx]/*')" "$(remote_stat B remote_bytes_read)"
	assertEquals "nothing left in B's staging" "" "$(ls -A "$CASE"/B/v1/*/staging)"
}

# The fetch ahead also seals the entry it staged (written whole and
# fsynced, remote.c: fetch_ahead), so that its fsyncs wait beside the match.
# An fsync that fails there fails that fetch, as a bad artifact would: B
# compiles, its output is right, nothing it began is visible or left in its
# staging, and the failure is in its log.
testSealFailingBesideTheMatchStillBuilds() {
	export CJC_REMOTE=$REDIS_URL
	compile_on A
	CJC_FAULT=fsync:EIO:1 CJC_FAULT_DIR="$CASE/B" CJC_FAULT_PATH='v1/*/staging/s.*' \
		CJC_FAULT_FIRED="$CASE/fired" LD_PRELOAD=$CJC_FAULTINJECT \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		compile_on B || fail "the build broke: $(cat "$CASE/B.err")"
	assertEquals "one staging fsync failed" "fsync 1" "$(cut -d' ' -f1,2 "$CASE/fired")"
	assertEquals "A and B compiled" 2 "$(nvcc_compiles)"
	assertEquals "B's remote hits" 0 "$(remote_stat B remote_hits)"
	assert_same_devcode "$CASE/A.cubin" "$CASE/B.cubin"
	assertTrue "B's entries verify" "on B '$CJC' verify >/dev/null"
	assertEquals "nothing left in B's staging" "" "$(ls -A "$CASE"/B/v1/*/staging)"
	assertTrue "the failure is logged" "grep -q 'cannot stage.*Input/output error' '$CJC_LOG'"
}

# compile_probed MACHINE: compile_on MACHINE with every fsync of a shard
# directory of its store (entries/<kk>/) failing, and noted in
# $CASE/fired.MACHINE (the failure of a directory's fsync is ignored).
compile_probed() {
	CJC_FAULT=fsync:EIO CJC_FAULT_DIR="$CASE/$1" CJC_FAULT_PATH='v1/*/entries/*' \
		CJC_FAULT_FIRED="$CASE/fired.$1" LD_PRELOAD=$CJC_FAULTINJECT \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		compile_on "$1" || fail "the build broke: $(cat "$CASE/$1.err")"
}

# A remote hit's local copy is published by a rename that is not made
# durable (store.h, struct cjc_staging's copy; docs/store.md): a crash
# that loses it costs a fetch.  A's own entry, compiled here, is.
testRemoteCopyIsPublishedWithoutSyncingItsDirectory() {
	export CJC_REMOTE=$REDIS_URL
	compile_probed A
	compile_probed B
	assertEquals "A fsynced the directory of its own entry" fsync "$(cut -d' ' -f1 "$CASE/fired.A" | sort -u)"
	assertFalse "B did not fsync its copy's: $(cat "$CASE/fired.B" 2>/dev/null)" "[ -s '$CASE/fired.B' ]"
	assertEquals "B's remote hits" 1 "$(remote_stat B remote_hits)"
	assertTrue "B was served A's cubin" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	assertEquals "B holds the entry" 1 "$(on B "$CJC" ls --json | jq length)"
	assertTrue "B's entries verify" "on B '$CJC' verify >/dev/null"
}

# What a dropped fetch ahead did is undone (remote.c: struct undo): the
# newest record's combined value is damaged on the server, which marks the
# store failed for the compile that reads it (the fetch ahead always reads
# it), but B matches the older record, so that fetch is dropped and B is
# served the older entry, with no error.
testDamagedNewestEntryDoesNotSpoilTheOneThatMatches() {
	export CJC_REMOTE=$REDIS_URL
	local header key
	header=$(cat k.h)
	compile_on A
	echo '#define SCALE 3.0f' >k.h
	touch -d '1 minute ago' k.h # not written in the tick C's compile starts in
	compile_on C
	assertEquals "two records on the server" 2 "$(redis_cli --scan --pattern 'cjc/*/e/*' | wc -l)"
	printf '%s\n' "$header" >k.h
	touch -d '1 minute ago' k.h
	key=$(redis_cli --scan --pattern "cjc/*/x/$(on C "$CJC" ls --json | jq -r '.[0].key')")
	redis_cli SET "$key" damaged >/dev/null
	assertEquals "C's combined value damaged" damaged "$(redis_cli GET "$key")"
	compile_on B
	assertEquals "A and C compiled, B did not" 2 "$(nvcc_compiles)"
	assertEquals "B's remote hits" 1 "$(remote_stat B remote_hits)"
	assertEquals "B's remote errors" 0 "$(remote_stat B remote_errors)"
	assertTrue "B was served A's cubin" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
}

# redis_values_size PATTERN: the bytes of the values Redis holds under keys
# matching PATTERN.
redis_values_size() {
	local key total=0
	for key in $(redis_cli --scan --pattern "$1"); do
		total=$((total + $(redis_cli STRLEN "$key")))
	done
	echo $total
}

# The JIT library consults and fills the remote stores as cjc does, with
# nvcc and with NVRTC: two machines, one compile each (tests/jit/jit_cli.c).
testJitCompilesOnceForTwoMachines() {
	local compiler out
	: "${CJC_JIT_CLI:?set CJC_JIT_CLI to build/tests/jit_cli}"
	export CJC_REMOTE=$REDIS_URL CJC_SIGN_KEY=$SUITE_DIR/sign.pem CJC_TRUSTED_KEYS=$SUITE_DIR/trusted.pem
	# no #include: NVRTC caches only what reads no file
	printf 'extern "C" __global__ void one(float *a) { a[threadIdx.x] = 1.0f; }\n' >"$CASE/one.cu"
	for compiler in nvcc nvrtc; do
		out=$(CJC_JIT_COMPILER=$compiler CJC_JIT_NVCC=$NVCC on A "$CJC_JIT_CLI" --arch $ARCH \
			--out "$CASE/A.$compiler" "$CASE/one.cu")
		assertEquals "$compiler: A compiled: $out" miss "${out%% *}"
		out=$(CJC_JIT_COMPILER=$compiler CJC_JIT_NVCC=$NVCC on B "$CJC_JIT_CLI" --arch $ARCH \
			--out "$CASE/B.$compiler" "$CASE/one.cu")
		assertEquals "$compiler: B was served: $out" hit "${out%% *}"
		assertTrue "$compiler: the same bytes" "cmp -s '$CASE/A.$compiler' '$CASE/B.$compiler'"
	done
	assertEquals "nvcc ran once, for A" 1 "$(nvcc_compiles)"
	assertEquals "B's remote hits" 2 "$(remote_stat B remote_hits)"
	assertTrue "B's store verifies" "on B '$CJC' verify >/dev/null"
}

# Leases (lease.h): while A compiles a key, B, which misses it too, waits
# for A's lease on the server and is served A's entry: nvcc runs once.
testRedisLeaseMakesTheOtherMachineWait() {
	local TEST_DIR=$CASE
	mkdir -p "$CASE/bin" && make_held_nvcc
	export CJC_REMOTE=$REDIS_URL
	on A "$CJC" "$CASE/bin/nvcc-held" --cubin k.cu -o "$CASE/A.cubin" -arch=$ARCH &
	local a=$!
	wait_for_file "$CASE/held" || fail "A never ran nvcc"
	assertEquals "A holds the lease" 1 "$(redis_cli --raw KEYS 'cjc/*/l/*' | grep -c .)"
	on B "$CJC" "$CASE/bin/nvcc-held" --cubin k.cu -o "$CASE/B.cubin" -arch=$ARCH &
	local b=$!
	wait_for_lines 1 'held by another machine' "$CJC_LOG" || fail "B did not wait"
	touch "$CASE/go"
	wait $a || fail "A failed"
	wait $b || fail "B failed"
	assertEquals "nvcc ran once, for A" 1 "$(nvcc_compiles)"
	assertTrue "B got A's bytes" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	assertEquals "B waited" 1 "$(remote_stat B lease_waits)"
	assertEquals "B's remote hits" 1 "$(remote_stat B remote_hits)"
	assertEquals "A let go of it" 0 "$(redis_cli --raw KEYS 'cjc/*/l/*' | grep -c .)"
}

# A holder that dies leaves its lease on the server, with an expiry (its
# bound: lease_wait, 60 s); another machine waits at most its own bound
# (1 s here), then compiles itself.
testDeadRemoteLeaseHolderCostsABoundedWait() {
	local TEST_DIR=$CASE ttl
	mkdir -p "$CASE/bin" && make_held_nvcc
	export CJC_REMOTE=$REDIS_URL
	on A "$CJC" "$CASE/bin/nvcc-held" --cubin k.cu -o "$CASE/A.cubin" -arch=$ARCH 2>/dev/null &
	local a=$!
	wait_for_file "$CASE/held" || fail "A never ran nvcc"
	kill -KILL "$(cut -d' ' -f1 "$CASE/held")" # cjc itself, mid-compile
	wait $a 2>/dev/null
	kill -KILL "$(cut -d' ' -f2 "$CASE/held")" 2>/dev/null
	ttl=$(redis_cli --raw PTTL "$(redis_cli --raw KEYS 'cjc/*/l/*')")
	assertTrue "the dead holder's lease expires: $ttl ms" "[ $ttl -gt 0 ] && [ $ttl -le 60000 ]"
	CJC_LEASE_WAIT=1s on B "$CJC" "$CASE/bin/nvcc-held" --cubin k.cu -o "$CASE/B.cubin" -arch=$ARCH ||
		fail "B failed"
	assertEquals "B waited, then compiled" 2 "$(nvcc_compiles)"
	assertEquals "B waited its bound" 1 "$(remote_stat B lease_timeouts)"
	assertEquals "B published" 1 "$(redis_cli --raw KEYS 'cjc/*/e/*' | grep -c .)"
}

# A lease server that answers "held" to every lease, and each poll in 0.9 s
# of a 1 s bound, as a hostile or broken one may (issue 36): B's first
# compile waits no longer than its bound (no poll runs past it: two polls,
# 1.8 s, before), and the server is remembered as stalled, so the next
# compile of the build, another process, does not wait on it at all.
testStalledLeaseServerIsNotWaitedOnAgain() {
	local waited log
	FAKE_DELAY=0.9 start_fake "$CASE/fake" redis-held || fail "fake server"
	export CJC_REMOTE="redis://127.0.0.1:$FAKE_PORT|operation-timeout=5s"
	CJC_LEASE_WAIT=1s bounded_compile B
	expect_compiled B $?
	waited=$(sed -n 's/.*waited \([0-9]*\) ms, the bound.*/\1/p' "$CJC_LOG")
	assertTrue "B waited its bound, ${waited:-never}, not longer" "[ -n '$waited' ] && [ $waited -le 1400 ]"
	assertEquals "B's wait ran to its bound" 1 "$(remote_stat B lease_timeouts)"
	assertContains "$(cat "$CJC_LOG")" "not waited on again"
	: >"$CJC_LOG"
	CJC_DIR="$CASE/B" CJC_LEASE_WAIT=1s timeout -s KILL 60 "$CJC" "$NVCC" --cubin -DSECOND k.cu -o "$CASE/B2.cubin" \
		-arch=$ARCH 2>"$CASE/B2.err" || fail "the second compile failed: $(cat "$CASE/B2.err")"
	log=$(cat "$CJC_LOG")
	assertEquals "nvcc ran for both" 2 "$(nvcc_compiles)"
	assertContains "the second was told the lease is held" "$log" "stalled lately: not waiting"
	assertNotContains "and did not wait" "$log" "waiting for its entry"
	assertEquals "B waited once in all" 1 "$(remote_stat B lease_waits)"
	kill_server fake
}

# What a server says is escaped wherever it is shown (SPEC 9): a Redis
# error of ESC sequences, a BEL and a bidi override reaches the terminal
# (as a refused login), the log, debug output and `cjc remote check` as
# \xNN and \u{XXXX} text, never as the bytes themselves.
testServerWordsAreEscapedEverywhere() {
	local f
	start_fake "$CASE/fake" redis-evil || fail "fake server"
	export CJC_REMOTE="redis://127.0.0.1:$FAKE_PORT|operation-timeout=2s"
	CJC_DEBUG=1 bounded_compile B
	expect_compiled B $?
	on B "$CJC" remote check >"$CASE/check.out" 2>&1
	assertContains "the terminal saw the words" "$(cat "$CASE/B.err")" "authentication refused"
	for f in "$CASE/B.err" "$CJC_LOG" "$CASE/check.out"; do
		assertContains "$f: escaped" "$(cat "$f")" '\x1b[2J\x1b]0;owned\x07evil \u{202e}override'
		assertFalse "$f: no ESC, BEL or U+202E" "grep -q $'[\e\a]\\|\xe2\x80\xae' '$f'"
	done
	kill_server fake
}

# An unmodified program's NVRTC compiles through the shim (docs/nvrtc-shim.md),
# a header read through -I among them: compiled on A, served to B from Redis.
testShimCompilesOnceForTwoMachines() {
	: "${CJC_NVRTC_PROG_LINKED:?set CJC_NVRTC_PROG_LINKED to build/tests/nvrtc_prog_linked}"
	export CJC_REMOTE=$REDIS_URL CJC_SIGN_KEY=$SUITE_DIR/sign.pem CJC_TRUSTED_KEYS=$SUITE_DIR/trusted.pem
	mkdir -p "$CASE/inc" "$CASE/A.out" "$CASE/B.out" && echo '#define DISK_VALUE 3' >"$CASE/inc/disk.h"
	(cd "$CASE" && on A "$CJC" run -- "$CJC_NVRTC_PROG_LINKED" linked A.out -I inc template disk) &&
		(cd "$CASE" && on B "$CJC" run -- "$CJC_NVRTC_PROG_LINKED" linked B.out -I inc template disk) ||
		fail "the program failed"
	assertTrue "the same answers: $(diff -r "$CASE/A.out" "$CASE/B.out")" "diff -r '$CASE/A.out' '$CASE/B.out'"
	assertEquals "A compiled both" 2 "$(remote_stat A misses)"
	assertEquals "B compiled neither" 0 "$(remote_stat B misses)"
	assertEquals "B's remote hits" 2 "$(remote_stat B remote_hits)"
}

# A remote hit's requests, counted at a proxy (tests/latency_proxy.py): one
# connection and two round trips, the manifest (AUTH goes out with its
# GETRANGE, in the same write: remote_redis.c), then the entry's combined
# value, its record and its artifact in one (docs/remote.md).  A store that
# an older cjc filled holds no combined value: still a hit, by the record
# and the artifact, one round trip more.
testRedisHitTakesTwoRoundTrips() {
	upload_template
	start_latency_proxy redis_turns "$CASE/proxy" "127.0.0.1:$REDIS_PORT" 0 "$CASE/turns" || fail "no proxy"
	export CJC_REMOTE="redis://:$REDIS_PASSWORD@127.0.0.1:$LATENCY_PORT"
	compile_on B
	assertEquals "B's remote hits" 1 "$(remote_stat B remote_hits)"
	assertEquals "one connection" 1 "$(grep -c '^connect ' "$CASE/turns")"
	assertEquals "round trips: the manifest, the combined value" 2 "$(grep -c '^request ' "$CASE/turns")"
	redis_cli DEL "$(redis_cli --raw KEYS 'cjc/*/x/*')" >/dev/null
	: >"$CASE/turns"
	compile_on C
	kill_server redis_turns
	assertEquals "C's remote hits" 1 "$(remote_stat C remote_hits)"
	assertTrue "C got A's bytes" "cmp -s '$CASE/B.cubin' '$CASE/C.cubin'"
	assertEquals "without: and the record, the artifact" 4 "$(grep -c '^request ' "$CASE/turns")"
}

# The same over HTTP: without the helper, one connection and two round
# trips; through the helper (the default), once it keeps its connection,
# two round trips and no connection.
testHttpHitTakesTwoRoundTrips() {
	upload_template "$NGINX_URL"
	start_latency_proxy http_turns "$CASE/proxy" "127.0.0.1:$NGINX_PORT" 0 "$CASE/turns" || fail "no proxy"
	local url="http://127.0.0.1:$LATENCY_PORT/${NGINX_URL#http://*/}"
	CJC_REMOTE="$url|no-helper" compile_on B
	assertEquals "B's remote hits" 1 "$(remote_stat B remote_hits)"
	assertEquals "one connection" 1 "$(grep -c '^connect ' "$CASE/turns")"
	assertEquals "round trips: the manifest, the combined value" 2 "$(grep -c '^request ' "$CASE/turns")"
	export CJC_REMOTE="$url|connect-timeout=5s"
	compile_on C # asks the server itself, and starts the helper
	wait_for_helper || fail "no helper listens"
	compile_on D # the helper connects
	: >"$CASE/turns"
	CJC_LOG=$CASE/E.log compile_on E
	stop_helpers
	kill_server http_turns
	assertEquals "E's remote hits" 1 "$(remote_stat E remote_hits)"
	assertEquals "E asked the helper" 1 "$(grep -c 'asking the helper' "$CASE/E.log")"
	assertEquals "no connection: the helper's was kept" 0 "$(grep -c '^connect ' "$CASE/turns")"
	assertEquals "round trips: the manifest, the combined value" 2 "$(grep -c '^request ' "$CASE/turns")"
}

# With |helper, a Redis store is asked through the helper, whose connection
# stays open between compiles: once it runs, a hit is two round trips and
# no connection (nor AUTH).  When the server has closed the connections it
# kept (as its idle timeout does), the helper asks again on a new one: still
# a hit, and no error.
testRedisHelperKeepsItsConnection() {
	upload_template
	start_latency_proxy redis_turns "$CASE/proxy" "127.0.0.1:$REDIS_PORT" 0 "$CASE/turns" || fail "no proxy"
	export CJC_REMOTE="redis://:$REDIS_PASSWORD@127.0.0.1:$LATENCY_PORT|helper|connect-timeout=5s"
	compile_on B # asks the server itself, and starts the helper
	wait_for_helper || fail "no helper listens"
	compile_on C # the helper connects
	: >"$CASE/turns"
	CJC_LOG=$CASE/D.log compile_on D
	assertEquals "D's remote hits" 1 "$(remote_stat D remote_hits)"
	assertEquals "D asked the helper" 1 "$(grep -c 'asking the helper' "$CASE/D.log")"
	assertEquals "no connection: the helper's was kept" 0 "$(grep -c '^connect ' "$CASE/turns")"
	assertEquals "round trips: the manifest, the combined value" 2 "$(grep -c '^request ' "$CASE/turns")"
	redis_cli CLIENT KILL TYPE normal >/dev/null
	: >"$CASE/turns"
	compile_on E
	assertEquals "E's remote hits" 1 "$(remote_stat E remote_hits)"
	assertEquals "E's errors" 0 "$(remote_stat E remote_errors)"
	assertEquals "a new connection" 1 "$(grep -c '^connect ' "$CASE/turns")"
	stop_helpers
	kill_server redis_turns
}

testRedisUnixSocket() {
	expect_shared "redis+unix://:$REDIS_PASSWORD@$REDIS_SOCKET"
}

testHttpWebDav() {
	expect_shared "$NGINX_URL"
}

# stored_sha MACHINE: the hash of the stored bytes of the only output in
# MACHINE's store, its address on a server (compressed or not).
stored_sha() {
	meta_doc "$CASE/$1"/v1/*/entries/*/*/metadata.json | jq -r '.files["output.cubin"] | .zstd.sha256 // .sha256'
}

# A server keeps an output as the store does: the zstd frame, by the hash
# of the frame; B fetches that and keeps it so, and is served A's bytes.
testServerKeepsTheCompressedForm() {
	expect_shared "$NGINX_URL"
	local on_server
	on_server=$(echo "$NGINX_ROOT"/*/v1/*/c/"$(stored_sha A)")
	assertTrue "the frame is on the server by its hash" "[ -f '$on_server' ]"
	assertTrue "it is A's stored file" "cmp -s '$on_server' $CASE/A/v1/*/entries/*/*/output.cubin"
	assertTrue "smaller than the output" "[ $(stat -c %s "$on_server") -lt $(stat -c %s "$CASE/A.cubin") ]"
	assertEquals "B keeps the same frame" "$(stored_sha A)" "$(stored_sha B)"
	assertTrue "B's file" "cmp -s '$on_server' $CASE/B/v1/*/entries/*/*/output.cubin"
}

# An entry sent uncompressed (compression_level 0, or a cjc from before
# compression) is served to a machine that compresses, and the other way.
testCompressedAndUncompressedMachinesShare() {
	export CJC_REMOTE=$REDIS_URL
	CJC_COMPRESSION_LEVEL=0 compile_on A
	assertEquals "A's record names no frame" null \
		"$(meta_doc "$CASE"/A/v1/*/entries/*/*/metadata.json | jq '.files["output.cubin"].zstd')"
	compile_on B
	assertEquals "B compiled nothing" 1 "$(nvcc_compiles)"
	assertTrue "B got A's bytes" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	redis_cli FLUSHALL >/dev/null
	compile_on C
	CJC_COMPRESSION_LEVEL=0 compile_on D
	assertEquals "D compiled nothing" 2 "$(nvcc_compiles)"
	assertTrue "D got C's bytes" "cmp -s '$CASE/C.cubin' '$CASE/D.cubin'"
	assertTrue "D's store verifies" "on D '$CJC' verify >/dev/null"
}

# with_user URL [PASSWORD]: the URL with nginx's user and password in it.
with_user() {
	echo "$1" | sed "s#://#://$NGINX_USER:${2:-$NGINX_PASSWORD}@#"
}

testHttpBasicAuth() {
	expect_shared "$(with_user "$NGINX_AUTH_URL")"
}

testHttpsWithCaFile() {
	expect_shared "$(with_user "$NGINX_HTTPS_AUTH_URL")|ca-file=$NGINX_CA$TLS_TIME"
}

testBearerToken() {
	expect_shared "$NGINX_BEARER_URL|bearer-token-file=$NGINX_TOKEN_FILE"
	# an empty token file is the setting's mistake, said; the build goes on
	: >"$CASE/empty-token"
	export CJC_REMOTE="$NGINX_BEARER_URL|bearer-token-file=$CASE/empty-token"
	compile_on C || fail "the build failed"
	assertContains "$(cat "$CASE/C.err")" "bearer-token-file $CASE/empty-token is not one line"
}

testS3() {
	expect_shared "s3://$S3_BUCKET/ci?endpoint=$S3_ENDPOINT&region=$S3_REGION"
	assertTrue "objects under the prefix" "find '$S3_ROOT' -path '*ci/v1/*/c/*' | grep -q ."
}

redis_pong() { [ "$(redis-cli -s "$1" -a "$REDIS_PASSWORD" --no-auth-warning ping)" = PONG ]; }

# The shard (of equal weights) that rendezvous hashing picks for a Redis
# key: it hashes the store's name, the key without Redis's "cjc/".
shard_of() {
	local key=${1#cjc/} shard best= best_hash=
	shift
	for shard; do
		local h
		h=$(printf '%s\0%s\0' "$shard" "$key" | sha256sum | cut -c1-16)
		[[ $h > $best_hash ]] && best=$shard best_hash=$h
	done
	echo "$best"
}

testShardsSpreadKeysOverServers() {
	# a second server, on a unix socket only, with the first one's password
	local second=$CASE/second.sock i
	redis-server --port 0 --unixsocket "$second" --unixsocketperm 700 --save '' --appendonly no \
		--requirepass "$REDIS_PASSWORD" --dir "$CASE" </dev/null >"$CASE/second.log" 2>&1 &
	local pid=$!
	wait_for_server "second redis" $pid "$CASE/second.log" redis_pong "$second" ||
		{ fail "the second server is not ready"; return; }
	# fixed shard names (relative paths): where a key goes depends on it and them alone
	ln -sf "$REDIS_SOCKET" s1.sock && ln -sf "$second" s2.sock
	expect_shared "redis+unix://:$REDIS_PASSWORD@*|shards=s1.sock,s2.sock"
	for i in 1 2 3; do # more keys: 4 manifests, 4 records, artifacts
		on A "$CJC" "$NVCC" --cubin k.cu -o "$CASE/v$i.cubin" -arch=$ARCH -DVARIANT=$i
	done
	rm -f s1.sock s2.sock
	# keys depend on the test's temporary directories, so how many each server holds differs
	# from run to run; where each key is does not: rendezvous hashing puts it
	# on the shard whose SHA-256 of "shard\0name\0" begins highest
	local one two key
	one=$(redis_cli --raw KEYS '*')
	two=$(redis-cli -s "$second" -a "$REDIS_PASSWORD" --no-auth-warning --raw KEYS '*')
	assertTrue "at least nine keys in all: $one $two" "[ $(echo "$one" "$two" | wc -w) -ge 9 ]"
	for key in $one; do
		assertEquals "$key is on its shard" s1.sock "$(shard_of "$key" s1.sock s2.sock)"
	done
	for key in $two; do
		assertEquals "$key is on its shard" s2.sock "$(shard_of "$key" s1.sock s2.sock)"
	done
	kill $pid
	wait $pid 2>/dev/null || : # (redis-server exits 0 on SIGTERM; its status is not the test's)
}

# Every value a hit reads, damaged: the manifest and the combined value;
# then, as in a store an older cjc filled (no combined value), the record
# and the artifact.  A deleted combined value is no damage: the record
# and the artifact serve (testRedisHitTakesTwoRoundTrips).
testEveryDamagedValueIsAMissNeverServed() {
	upload_template
	local keys key how
	keys=$(redis_cli --raw KEYS 'cjc/*')
	assertEquals "manifest, record, combined value, artifact" 4 "$(echo "$keys" | wc -l)"
	export CJC_REMOTE=$REDIS_URL
	for key in $keys; do
		for how in tampered truncated deleted; do
			upload_template
			case $key in
			*/x/*) [ $how != deleted ] || continue ;;
			*/[ec]/*) redis_cli DEL "$(redis_cli --raw KEYS 'cjc/*/x/*')" >/dev/null ;;
			esac
			damage_value "$key" $how
			rm -rf "$CASE/B"
			: >"$NVCC_LOG"
			compile_on B || fail "$how $key: the build failed"
			assertEquals "$how $key: compiled" 1 "$(nvcc_compiles)"
			assertEquals "$how $key: no hit" 0 "$(remote_stat B remote_hits)"
			assert_same_devcode "$SUITE_DIR/src/a.cubin" "$CASE/B.cubin"
			assertTrue "$how $key: store verifies" "on B '$CJC' verify >/dev/null"
			redis_cli FLUSHALL >/dev/null
		done
	done
}

# damage_value KEY tampered|truncated|deleted
damage_value() {
	local value
	case $2 in
	deleted) redis_cli DEL "$1" >/dev/null ;;
	truncated)
		value=$(redis_cli STRLEN "$1")
		redis_cli --raw GETRANGE "$1" 0 $((value / 2 - 1)) | head -c -1 | redis_cli -x SET "$1" >/dev/null ;;
	tampered)
		# same length, other bytes: one byte in the middle flipped
		redis_cli SETRANGE "$1" $(($(redis_cli STRLEN "$1") / 2)) "#" >/dev/null ;;
	esac
}

# An artifact evicted while its record stayed (and the combined value that
# carried it, or one too large to be carried): the next miss replaces the
# record with its own, artifact and all (nvcc's bytes differ from run to
# run), so the entry does not stay a miss for everyone.
testEvictedArtifactIsReplaced() {
	upload_template
	redis_cli DEL "$(redis_cli --raw KEYS 'cjc/*/c/*')" "$(redis_cli --raw KEYS 'cjc/*/x/*')" >/dev/null
	export CJC_REMOTE=$REDIS_URL
	compile_on B
	assertEquals "B compiled" 1 "$(nvcc_compiles)"
	assertEquals "B's artifact is there" 1 "$(redis_cli --raw KEYS 'cjc/*/c/*' | grep -c .)"
	assertEquals "and its combined value" 1 "$(redis_cli --raw KEYS 'cjc/*/x/*' | grep -c .)"
	compile_on C
	assertEquals "C hit" 1 "$(remote_stat C remote_hits)"
	assertEquals "C compiled nothing" 1 "$(nvcc_compiles)"
}

# While nvcc runs, cjc holds no connection: a server's idle timeout cannot
# cut it, and compiling runners do not use up the server's clients.
testNoConnectionIsHeldWhileNvccRuns() {
	cat >"$CASE/nvcc" <<WRAP
#!/bin/sh
case " \$* " in *" --version "*) ;; *)
	redis-cli -p $REDIS_PORT -a $REDIS_PASSWORD --no-auth-warning CLIENT LIST >>"$CASE/clients" ;;
esac
exec "$NVCC" "\$@"
WRAP
	chmod +x "$CASE/nvcc"
	export CJC_REMOTE=$REDIS_URL
	on A "$CJC" "$CASE/nvcc" --cubin k.cu -o "$CASE/A.cubin" -arch=$ARCH || fail "the build failed"
	assertEquals "only the wrapper's own connection" 1 "$(grep -c 'cmd=client' "$CASE/clients")"
	assertEquals "no other" 1 "$(grep -c . "$CASE/clients")"
	assertEquals "and the miss was published after" 1 "$(redis_cli --raw KEYS 'cjc/*/e/*' | grep -c .)"
}

testServerThatNeverAnswersCostsOneTimeout() {
	export CJC_REMOTE="redis://127.0.0.1:$BLACKHOLE_PORT|operation-timeout=300ms"
	compile_on A || fail "the build failed"
	assertEquals "compiled" 1 "$(nvcc_compiles)"
	assertEquals "one timeout, not one per request" 1 "$(remote_stat A remote_timeouts)"
	assertEquals "no error besides" 0 "$(remote_stat A remote_errors)"
	assertEquals "published locally" 1 "$(on A "$CJC" ls --json | grep -c '"key"')"
	export CJC_REMOTE="http://127.0.0.1:$BLACKHOLE_PORT/cache|operation-timeout=300ms"
	compile_on C || fail "the build failed"
	assertEquals "one http timeout" 1 "$(remote_stat C remote_timeouts)"
}

# A server that dies in the middle of a value: it promises 100000 bytes,
# sends 10 and closes.
testServerDyingMidTransferIsAnError() {
	printf '$100000\r\n0123456789' >"$CASE/redis-reply"
	printf 'HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n0123456789' >"$CASE/http-reply"
	local kind
	for kind in redis http; do
		start_partial "$CASE/$kind-partial" "$CASE/$kind-reply" || fail "partial server"
		if [ $kind = redis ]; then
			export CJC_REMOTE="redis://127.0.0.1:$PARTIAL_PORT"
		else
			export CJC_REMOTE="http://127.0.0.1:$PARTIAL_PORT/cache"
		fi
		compile_on $kind || fail "$kind: the build failed"
		assertEquals "$kind: an error" 1 "$(remote_stat $kind remote_errors)"
		assertEquals "$kind: no hit" 0 "$(remote_stat $kind remote_hits)"
		assert_same_devcode "$SUITE_DIR/src/a.cubin" "$CASE/$kind.cubin"
		kill_server partial
	done
}

# --- Hostile servers (tests/fake_remote.py) ----------------------------------
# Whatever a store claims or however slowly it answers, a compile spends at
# most one operation-timeout on it, allocates no more than a value's bound,
# and the build goes on with nvcc.

# The address-space limit is for the plain build: AddressSanitizer reserves
# terabytes of shadow memory up front.
MEMORY=3000000
grep -q 'CJC_SANITIZE:BOOL=ON' "${CJC_BUILD_DIR:-/nonexistent}/CMakeCache.txt" 2>/dev/null && MEMORY=unlimited

# bounded_compile MACHINE: compile_on under the address-space limit, and a
# generous bound (60 s) should cjc hang.
bounded_compile() {
	(ulimit -v $MEMORY && CJC_DIR="$CASE/$1" exec timeout -s KILL 60 \
		"$CJC" "$NVCC" --cubin k.cu -o "$CASE/$1.cubin" -arch=$ARCH) 2>"$CASE/$1.err"
}

# expect_compiled MACHINE STATUS: the build succeeded with nvcc's device code.
expect_compiled() {
	assertEquals "$1: the build's status ($(tail -2 "$CASE/$1.err"))" 0 "$2"
	assertEquals "$1: compiled" 1 "$(nvcc_compiles)"
	assert_same_devcode "$SUITE_DIR/src/a.cubin" "$CASE/$1.cubin"
}

# What the fake server saw, all connections together (it counts; no clock
# of ours is read, so a busy machine cannot fail these): the bytes it sent,
# and the HTTP requests it answered.
fake_sent() {
	awk '{ n += $1 } END { print n + 0 }' "$CASE/fake/port.sent"
}

fake_requests() {
	cat "$CASE/fake/port.requests" 2>/dev/null | wc -l
}

# compile_against_fake MODE URL COUNTER [ROOT]: B compiles with the fake
# server in MODE as its store (URL, PORT standing for its port): the build
# succeeds with nvcc's device code, and the store counts one of COUNTER.
compile_against_fake() {
	start_fake "$CASE/fake" "$1" ${4:+"$4"} || fail "fake server"
	export CJC_REMOTE=${2//PORT/$FAKE_PORT}
	bounded_compile B
	expect_compiled B $?
	assertEquals "one of $3" 1 "$(remote_stat B "$3")"
	# the server counts what it sent once its next write fails: a dripping
	# one, up to two of its seconds after B hung up
	wait_for_lines 1 . "$CASE/fake/port.sent" || fail "the server counted nothing"
	kill_server fake
}

# An HTTP store whose record says each artifact is 8 GB, and streams zeros
# for it: not fetched (a remote artifact is at most 1 GiB), nothing
# allocated for it, one error.  The default operation-timeout, 10 s, would
# be time enough to fill memory.
testHugeHttpArtifactIsNotFetched() {
	upload_template "$NGINX_URL"
	compile_against_fake http-huge "http://127.0.0.1:PORT/cache" remote_errors "$NGINX_ROOT"
	assertContains "$(cat "$CJC_LOG")" "larger than a remote artifact may be"
	assertTrue "the server sent $(fake_sent) bytes" "[ $(fake_sent) -lt $((1 << 20)) ]"
}

# An HTTP store whose record swaps each compressed artifact for a frame
# that hashes as the record says but inflates to other bytes (SPEC 4.1:
# integrity covers both): not published, one error, compiled here.
testSwappedCompressedArtifactIsNotPublished() {
	upload_template "$NGINX_URL"
	compile_against_fake http-swapped "http://127.0.0.1:PORT/cache" remote_errors "$NGINX_ROOT"
	assertContains "$(cat "$CJC_LOG")" "inflates to other bytes"
	assertEquals "no remote hit" 0 "$(remote_stat B remote_hits)"
	assertTrue "B's store verifies" "on B '$CJC' verify >/dev/null"
}

# An artifact that the combined value does not carry (one past its bound
# of 1 MiB inline) is fetched by its hash: still a hit, a round trip more.
testArtifactNotCarriedIsFetchedByItsHash() {
	upload_template "$NGINX_URL"
	strip_inline "$(echo "$NGINX_ROOT"/*/v1/*/x/*)" || fail "no combined value carrying an artifact"
	start_latency_proxy http_turns "$CASE/proxy" "127.0.0.1:$NGINX_PORT" 0 "$CASE/turns" || fail "no proxy"
	CJC_REMOTE="http://127.0.0.1:$LATENCY_PORT/${NGINX_URL#http://*/}|no-helper" compile_on B
	kill_server http_turns
	assertEquals "B's remote hits" 1 "$(remote_stat B remote_hits)"
	assertTrue "B got A's bytes" "cmp -s '$SUITE_DIR/src/a.cubin' '$CASE/B.cubin'"
	assertEquals "round trips: the manifest, the combined value, the artifact" 3 \
		"$(grep -c '^request ' "$CASE/turns")"
}

# A combined value (docs/remote.md) that carries other bytes than its
# record names for the artifact, and is otherwise whole (its CRC-32 made
# right again, as a hostile server would): bad data, so a miss; none of
# it is published here, and the build gets nvcc's output.
testCombinedValueWithOtherArtifactBytesIsAMiss() {
	upload_template "$NGINX_URL"
	flip_inline_bit "$(echo "$NGINX_ROOT"/*/v1/*/x/*)" || fail "no combined value carrying an artifact"
	export CJC_REMOTE="$NGINX_URL|no-helper"
	compile_on B || fail "the build failed"
	assertEquals "B compiled" 1 "$(nvcc_compiles)"
	assertEquals "no remote hit" 0 "$(remote_stat B remote_hits)"
	assertEquals "one error" 1 "$(remote_stat B remote_errors)"
	assertContains "$(cat "$CJC_LOG")" "bad artifact"
	assert_same_devcode "$SUITE_DIR/src/a.cubin" "$CASE/B.cubin"
	assertEquals "B holds one entry, its own" 1 "$(on B "$CJC" ls --json | jq length)"
	assertTrue "B's store verifies" "on B '$CJC' verify >/dev/null"
}

# flip_inline_bit FILE: a bit of the first artifact that the combined value
# FILE carries flipped (layout.h), and its CRC-32 made right again.
flip_inline_bit() { edit_combined "$1" flip; }
# strip_inline FILE: the combined value FILE made to carry no artifact.
strip_inline() { edit_combined "$1" strip; }

edit_combined() {
	python3 - "$1" "$2" <<'PY'
import struct, sys, zlib
path, how = sys.argv[1:]
b = bytearray(open(path, "rb").read())
at = 8 + struct.unpack_from("<I", b, 4)[0]
count, = struct.unpack_from("<I", b, at)
n, = struct.unpack_from("<I", b, at + 4 + 64)
if b[:4] != b"CJCX" or count < 1 or n < 1:
    sys.exit(1)
if how == "flip":
    b[at + 4 + 64 + 4 + n // 2] ^= 1
else:
    b[at:-4] = struct.pack("<I", 0)
b[-4:] = struct.pack("<I", zlib.crc32(bytes(b[:-4])))
open(path, "wb").write(b)
PY
}

# The same servers through a helper (the compile that starts one asks the
# server itself): a value cut short, and a server that never answers, are
# one error and one timeout of the compile that asked the helper, which
# compiles; the helper survives both.
testServerFailingThroughTheHelper() {
	printf 'HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n0123456789' >"$CASE/http-reply"
	start_partial "$CASE/partial" "$CASE/http-reply" || fail "partial server"
	local url
	for url in "http://127.0.0.1:$PARTIAL_PORT/cache" \
		"http://127.0.0.1:$BLACKHOLE_PORT/cache|operation-timeout=2s"; do
		export CJC_REMOTE="$url|helper-idle=60s|connect-timeout=5s"
		rm -rf "$CASE/A" "$CASE/B" && : >"$CJC_LOG" && : >"$CASE/B.log"
		compile_on A || fail "A's build failed"
		wait_for_helper || fail "no helper listens"
		CJC_LOG=$CASE/B.log compile_on B || fail "B's build failed"
		assertEquals "B asked the helper" 1 "$(grep -c 'asking the helper' "$CASE/B.log")"
		assertEquals "one error or timeout" 1 \
			"$(($(remote_stat B remote_errors) + $(remote_stat B remote_timeouts)))"
		assertEquals "no hit" 0 "$(remote_stat B remote_hits)"
		assert_same_devcode "$SUITE_DIR/src/a.cubin" "$CASE/B.cubin"
		assertFalse "the helper lives" "gone '$(helper_pids | tail -1)'"
		stop_helpers
	done
	assertEquals "a timeout among them" 1 "$(remote_stat B remote_timeouts)"
	kill_server partial
}

# A Redis server answering "$8000000000" and zeros: refused by the length
# prefix, so hardly any of it is read.
testHugeRedisReplyIsRefusedByItsLength() {
	compile_against_fake redis-huge "redis://127.0.0.1:PORT|operation-timeout=2s" remote_errors
	assertTrue "the server sent $(fake_sent) bytes" "[ $(fake_sent) -lt $((256 << 20)) ]"
}

# A value is read straight into its buffer once its length line came
# (remote_redis.c): a value that does not end in "\r\n", or a connection
# closed before all of it came, is an error, and the compile goes on.
testRedisValueWithABadEndIsAnError() {
	compile_against_fake redis-badend "redis://127.0.0.1:PORT|operation-timeout=2s" remote_errors
	assertContains "$(cat "$CJC_LOG")" "a malformed reply"
}

testRedisValueCutShortIsAnError() {
	compile_against_fake redis-cut "redis://127.0.0.1:PORT|operation-timeout=2s" remote_errors
	assertContains "$(cat "$CJC_LOG")" "connection lost"
}

# A Redis server dripping its reply a byte a second: cut at the deadline,
# one second, so it gets out a few bytes (the last into a closed
# connection; 10 leaves room for a client descheduled on a busy machine),
# where hiredis alone waits for every byte of the reply, over a minute.
testDrippingServerIsCutAtTheDeadline() {
	compile_against_fake redis-drip "redis://127.0.0.1:PORT|operation-timeout=1s" remote_timeouts
	assertTrue "the server dripped $(fake_sent) bytes" "[ $(fake_sent) -le 10 ]"
}

# An HTTP server answering each request in 0.9 s of a 1 s timeout: all the
# requests of a compile (lookup, then publication) share that one second,
# so the second request times out instead of each taking 0.9 s: two
# requests at most reach the server (seven, each with its own timeout,
# before).
testSlowServerCostsOneTimeoutPerCompile() {
	FAKE_DELAY=0.9 compile_against_fake http-slow "http://127.0.0.1:PORT/cache|operation-timeout=1s" \
		remote_timeouts
	assertTrue "the server answered $(fake_requests) requests" "[ $(fake_requests) -le 2 ]"
}

# A server that probes this machine's files (issue 22, item 9): its forged
# manifest names a file outside the project as a dependency, with the size
# and SHA-256 it guesses, and a name beside it as absent, under the entry
# key the client computes for them; a client that matched it would ask for
# that key's record.  With trusted_keys, an unsigned manifest is a miss
# and nothing it names is looked at: the manifest is the only request, and
# the file is nowhere in the store (no hash of it remembered).
testUnsignedManifestProbesNoFile() {
	echo "a secret" >"$CASE/secret"
	FAKE_SECRET=$CASE/secret start_fake "$CASE/fake" http-oracle || fail "fake server"
	export CJC_REMOTE="http://127.0.0.1:$FAKE_PORT/cache|read-only"
	export CJC_TRUSTED_KEYS="$SUITE_DIR/trusted.pem"
	on B "$CJC" "$NVCC" --cubin k.cu -o "$CASE/B.cubin" -arch=$ARCH 2>"$CASE/B.err"
	assertEquals "the build's status ($(tail -2 "$CASE/B.err"))" 0 $?
	kill_server fake
	local requests=$CASE/fake/port.requests
	assertEquals "compiled" 1 "$(nvcc_compiles)"
	assertTrue "a forged manifest was served" "[ -s '$CASE/fake/port.forged' ]"
	assertEquals "one request: $(cat "$requests")" 1 "$(grep -c . "$requests")"
	assertTrue "for the manifest" "grep -q '^GET /cache/v1/[^/]*/m/' '$requests'"
	assertFalse "none for the forged record's key" "grep -qFf '$CASE/fake/port.forged' '$requests'"
	assertFalse "the file is nowhere in the store" "grep -rqF '$CASE/secret' '$CASE/B'"
	assertEquals "the manifest counted untrusted" 1 "$(remote_stat B untrusted)"
}

testRefusedConnectionIsAnErrorAndTheBuildGoesOn() {
	export CJC_REMOTE="redis://127.0.0.1:1 http://127.0.0.1:1/cache"
	compile_on A || fail "the build failed"
	assertEquals "two stores, one error each" 2 "$(remote_stat A remote_errors)"
	assertEquals "counted per store" 2 "$(on A "$CJC" stats --json | jq '.remotes | length')"
}

testWrongPasswordIsOneClearMessage() {
	export CJC_REMOTE="redis://:wrong@127.0.0.1:$REDIS_PORT"
	compile_on A || fail "the build failed"
	assertEquals "one message" 1 "$(grep -c 'CJC_REMOTE' "$CASE/A.err")"
	assertContains "$(cat "$CASE/A.err")" "authentication refused"
	assertNotContains "no password shown" "$(cat "$CASE/A.err")" wrong
	assertEquals "an error" 1 "$(remote_stat A remote_errors)"
	CJC_REMOTE=$(with_user "$NGINX_AUTH_URL" wrong)
	compile_on C || fail "the build failed"
	assertContains "$(cat "$CASE/C.err")" "authentication refused (HTTP 401)"
}

testMalformedUrlNamesTheSettingAndCompiles() {
	local bad n=0
	for bad in "redis://:secret@127.0.0.1:$REDIS_PORT|shards" \
		"redis://:secret@127.0.0.1:$REDIS_PORT|operation-timeout=0" \
		"redis://:secret@127.0.0.1:$REDIS_PORT|helpers" "$NGINX_URL|helper-idle=0"; do
		export CJC_REMOTE=$bad
		# a build of its own: the same words are said once per build
		use_run_dir "$CASE/run-$((++n))"
		compile_on A || fail "the build failed"
		assertContains "$bad" "$(cat "$CASE/A.err")" "CJC_REMOTE"
		assertNotContains "$bad" "$(cat "$CASE/A.err")" "secret"
	done
	assertEquals "the remote stores off, the local store goes on: one miss, then hits" 1 "$(nvcc_compiles)"
	# no-helper is no news to a Redis store: taken, not malformed
	CJC_REMOTE="$REDIS_URL|no-helper" compile_on B || fail "the build failed"
	assertEquals "B: cached" 1 "$(on B "$CJC" ls --json | grep -c '"key"')"
}

# An entry of several artifacts (the object and nvcc's warnings) travels
# whole: every artifact before the record that names them.
testEveryArtifactOfAnEntryIsSent() {
	printf '#warning "a warning to replay"\n__global__ void w(int *p) { *p = 2; }\n' >warn.cu
	export CJC_REMOTE=$REDIS_URL
	on A "$CJC" "$NVCC" --cubin warn.cu -o "$CASE/A.cubin" -arch=$ARCH 2>"$CASE/A.err" || fail "A"
	assertContains "$(cat "$CASE/A.err")" "a warning to replay"
	assertEquals "two artifacts on the server" 2 "$(redis_cli --raw KEYS 'cjc/*/c/*' | grep -c .)"
	on B "$CJC" "$NVCC" --cubin warn.cu -o "$CASE/B.cubin" -arch=$ARCH 2>"$CASE/B.err" || fail "B"
	assertEquals "B hit" 1 "$(remote_stat B remote_hits)"
	assertContains "the warning replayed" "$(cat "$CASE/B.err")" "a warning to replay"
	rm -f warn.cu
}

# A password may hold '/', ':' and '@': the user info runs to the last '@',
# for the connection and for what is shown.
testPasswordWithSlashesAndAts() {
	local odd='s/e:c@r/t'
	redis_cli CONFIG SET requirepass "$odd" >/dev/null
	export CJC_REMOTE="redis://:$odd@127.0.0.1:$REDIS_PORT"
	compile_on A
	compile_on B
	on A "$CJC" config >"$CASE/config.txt"
	redis-cli -p "$REDIS_PORT" -a "$odd" --no-auth-warning CONFIG SET requirepass "$REDIS_PASSWORD" >/dev/null
	assertEquals "B hit" 1 "$(remote_stat B remote_hits)"
	assertFalse "no part of it shown" "grep -q 'e:c\|r/t' '$CASE/config.txt' '$CASE/A.err' '$CASE/B.err' '$CJC_LOG'"
	assertTrue "shown as ***" "grep -q 'redis://\*\*\*@127.0.0.1' '$CASE/config.txt'"
}

testFullServerIsAnErrorAndTheBuildGoesOn() {
	redis_limit_memory 1mb
	head -c 200000 /dev/zero | redis_cli -x SET filler >/dev/null || true
	export CJC_REMOTE=$REDIS_URL
	compile_on A || fail "the build failed"
	assertEquals "refused write counted" 1 "$(remote_stat A remote_errors)"
	assertEquals "published locally" 1 "$(on A "$CJC" ls --json | grep -c '"key"')"
	redis_cli CONFIG SET maxmemory 0 >/dev/null
}

testReadOnlyStoreIsNeverWritten() {
	export CJC_REMOTE="$REDIS_URL|read-only"
	compile_on A
	assertEquals "nothing written" 0 "$(redis_cli DBSIZE)"
	upload_template
	compile_on B
	assertEquals "but read" 1 "$(remote_stat B remote_hits)"
}

# keeps_nothing MACHINE: no entry, manifest or staging in its local store.
keeps_nothing() {
	assertEquals "$1 keeps no entry, manifest or staging" 0 \
		"$(find "$CASE/$1"/v1/*/entries "$CASE/$1"/v1/*/manifests "$CASE/$1"/v1/*/staging -mindepth 1 | wc -l)"
}

# remote_only: a miss is uploaded and a remote hit served with nothing kept
# in the local store; what the server holds is checked as always, and a
# damaged value is a miss there too.
testRemoteOnlyKeepsNoEntryHere() {
	export CJC_REMOTE=$REDIS_URL CJC_REMOTE_ONLY=1
	compile_on A
	assertEquals "A compiled" 1 "$(nvcc_compiles)"
	# (KEYS, not DBSIZE: A's released lease, cut to expire in 1 ms, may be
	# counted by DBSIZE until the server reclaims it)
	assertEquals "manifest, record, combined value, artifact sent" 4 \
		"$(redis_cli --raw KEYS 'cjc/*/[mecx]/*' | grep -c .)"
	assertEquals "A's miss is no error" 0 "$(remote_stat A errors)"
	keeps_nothing A
	compile_on B
	assertEquals "B compiled nothing" 1 "$(nvcc_compiles)"
	assertEquals "B's remote hit" 1 "$(remote_stat B remote_hits)"
	assertTrue "B got A's bytes" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	keeps_nothing B
	damage_value "$(redis_cli --raw KEYS 'cjc/*/x/*')" tampered
	compile_on C || fail "the build failed"
	assertEquals "C compiled" 2 "$(nvcc_compiles)"
	assertEquals "no hit for C" 0 "$(remote_stat C hits)"
	assert_same_devcode "$SUITE_DIR/src/a.cubin" "$CASE/C.cubin"
	keeps_nothing C
	CJC_TRUSTED_KEYS="$SUITE_DIR/trusted.pem" compile_on D
	assertEquals "D: an unsigned entry is untrusted" 1 "$(remote_stat D untrusted)"
	keeps_nothing D
}

testUntrustedEntriesAreMisses() {
	CJC_SIGN_KEY="$SUITE_DIR/sign.pem" upload_template # entry and manifest signed by sign.pem
	export CJC_REMOTE=$REDIS_URL CJC_TRUSTED_KEYS="$SUITE_DIR/other.pub"
	compile_on B
	assertEquals "compiled" 1 "$(nvcc_compiles)"
	assertEquals "untrusted" 1 "$(remote_stat B untrusted)"
	assertEquals "no remote hit" 0 "$(remote_stat B remote_hits)"
	export CJC_TRUSTED_KEYS="$SUITE_DIR/trusted.pem"
	compile_on C
	assertEquals "a trusted key's entry is served" 1 "$(remote_stat C remote_hits)"
	assertEquals "still one compile" 1 "$(nvcc_compiles)"
	assertTrue "verify checks the signature" "on C '$CJC' verify | grep -q '1 by a trusted key'"
}

testUnsignedEntryIsUntrustedWhereKeysAreSet() {
	export CJC_REMOTE=$REDIS_URL
	compile_on A # no sign_key
	export CJC_TRUSTED_KEYS="$SUITE_DIR/trusted.pem"
	compile_on B
	assertEquals "untrusted" 1 "$(remote_stat B untrusted)"
	assertEquals "compiled twice" 2 "$(nvcc_compiles)"
}

# A sign_key that cannot sign (here a public key): said once, the entry is
# published unsigned, the build goes on.
testKeyThatCannotSignPublishesUnsigned() {
	export CJC_SIGN_KEY="$SUITE_DIR/trusted.pem"
	compile_on A || fail "the build failed"
	assertEquals "one message" 1 "$(grep -c 'sign_key (CJC_SIGN_KEY)' "$CASE/A.err")"
	assertEquals "published" 1 "$(on A "$CJC" ls --json | grep -c '"key"')"
	assertEquals "unsigned" 0 "$(find "$CASE"/A/v1/*/entries -name metadata.sig | wc -l)"
}

testForgedSignatureIsDamageToVerify() {
	export CJC_REMOTE=$REDIS_URL CJC_TRUSTED_KEYS="$SUITE_DIR/trusted.pem"
	CJC_SIGN_KEY="$SUITE_DIR/sign.pem" upload_template
	compile_on B
	local sig
	sig=$(echo "$CASE"/B/v1/*/entries/*/*/metadata.sig)
	chmod u+w "$(dirname "$sig")" "$sig"
	# the signature's last hex digit changed: still well formed, now false
	local last
	last=$(tail -c 2 "$sig" | head -c 1)
	sed -i "s/.\$/$([ "$last" = 0 ] && echo 1 || echo 0)/" "$sig"
	assertFalse "verify fails" "on B '$CJC' verify >/dev/null"
}

testSecretsAppearNowhere() {
	export CJC_REMOTE="$REDIS_URL $NGINX_BEARER_URL|bearer-token-file=$NGINX_TOKEN_FILE"
	export CJC_SIGN_KEY="$SUITE_DIR/sign.pem" CJC_DEBUG=1
	compile_on A 2>>"$CASE/A.err"
	# A, with no trusted_keys, signed its manifest with its own key: B, who
	# trusts that key, is served through it
	CJC_TRUSTED_KEYS="$SUITE_DIR/trusted.pem" compile_on B 2>>"$CASE/B.err"
	assertEquals "B hit through A's signed manifest" 1 "$(remote_stat B remote_hits)"
	on A "$CJC" config >"$CASE/config.txt"
	on A "$CJC" config --json >>"$CASE/config.txt"
	on A "$CJC" stats >>"$CASE/config.txt"
	on A "$CJC" stats --format=openmetrics >>"$CASE/config.txt"
	on A "$CJC" report >>"$CASE/config.txt" && on A "$CJC" report --markdown >>"$CASE/config.txt" ||
		fail "the report"
	local pid secret
	pid=$(helper_pids | head -1) # the nginx store's, started by A
	assertTrue "a helper served the bearer store" "[ -r /proc/$pid/environ ]"
	cat /proc/$pid/environ /proc/$pid/cmdline >"$CASE/helper.txt"
	for secret in "$REDIS_PASSWORD" "$NGINX_TOKEN" "$(sed -n 2p "$SUITE_DIR/sign.pem")"; do
		assertFalse "a secret in the store or output" \
			"grep -rqF -- '$secret' '$CASE/A' '$CASE/B' '$CASE/config.txt' '$CASE/A.err' '$CASE/B.err' '$CJC_LOG' '$CASE/helper.txt'"
	done
	assertTrue "the store holds a journal and metadata (searched)" \
		"ls '$CASE'/A/v1/*/journal-* '$CASE'/A/v1/*/entries/*/*/metadata.json >/dev/null"
	stop_helpers
	unset CJC_DEBUG
}

# copies_in_memory PID TEXT: how many copies of TEXT the memory of process
# PID holds (read from /proc/PID/mem, as root: what a core dump of it would
# hold), each shown on stderr with what is around it.
copies_in_memory() {
	python3 - "$@" <<'PY'
import re, sys
pid, text, n = sys.argv[1], sys.argv[2].encode(), 0
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for f in (line.split() for line in maps):
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if hi - lo > 1 << 32:  # ASan's shadow (terabytes, never touched): no data of ours
            continue
        try:
            mem.seek(lo)
            data = mem.read(hi - lo) if f[1][0] == "r" else b""
        except (OSError, OverflowError, MemoryError):  # [vvar], [vsyscall]
            continue
        for m in re.finditer(re.escape(text), data):
            n += 1
            print(f[-1], data[max(0, m.start() - 48):m.end() + 8], file=sys.stderr)
print(n)
PY
}

# Issue 53: a bearer token leaves no copy in cjc's memory once the compile
# that sent an entry with it (A, a miss) or fetched one with it (B, a hit)
# is done: read as the process exits, after its own exit handlers
# (faultinject.c's exit:STOP).  What is searched is the token's second
# half, which a block freed unwiped keeps (malloc writes its own pointers
# over the first 16 bytes).  libcurl's copies (in the requests it built)
# count too: its frees wipe (curl.h).  The path of the token's file, in
# CJC_REMOTE, is found: the search sees the memory.
testABearerTokenLeavesNoCopyInMemory() {
	[ "$(id -u)" = 0 ] || startSkipping # another process's memory (Yama): root reads it, as CI runs
	export CJC_REMOTE="$NGINX_BEARER_URL|bearer-token-file=$NGINX_TOKEN_FILE|no-helper"
	local m pid reached copies stops=$CASE/stops
	for m in A B; do
		rm -f "$stops" && mkfifo "$stops" || fail "the pipe"
		CJC_FAULT=exit:STOP CJC_FAULT_DIR=$CASE/$m CJC_FAULT_STOPPED=3 LD_PRELOAD=$CJC_FAULTINJECT \
			ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
			env -u NGINX_TOKEN CJC_DIR="$CASE/$m" "$CJC" "$NVCC" --cubin k.cu -o "$CASE/$m.cubin" \
			-arch=$ARCH 3>"$stops" 2>"$CASE/$m.err" &
		pid=$!
		read -r -t 600 reached <"$stops"
		assertEquals "$m stopped as it exits" "exit 0" "$reached"
		copies=$(copies_in_memory "$pid" "${NGINX_TOKEN:16}" 2>"$CASE/$m.copies")
		assertEquals "$m: no copy of the token: $(cat "$CASE/$m.copies")" 0 "$copies"
		assertNotEquals "$m: the file's path is seen" 0 \
			"$(copies_in_memory "$pid" "$NGINX_TOKEN_FILE" 2>/dev/null)"
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
	done
	assertEquals "B was served from the server" 1 "$(remote_stat B remote_hits)"
}

testRemoteCheckSaysWhatWorks() {
	export CJC_REMOTE="$REDIS_URL $(with_user "$NGINX_HTTPS_AUTH_URL")|ca-file=$NGINX_CA$TLS_TIME"
	local out
	out=$(on A "$CJC" remote check)
	assertEquals "check passes" 0 $?
	assertEquals "both read back" 2 "$(echo "$out" | grep -c 'wrote and read back')"
	export CJC_REMOTE="$NGINX_HTTPS_URL$TLS_TIME" # no CA file: the certificate is not trusted
	out=$(on A "$CJC" remote check)
	assertNotEquals "check fails" 0 $?
	assertContains "$out" "cannot"
}

testUploadSeedsAnotherMachine() {
	export CJC_REMOTE="s3://$S3_BUCKET/seed?endpoint=$S3_ENDPOINT&region=$S3_REGION"
	local out
	out=$(CJC_DIR="$SUITE_DIR/template" "$CJC" remote upload)
	assertContains "$out" "1 now held"
	compile_on B
	assertEquals "no compile" 0 "$(nvcc_compiles)"
	assertTrue "same bytes" "cmp -s '$SUITE_DIR/src/a.cubin' '$CASE/B.cubin'"
}

# --- The HTTP helper (docs/remote.md#the-http-helper) -------------------------
# Each case has its own helpers' directory ($XDG_RUNTIME_DIR/cudajitcache,
# case_setup) and stops the helpers its compiles started; every http, https
# and s3 case of this suite goes through a helper, unless it says no-helper.

# use_helper [ATTRIBUTES]: nginx's store, with its helper (the default).
use_helper() {
	export CJC_REMOTE="$NGINX_URL|helper-idle=60s${1:-}"
}

helper_pids() { sed -n 's/.*started the helper of .* (pid \([0-9]*\),.*/\1/p' "$CJC_LOG"; }
helper_socket() { echo "$XDG_RUNTIME_DIR/cudajitcache/$(sed -n 's/.*started the helper of .*, \([0-9a-f]*\.sock\))$/\1/p' "$CJC_LOG" | tail -1)"; }

# wait_for_helper: until the newest helper listens (its socket appears
# once it does), or it is gone.
wait_for_helper() {
	local i pid
	pid=$(helper_pids | tail -1)
	for i in $(seq 600); do
		[ -S "$(helper_socket)" ] && return 0
		gone "$pid" && return 1
		sleep 0.05
	done
	return 1
}

# stop_helpers: kills this case's helpers; one already gone (a test may
# have killed it, and whoever reaped it may or may not have yet) is fine.
stop_helpers() {
	local pid
	for pid in $(helper_pids); do kill -KILL "$pid" 2>/dev/null || :; done
}

# A hit through the helper loads no libcurl: A's miss starts the helper
# (and loads libcurl itself); B asks the helper and is served the same bytes.
testHttpHelperKeepsLibcurlOutOfHits() {
	use_helper '|connect-timeout=5s' # a greeting under ASan on a loaded machine
	LD_DEBUG=files compile_on A
	assertTrue "A loaded libcurl" "grep -q 'file=libcurl' '$CASE/A.err'"
	wait_for_helper || fail "no helper listens"
	LD_DEBUG=files CJC_LOG=$CASE/B.log compile_on B
	assertEquals "B compiled nothing" 1 "$(nvcc_compiles)"
	assertEquals "B's remote hit" 1 "$(remote_stat B remote_hits)"
	assertTrue "B got A's bytes" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	assertEquals "B asked the helper" 1 "$(grep -c 'asking the helper' "$CASE/B.log")"
	assertFalse "B loaded libcurl" "grep -q 'file=libcurl' '$CASE/B.err'"
	assertEquals "one helper" 1 "$(helper_pids | wc -l)"
	CJC_REMOTE="$CJC_REMOTE|no-helper" LD_DEBUG=files CJC_LOG=$CASE/C.log compile_on C
	assertEquals "C's remote hit" 1 "$(remote_stat C remote_hits)"
	assertTrue "no-helper: C loaded libcurl" "grep -q 'file=libcurl' '$CASE/C.err'"
	assertEquals "and neither asked nor started a helper" 0 "$(grep -c 'helper' "$CASE/C.log")"
	CJC_REMOTE_HELPER=false CJC_LOG=$CASE/D.log compile_on D
	assertEquals "D's remote hit" 1 "$(remote_stat D remote_hits)"
	assertEquals "remote_helper=false: no helper" 0 "$(grep -c 'helper' "$CASE/D.log")"
	stop_helpers
}

# The helper's name (its socket's, which /proc/net/unix shows to everyone)
# is keyed with a secret of its user's, so a password in the URL cannot be
# guessed from it, and names the network namespace: a compile in another
# one (another 127.0.0.1) gets a helper of its own, and so does another
# cjc executable (rebuilt, reinstalled: never served by the old code's
# helper); a damaged key is replaced.  The helper keeps none of the build's environment but what
# decides its requests.
testHelperNameIsKeyedAndItsEnvironmentBare() {
	use_helper
	DEPLOY_TOKEN=s3cr3t-deploy compile_on A
	wait_for_helper || fail "no helper listens"
	local key=$XDG_RUNTIME_DIR/cudajitcache/key name pid
	assertEquals "the key: 32 bytes, the user's alone" "32 600" "$(stat -c '%s %a' "$key")"
	pid=$(helper_pids)
	assertFalse "the build's secret is not in the helper's environment" \
		"tr '\\0' '\\n' </proc/$pid/environ | grep -q DEPLOY_TOKEN"
	assertTrue "where it lives is" "tr '\\0' '\\n' </proc/$pid/environ | grep -q '^XDG_RUNTIME_DIR='"
	name=$(basename "$(helper_socket)")
	head -c 32 /dev/urandom >"$key.new" && chmod 600 "$key.new" && mv "$key.new" "$key"
	CJC_LOG=$CASE/B.log compile_on B
	assertEquals "another key: B started a helper" 1 "$(grep -c 'started the helper' "$CASE/B.log")"
	assertNotEquals "of another name" "$name" "$(grep -o '[0-9a-f]*\.sock' "$CASE/B.log")"
	CJC_LOG=$CASE/C.log on C unshare -n "$CJC" "$NVCC" --cubin k.cu -o "$CASE/C.cubin" -arch=$ARCH \
		2>"$CASE/C.err" || fail "C's build failed"
	assertEquals "another network: C started a helper" 1 "$(grep -c 'started the helper' "$CASE/C.log")"
	assertNotEquals "of another name" \
		"$(grep -o '[0-9a-f]*\.sock' "$CASE/B.log")" "$(grep -o '[0-9a-f]*\.sock' "$CASE/C.log")"
	cp "$CJC" "$CASE/cjc" # another build of the same version: its own helper, never the old one
	CJC_LOG=$CASE/E.log CJC=$CASE/cjc compile_on E || fail "E's build failed"
	assertEquals "another cjc: E started a helper" 1 "$(grep -c 'started the helper' "$CASE/E.log")"
	chmod 644 "$key" # damaged: a copy, a chmod (or a torn write: its size)
	CJC_LOG=$CASE/D.log compile_on D
	assertEquals "a damaged key is said" 1 "$(grep -c 'key was damaged: replaced' "$CASE/D.log")"
	assertEquals "and replaced" "32 600" "$(stat -c '%s %a' "$key")"
	assertEquals "D started a helper" 1 "$(grep -c 'started the helper' "$CASE/D.log")"
	for pid in $(sed -n 's/.*started the helper of .* (pid \([0-9]*\),.*/\1/p' "$CASE"/[BCDE].log); do
		kill -KILL "$pid" 2>/dev/null
	done
	stop_helpers
}

# Removing the helpers' directory stops its helpers: each exits once its
# socket is gone from its name (it looks every second) and the next
# compile starts a new one.
testHelperStopsWithItsDirectory() {
	use_helper
	compile_on A
	wait_for_helper || fail "no helper listens"
	local pid
	pid=$(helper_pids)
	rm -rf "$XDG_RUNTIME_DIR/cudajitcache"
	wait_until "gone '$pid'"
	assertTrue "the helper exited" $?
	compile_on B || fail "B's build failed"
	assertEquals "B: a hit" 1 "$(remote_stat B remote_hits)"
	assertEquals "a new helper" 2 "$(helper_pids | wc -l)"
	stop_helpers
}

# The helper runs in /: a CA file named relative to the compile's
# directory is made absolute for it, and HTTPS through it works.
testHelperOverHttpsWithRelativeCaFile() {
	use_helper
	export CJC_REMOTE="$(with_user "$NGINX_HTTPS_AUTH_URL")|ca-file=$(realpath --relative-to=. "$NGINX_CA")|helper$TLS_TIME"
	compile_on A
	wait_for_helper || fail "no helper listens"
	CJC_LOG=$CASE/B.log compile_on B
	assertEquals "B asked the helper" 1 "$(grep -c 'asking the helper' "$CASE/B.log")"
	assertEquals "B: a hit" 1 "$(remote_stat B remote_hits)"
	assertEquals "no errors: $(cat "$CASE/B.log")" 0 "$(remote_stat B remote_errors)"
	stop_helpers
}

# A stopped helper costs the connect-timeout (nothing once its queue is
# full), a dead one nothing: either way the compile asks the store itself,
# and a new helper replaces the dead.
testStoppedOrDeadHelperIsNoFailure() {
	use_helper
	compile_on A
	wait_for_helper || fail "no helper listens"
	local pid
	pid=$(helper_pids)
	kill -STOP "$pid"
	CJC_LOG=$CASE/B.log compile_on B || fail "B's build failed"
	assertEquals "B: a hit all the same" 1 "$(remote_stat B remote_hits)"
	assertEquals "B said why" 1 "$(grep -c 'did not greet' "$CASE/B.log")"
	# its queue filled up (compiles gone before it answered): one more does not block
	(exec python3 -c '
import os, socket, sys, time
os.chdir(os.path.dirname(sys.argv[1]))
held = []
while len(held) < 10000:
    s = socket.socket(socket.AF_UNIX)
    s.setblocking(False)
    try:
        s.connect(os.path.basename(sys.argv[1]))
    except BlockingIOError:
        break
    held.append(s)
open(sys.argv[2], "w").write(str(len(held)))
time.sleep(600)' "$(helper_socket)" "$CASE/queue.full") &
	local filler=$!
	wait_for_file "$CASE/queue.full" || fail "the queue"
	CJC_LOG=$CASE/B2.log compile_on B2 || fail "B2's build failed"
	kill "$filler"
	assertEquals "B2: a hit all the same" 1 "$(remote_stat B2 remote_hits)"
	assertEquals "B2 said why" 1 "$(grep -c 'did not greet' "$CASE/B2.log")"
	kill -KILL "$pid"
	wait_until "gone '$pid'"
	compile_on C || fail "C's build failed"
	assertEquals "C: a hit" 1 "$(remote_stat C remote_hits)"
	assertEquals "a new helper" 2 "$(helper_pids | wc -l)"
	assertEquals "still one compile" 1 "$(nvcc_compiles)"
	stop_helpers
}

# A helper that answers out of bounds (here: more bytes than asked for) is
# dropped for the compile, which asks the store itself.
testHelperAnsweringOutOfBoundsIsDropped() {
	use_helper '|connect-timeout=5s' # the fake's greeting, on a loaded machine
	compile_on A
	wait_for_helper || fail "no helper listens"
	local sock fake
	sock=$(helper_socket)
	kill -KILL "$(helper_pids)"
	# (by its name in the directory: the whole path is too long for a socket's)
	(cd "$(dirname "$sock")" && exec python3 -c '
import os, socket, struct, sys
name = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(name + ".fake"); s.listen(8); os.rename(name + ".fake", name)
open(sys.argv[2], "w").close()
while True:
    c, _ = s.accept()
    c.sendall(b"CJCH" + struct.pack("=I", 1))
    c.recv(65536)
    c.sendall(bytes([0]) + struct.pack("=Q", 1 << 40) + b"x" * 100)
    c.close()' "$(basename "$sock")" "$CASE/fake.ready") &
	fake=$!
	wait_for_file "$CASE/fake.ready" || fail "the fake helper"
	compile_on B || fail "B's build failed"
	kill "$fake"
	assertEquals "B: a hit" 1 "$(remote_stat B remote_hits)"
	assertEquals "B dropped the helper" 1 "$(grep -c 'the helper of .* failed' "$CJC_LOG")"
	assertTrue "B got A's bytes" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	stop_helpers
}

# A helper is its user's alone: another user cannot connect to root's, and
# a helpers' directory that is not root's own (here one the member made in
# a sticky, world-writable XDG_RUNTIME_DIR of root's, with a fake helper
# listening in it) is not used at all: root's compile asks the store
# itself and the member's listener hears nothing.  An XDG_RUNTIME_DIR
# that is the member's (`sudo -E`) is not written in by root at all.
testHelperIsItsUsersAlone() {
	member_ready || { startSkipping; return; }
	use_helper
	compile_on A
	wait_for_helper || fail "no helper listens"
	local sock name evil fake
	sock=$(helper_socket)
	name=$(basename "$sock")
	# (Debian's python3: the member may not run a python of root's)
	local py=/usr/bin/python3 try_connect='
import os, socket, sys
try:
    os.chdir(os.path.dirname(sys.argv[1]))
    socket.socket(socket.AF_UNIX).connect(os.path.basename(sys.argv[1]))
except PermissionError:
    sys.exit(3)'
	as_member $py -c "$try_connect" "$sock"
	assertEquals "the member is refused root's helper" 3 $?
	$py -c "$try_connect" "$sock"
	assertEquals "root reaches it" 0 $?
	evil=$(mktemp -d "$OTHERS_DIR/run.XXXXXX") && chmod 1777 "$evil" || fail "the shared directory"
	as_member mkdir -m 777 "$evil/cudajitcache" || fail "the member's helpers' directory"
	(cd "$evil/cudajitcache" && exec setpriv --reuid="$MEMBER" --regid="$(id -g "$MEMBER")" \
		--init-groups $py -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(8)
open(sys.argv[2], "w").close()
c, _ = s.accept()
open(sys.argv[3], "w").close()' "$name" "$evil/ready" "$evil/heard") &
	fake=$!
	wait_for_file "$evil/ready" || fail "the member's listener"
	XDG_RUNTIME_DIR=$evil CJC_LOG=$CASE/B.log compile_on B || fail "B's build failed"
	kill "$fake" 2>/dev/null
	assertEquals "B: a hit" 1 "$(remote_stat B remote_hits)"
	assertFalse "the member's listener heard root" "[ -e '$evil/heard' ]"
	assertEquals "B neither asked nor started a helper" 0 "$(grep -c 'helper' "$CASE/B.log")"
	local hers pid
	hers=$(mktemp -d "$OTHERS_DIR/run.XXXXXX") && chown "$MEMBER" "$hers" || fail "the member's directory"
	XDG_RUNTIME_DIR=$hers CJC_LOG=$CASE/C.log compile_on C || fail "C's build failed"
	assertEquals "nothing of root's in the member's directory" "" "$(ls -A "$hers")"
	for pid in $(sed -n 's/.*started the helper of .* (pid \([0-9]*\),.*/\1/p' "$CASE/C.log"); do
		kill -KILL "$pid" 2>/dev/null # its socket is in /tmp/cudajitcache-0
	done
	stop_helpers
}

# --- Local entries another user wrote (docs/trust.md) -----------------------
# As tests/shared_test.sh does: the member cjc-member2 of group cjc-team
# (made here too, once, with useradd) publishes into a group store that
# root uses.  trusted_keys covers local entries she wrote as it does remote
# ones: an unsigned one is a miss counted as untrusted, a signed one a hit.

MEMBER=cjc-member2
GROUP=cjc-team

# member_ready: the member exists and OTHERS_DIR too; false (with a reason)
# where this suite cannot act as another user.
member_ready() {
	[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && command -v useradd >/dev/null ||
		{ echo "not root, or no setpriv or useradd: cannot act as another user" >&2; return 1; }
	getent group "$GROUP" >/dev/null || groupadd "$GROUP" || getent group "$GROUP" >/dev/null ||
		return 1
	id -u "$MEMBER" >/dev/null 2>&1 || useradd -M -N -s /usr/sbin/nologin -g "$GROUP" "$MEMBER" ||
		id -u "$MEMBER" >/dev/null 2>&1 || return 1
	[ -n "${OTHERS_DIR:-}" ] || use_others_dir
}

# as_member CMD...: CMD as the member, with her own groups.
as_member() {
	setpriv --reuid="$MEMBER" --regid="$(id -g "$MEMBER")" --init-groups "$@"
}

testLocalEntryAnotherUserWroteNeedsATrustedSignature() {
	member_ready || { startSkipping; return; }
	# a group store, sources, nvcc and logs that both reach at the same paths
	local work
	work=$(mktemp -d "$OTHERS_DIR/work.XXXXXX") && chmod 755 "$work" &&
		mkdir -p "$work/store" "$work/src" "$work/bin" && chmod 777 "$work/src" &&
		chgrp "$GROUP" "$work/store" && chmod 2775 "$work/store" || fail "the work directory"
	cp k.cu k.h dev.h host.h "$work/src" && make_nvcc_wrapper "$work/bin/nvcc" &&
		touch "$work/nvcc.log" "$work/member.log" && chmod 666 "$work/nvcc.log" "$work/member.log" &&
		install -m 600 -o "$MEMBER" "$SUITE_DIR/sign.pem" "$work/member.pem" || fail "the files"
	cd "$work/src" || fail "cd"
	export CJC_DIR=$work/store CJC_UMASK=002 NVCC_LOG=$work/nvcc.log
	CJC_LOG=$work/member.log as_member "$OTHERS_CJC" "$work/bin/nvcc" --cubin k.cu -o m1.cubin \
		-arch=$ARCH -DV=1 || fail "the member's compile"
	"$CJC" "$work/bin/nvcc" --cubin k.cu -o r0.cubin -arch=$ARCH -DV=1 || fail "root's compile"
	assertEquals "without trusted_keys, as before: served" 1 "$(nvcc_compiles)"
	export CJC_TRUSTED_KEYS="$SUITE_DIR/trusted.pem"
	"$CJC" "$work/bin/nvcc" --cubin k.cu -o r1.cubin -arch=$ARCH -DV=1 || fail "root's compile"
	assertEquals "her unsigned entry is not served" 2 "$(nvcc_compiles)"
	expect_stat untrusted 1
	assert_same_devcode m1.cubin r1.cubin
	CJC_LOG=$work/member.log CJC_SIGN_KEY=$work/member.pem as_member "$OTHERS_CJC" \
		"$work/bin/nvcc" --cubin k.cu -o m2.cubin -arch=$ARCH -DV=2 || fail "the member's compile"
	"$CJC" "$work/bin/nvcc" --cubin k.cu -o r2.cubin -arch=$ARCH -DV=2 || fail "root's compile"
	assertEquals "her signed entry is served" 3 "$(nvcc_compiles)"
	expect_stat untrusted 1
	assertTrue "the same bytes" "cmp -s m2.cubin r2.cubin"
	assertEquals "verify names the one not served" 1 \
		"$("$CJC" verify --json | jq .signatures.not_served)"
	# audit runs nothing an entry of hers records unless a trusted key signed it
	"$CJC" audit all --json >"$work/audit.json"
	assertEquals "her signed entry rebuilt: $(cat "$work/audit.json")" 1 \
		"$(jq .reproducible "$work/audit.json")"
	assertEquals "her unsigned one not" 1 "$(jq '[.entries[] | select(.status == "cannot rebuild")
		| select(.details[] | test("written by uid [0-9]+, not you or root"))] | length' "$work/audit.json")"
	unset CJC_TRUSTED_KEYS
	"$CJC" audit all --json >"$work/audit.json"
	assertEquals "without trusted_keys, neither" 2 "$(jq .cannot_rebuild "$work/audit.json")"
	cd "$SUITE_DIR/src" && unset CJC_DIR CJC_UMASK
}

. "$SHUNIT2"
