#!/bin/bash
# A newcomer's mistakes in the settings (docs/settings.md#mistakes): an
# unknown setting or a bad value that cannot weaken trust is said, ignored
# and counted, and the cache goes on; one that decides trust fails closed,
# counted too; a bad remote URL turns the remote stores off, not the local
# store; `cjc remote check` says what is wrong with a URL; sizes read as
# ccache's do; `cjc config set` writes the user's settings file.
. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/servers.sh"

for tool in redis-server redis-cli nginx openssl curl; do
	command -v $tool >/dev/null || { echo "$tool not found: skipping" >&2; exit 125; }
done

oneTimeSetUp() {
	SERVERS_DIR=$(mktemp -d "$TMPDIR/cjc-settings.XXXXXX")
	start_redis "$SERVERS_DIR/redis" || exit 1
	start_nginx "$SERVERS_DIR/nginx" || exit 1
}

oneTimeTearDown() {
	servers_stop_all
	rm -rf "$SERVERS_DIR"
}

# compile_twice: a miss then a hit of the same kernel, both succeeding
# (their stderr in err1.txt and err2.txt).
compile_twice() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err1.txt || fail "the first compile failed"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH 2>err2.txt || fail "the second compile failed"
	assertTrue "the output" "[ -s b.cubin ] && cmp -s a.cubin b.cubin"
}

testUnknownSettingInTheFileIsSaidIgnoredAndCounted() {
	mkdir -p "$CJC_DIR"
	printf 'max_sise = 1G\n' >"$CJC_DIR/cudajitcache.conf"
	compile_twice
	assertTrue "said, with the file, line and the setting meant: $(cat err1.txt)" \
		"grep -q \"cudajitcache.conf:1: unknown setting 'max_sise' (did you mean 'max_size'?); ignored\" err1.txt"
	expect_nvcc_runs 1
	expect_stat hits 1
	expect_stat bad_settings 2
	assertEquals "which" 2 "$("$CJC" stats --json 2>/dev/null | jq '.bad_settings_by_setting["max_sise (unknown)"]')"
	assertTrue "cjc stats says it" "'$CJC' stats 2>/dev/null | grep -q '^bad settings .*2 compiles ran with a broken setting.*max_sise (unknown)'"
	assertTrue "the metrics: $("$CJC" stats --format=openmetrics 2>/dev/null | grep bad)" \
		"'$CJC' stats --format=openmetrics 2>/dev/null | grep -q '^cjc_bad_settings_total 2$'"
	assertTrue "the metrics, by setting" "'$CJC' stats --format=openmetrics 2>/dev/null | grep -q 'cjc_bad_settings_by_setting_total{setting=\"max_sise (unknown)\"} 2'"
	assertTrue "the Markdown report" "'$CJC' report --markdown 2>/dev/null | grep -q 'Warning.*2 compiles ran with a broken setting'"
	"$CJC" report >report.html 2>/dev/null || fail "report"
	assertTrue "the HTML report" "grep -q 'data-setting=\"max_sise (unknown)\"' report.html"
}

testBadSizeIsIgnoredAndSizesReadAsCcachesDo() {
	CJC_MAX_SIZE=1.5X compile_twice
	assertTrue "said, and what stands: $(cat err1.txt)" \
		"grep -q \"CJC_MAX_SIZE: bad value '1.5X' for max_size: .*; ignored: max_size stays 5G (default)\" err1.txt"
	expect_stat hits 1
	assertEquals "the default limit" $((5 << 30)) "$(stat_value max_size)"
	assertEquals "a bare number is gibibytes" $((20 << 30)) "$(CJC_MAX_SIZE=20 stat_value max_size)"
	assertEquals "a decimal size" $((3 << 29)) "$(CJC_MAX_SIZE=1.5G stat_value max_size)"
	assertEquals "MiB" $((512 << 20)) "$(CJC_MAX_SIZE=512MiB stat_value max_size)"
	assertEquals "bytes, said so" 4096 "$(CJC_MAX_SIZE=4096B stat_value max_size)"
	CJC_MAX_SIZE=1.5G "$CJC" config >/dev/null 2>err.txt || fail "config"
	assertFalse "1.5G is no mistake: $(cat err.txt)" "[ -s err.txt ]"
}

testMisspeltVariableGetsDidYouMean() {
	CJC_MAX_SIZ=1G compile_twice
	assertTrue "did you mean: $(cat err1.txt)" \
		"grep -q 'environment variable CJC_MAX_SIZ is not a setting (did you mean CJC_MAX_SIZE?); ignored' err1.txt"
	expect_stat hits 1
	CJC_SOURCE_DIRS=x "$CJC" config >/dev/null 2>err.txt
	assertFalse "a variable near no setting is a build's own business: $(cat err.txt)" "[ -s err.txt ]"
}

testWhatDecidesTrustFailsClosedAndIsCounted() {
	CJC_TRUSTED_KEY=/keys.pem cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err.txt || fail "the build"
	assertTrue "did you mean, and uncached: $(cat err.txt)" \
		"grep -q 'CJC_TRUSTED_KEY is not a setting (did you mean CJC_TRUSTED_KEYS?): it may be meant to decide trust' err.txt && grep -q 'compiling without the cache' err.txt"
	mkdir -p "$CJC_DIR"
	printf 'trusted_key = /keys.pem\n' >"$CJC_DIR/cudajitcache.conf"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH 2>err.txt || fail "the build"
	assertTrue "in a file too: $(cat err.txt)" "grep -q \"unknown setting 'trusted_key' (did you mean 'trusted_keys'?)\" err.txt"
	rm "$CJC_DIR/cudajitcache.conf"
	CJC_UMASK=9 cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH 2>err.txt || fail "the build"
	assertTrue "a bad umask: $(cat err.txt)" "grep -q 'compiling without the cache' err.txt"
	CJC_CONFIG=$PWD/nonexistent.conf cjc_nvcc --cubin k.cu -o d.cubin -arch=$ARCH 2>err.txt || fail "the build"
	assertTrue "a missing CJC_CONFIG (it may set trust)" "grep -q 'compiling without the cache' err.txt"
	expect_nvcc_runs 4
	expect_stat hits 0
	expect_stat misses 0
	expect_stat bad_settings 4
	assertEquals "which" '["CJC_CONFIG","CJC_TRUSTED_KEY (unknown)","trusted_key (unknown)","umask"]' \
		"$("$CJC" stats --json | jq -c '.bad_settings_by_setting | keys')"
}

testBadRemoteUrlTurnsOffTheRemoteNotTheLocalStore() {
	export CJC_REMOTE="htp://user:Secret@127.0.0.1:$REDIS_PORT/x"
	compile_twice
	assertTrue "the scheme is said: $(cat err1.txt)" \
		"grep -q \"remote 'htp://\*\*\*@127.0.0.1:$REDIS_PORT/x': unknown scheme 'htp'; expected redis, redis+unix, http, https, s3, oci, oci+http; the remote stores are off, the local store goes on\" err1.txt"
	assertFalse "no password" "grep -q Secret err1.txt"
	expect_stat hits 1
	expect_stat bad_settings 2
	"$CJC" remote check >out.txt 2>err.txt
	assertEquals "remote check fails" 1 $?
	assertTrue "remote check says the URL is malformed, and why: $(cat err.txt)" \
		"grep -q \"setting remote (CJC_REMOTE) is malformed: remote 'htp://\*\*\*@.*unknown scheme 'htp'\" err.txt"
	assertFalse "not that no remote is set" "grep -q 'no remote store is set' err.txt"
	unset CJC_REMOTE
}

testWrongRedisPortIsSaidOnceAndCounted() {
	export CJC_REMOTE="redis://:$REDIS_PASSWORD@127.0.0.1:1"
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err.txt || fail "the build"
	assertEquals "said once: $(cat err.txt)" 1 "$(grep -c 'remote store redis://\*\*\*@127.0.0.1:1 (setting remote, CJC_REMOTE): cannot connect: .*going on without it' err.txt)"
	assertEquals "counted" 1 "$("$CJC" stats --json | jq '.remote_errors')"
	expect_stat misses 1
	export CJC_REMOTE=$REDIS_URL # the right port: a real Redis
	"$CJC" remote check >out.txt || fail "the right port: $(cat out.txt)"
	cjc_nvcc --cubin k.cu -o b.cubin -DV=2 -arch=$ARCH 2>err.txt || fail "the build"
	assertFalse "nothing said: $(cat err.txt)" "[ -s err.txt ]"
	unset CJC_REMOTE
}

testUnresolvableHttpHostIsNotReached() {
	CJC_REMOTE="http://no-such-host.invalid/cache" "$CJC" remote check >out.txt 2>&1
	assertNotEquals "check fails" 0 $?
	assertTrue "not reached, and why: $(cat out.txt)" "grep -q 'cannot reach or read: .*resolve' out.txt"
	assertFalse "never 'reached'" "grep -q ' reached;' out.txt"
	CJC_REMOTE=$NGINX_URL "$CJC" remote check >out.txt 2>&1 || fail "a real nginx: $(cat out.txt)"
	assertTrue "reached: $(cat out.txt)" "grep -q 'reached; read; wrote and read back' out.txt"
}

# A libcurl older than 7.85.0 (tests/fakecurl: Ubuntu 22.04's 7.81.0) is
# not used: it would take CURLOPT_PROTOCOLS_STR for an unknown option and
# leave every protocol open to a redirect.  `remote check` says so; a
# build goes on with the local store.
testOldLibcurlIsSaidAndNotUsed() {
	[ -n "${CJC_FAKE_CURL_DIR:-}" ] || fail "CJC_FAKE_CURL_DIR: ctest sets it"
	LD_LIBRARY_PATH=$CJC_FAKE_CURL_DIR CJC_REMOTE="$NGINX_URL|no-helper" "$CJC" remote check \
		>out.txt 2>&1
	assertNotEquals "check fails" 0 $?
	assertTrue "and says why: $(cat out.txt)" "grep -q 'libcurl.so.4 is older than 7.85.0' out.txt"
	LD_LIBRARY_PATH=$CJC_FAKE_CURL_DIR CJC_REMOTE="$NGINX_URL|no-helper" \
		cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err.txt
	assertEquals "the build: $(cat err.txt)" 0 $?
	assertTrue "said: $(cat err.txt)" "grep -q 'older than 7.85.0' err.txt"
	expect_stat misses 1
}

testHelperExitsWhenIdle() {
	export CJC_REMOTE="$NGINX_URL|helper-idle=1s"
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail "the build"
	local pid
	pid=$(sed -n 's/.*started the helper of .* (pid \([0-9]*\),.*/\1/p' "$CJC_LOG" | tail -1)
	assertNotEquals "a helper started: $(cat "$CJC_LOG")" "" "$pid"
	wait_until "gone $pid" || fail "the helper outlived its idle time"
	unset CJC_REMOTE
	assertTrue "docs say the default" "grep -q 'helper-idle=T. | how long the helper waits for a compile before it exits | .60s.' '$CJC_SOURCE_DIR/docs/remote.md'"
}

# raw_controls FILE...: whether a file holds a control character other
# than a newline (what a terminal would act on: an escape sequence, BEL).
raw_controls() { cat "$@" | tr -d '\n' | LC_ALL=C grep -q '[[:cntrl:]]'; }

# A control character in a value is refused, whatever the setting, by the
# rule for a bad value of it, and no message prints it raw.
testControlCharactersInAValueAreRefusedAndNeverPrinted() {
	CJC_REMOTE=$'redis://127.0.0.1:'"$REDIS_PORT"$'/\e[31mred' CJC_MAX_SIZE=$'2G\e]0;title\a' compile_twice
	assertTrue "the remote's is refused, naming it: $(cat -v err1.txt)" \
		"grep -q \"CJC_REMOTE: bad value 'redis://...' for remote: expected no control characters.*the remote stores are off\" err1.txt"
	assertTrue "a size's is shown escaped: $(cat -v err1.txt)" \
		"grep -qF \"CJC_MAX_SIZE: bad value '2G\\x1b]0;title\\x07' for max_size: expected no control characters\" err1.txt"
	assertFalse "nothing raw: $(cat -v err1.txt err2.txt)" "raw_controls err1.txt err2.txt"
	expect_stat hits 1
	expect_stat bad_settings 2
	mkdir -p "$CJC_DIR"
	printf 'base_dir = /x\033[2J\n' >"$CJC_DIR/cudajitcache.conf"
	"$CJC" config >out.txt 2>err.txt
	assertTrue "in a file, and an empty value said so: $(cat -v err.txt)" \
		"grep -qF \"cudajitcache.conf:1: bad value '/x\\x1b[2J' for base_dir: expected no control characters (it holds one, shown as \\xNN); ignored: base_dir stays empty (default)\" err.txt"
	rm "$CJC_DIR/cudajitcache.conf"
	CJC_SIGN_KEY=$'/key\n.pem' cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH 2>err.txt || fail "the build"
	assertTrue "one that decides trust fails closed: $(cat -v err.txt)" \
		"grep -qF \"CJC_SIGN_KEY: bad value '/key\\x0a.pem' for sign_key\" err.txt && grep -q 'compiling without the cache' err.txt"
	expect_nvcc_runs 2
	"$CJC" config set remote $'redis://h/\e[31m' >out.txt 2>err.txt
	assertEquals "config set refuses one" 2 $?
	assertTrue "saying why: $(cat -v err.txt)" "grep -q 'bad value .* for remote: expected no control characters.*nothing written' err.txt"
	"$CJC" config set $'max_size\e[2J' 1G 2>>err.txt
	assertEquals "and an unknown name" 2 $?
	assertFalse "nothing raw: $(cat -v out.txt err.txt)" "raw_controls out.txt err.txt"
	assertFalse "nothing written" "[ -e '$CJC_DIR/cudajitcache.conf' ]"
}

testConfigSetWritesTheUsersFile() {
	"$CJC" config set max_size 20 >out.txt || fail "config set"
	assertTrue "says which file: $(cat out.txt)" "grep -q '^max_size = 20 written to $CJC_DIR/cudajitcache.conf$' out.txt"
	assertEquals "read back" $((20 << 30)) "$(stat_value max_size)"
	"$CJC" config set max_size 30G >/dev/null || fail "again"
	assertEquals "one line, replaced" "max_size = 30G" "$(cat "$CJC_DIR/cudajitcache.conf")"
	"$CJC" config set max_sise 3G 2>err.txt
	assertEquals "an unknown key is a usage error" 2 $?
	assertTrue "did you mean: $(cat err.txt)" "grep -q \"unknown setting 'max_sise' (did you mean 'max_size'?)\" err.txt"
	"$CJC" config set max_size 3X 2>err.txt
	assertEquals "a bad value is a usage error" 2 $?
	assertEquals "nothing written" "max_size = 30G" "$(cat "$CJC_DIR/cudajitcache.conf")"
	"$CJC" config >out.txt || fail "config"
	assertTrue "config says which files it reads: $(cat out.txt)" \
		"grep -q '^files: /etc/cudajitcache.conf (.*), $CJC_DIR/cudajitcache.conf (read;' out.txt"
	assertTrue "and the value's origin" "grep -q '^max_size *= 30G *($CJC_DIR/cudajitcache.conf:1)' out.txt"
	compile_twice
	assertFalse "no warning" "[ -s err1.txt ]"
	expect_stat hits 1
}

. "$SHUNIT2"
