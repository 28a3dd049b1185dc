#!/bin/bash
# The subcommands show what the cache did.
. "$(dirname "$0")/helpers.sh"

# populate: the store of an object compiled twice for target app (a miss,
# then a hit) and a fatbin.  The tests read that store, and it is the same
# each time: it is made once a suite (make_populated) and copied into the
# test's CJC_DIR, with the outputs, cjc's log, and nvcc's log (the two
# compiles that made it count for expect_nvcc_runs).
populate() {
	[ -n "${POPULATED:-}" ] || make_populated || fail "the populated store"
	mkdir -p "$CJC_DIR" && cp -a "$POPULATED/cache/." "$CJC_DIR/" &&
		cp -a "$POPULATED"/src/a.o "$POPULATED"/src/b.o "$POPULATED"/src/k.fatbin . &&
		cat "$POPULATED/cjc.log" >>"$CJC_LOG" && cat "$POPULATED/nvcc.log" >>"$NVCC_LOG" ||
		fail "the copy of the populated store"
}

make_populated() {
	POPULATED=$(mktemp -d "${TMPDIR:-/tmp}/cjc-populated.XXXXXX") &&
		mkdir -p "$POPULATED/bin" "$POPULATED/src" || return 1
	(
		cd "$POPULATED/src" && write_sources || exit 1
		export CJC_DIR=$POPULATED/cache CJC_LOG=$POPULATED/cjc.log NVCC_LOG=$POPULATED/nvcc.log
		NVCC=$POPULATED/bin/nvcc
		make_nvcc_wrapper "$NVCC"
		sleep 0.02 # past the tick the sources were written in (helpers.sh, setUp)
		"$CJC" --target app "$NVCC" -c k.cu -o a.o -arch=$ARCH &&
			"$CJC" --target app "$NVCC" -c k.cu -o b.o -arch=$ARCH &&
			"$CJC" "$NVCC" --fatbin k.cu -o k.fatbin -arch=$ARCH
	)
}

oneTimeTearDown() { [ -z "${POPULATED:-}" ] || rm -rf "$POPULATED"; }

testVersion() {
	assertTrue "cjc VERSION" "\"$CJC\" --version | grep -Eq '^cjc [0-9]+\.[0-9]+\.[0-9]+$'"
}

testStatsCountsAndZero() {
	populate
	expect_stat hits 1
	expect_stat misses 2
	assertEquals "entries" 2 "$(stat_value entries)"
	assertTrue "time saved shown" "\"$CJC\" stats | grep -q 'time saved'"
	"$CJC" stats --zero >/dev/null || fail
	expect_stat hits 0
	assertEquals "entries stay" 2 "$(stat_value entries)"
}

testStatsShowWhatTheCacheIsWorth() {
	populate
	# an uncacheable link (of a host object: no 2.5 s compile of main.cu with it)
	echo "int main() { return 0; }" >main.c && gcc -c main.c -o main.o || fail "gcc"
	cjc_nvcc main.o -o prog -arch=$ARCH || fail
	cjc_nvcc k.cu other.cu -c 2>/dev/null
	CJC_MAX_SIZE=1G "$CJC" stats >stats.txt || fail
	assertTrue "hit rate" "grep -q '^hit rate *33.3 %' stats.txt"
	assertTrue "uncacheable reasons with counts" "grep -q '^  linking (no -c, -dc, --cubin, --fatbin or --ptx) *1$' stats.txt"
	assertTrue "second reason" "grep -q '^  several input files *1$' stats.txt"
	assertEquals "it leads with the size on disk, then its parts: $(cat stats.txt)" \
		"store,entries,bookkeeping" "$(sed -n '2,4p' stats.txt | awk '{ print $1 }' | paste -sd,)"
	assertTrue "entries against the limit" "grep -Eq '^  entries +[0-9.]+ MB in 2 entries of max_size 1073.7 MB \([0-9.]+ %\)' stats.txt"
	"$CJC" stats --json >sizes.json || fail
	assertTrue "some bookkeeping" "[ $(jq .bookkeeping_bytes sizes.json) -gt 0 ]"
	assertEquals "the total is the entries and the bookkeeping" "$(jq '.bytes + .bookkeeping_bytes' sizes.json)" \
		"$(jq .disk_bytes sizes.json)"
	local total
	total=$(sed -n 's/^store size *\([0-9.]*\) MB on disk.*/\1/p' stats.txt)
	assertTrue "the text's total ($total MB) is that one" \
		"awk -v t='$total' -v b=$(jq .disk_bytes sizes.json) 'BEGIN { d = t - b / 1e6; exit !(d < 0.051 && d > -0.051) }'"
	assertTrue "time saved" "grep -Eq '^time saved *[0-9]+\.[0-9]{3} s' stats.txt"
	"$CJC" stats --by-target >targets.txt || fail
	assertTrue "per target" "grep -Eq '^app +1 +1 +0 +0 +50.0 %' targets.txt"
	"$CJC" stats --by-target --json >stats.json || fail
	assertTrue "json reasons" "grep -q '\"several input files\": 1' stats.json"
	assertTrue "json targets" "grep -q '\"app\": {' stats.json"
	assertTrue "a row for the compiles without a label: $(cat targets.txt)" \
		"grep -Eq '^\(no target\) +0 +1 +2 +0 +0.0 %' targets.txt"
	local stat
	for stat in hits misses uncacheable errors compile_failed saved_ms; do
		assertEquals "the rows' $stat sum to the total" "$(jq .$stat stats.json)" \
			"$(jq "[.targets[].$stat, .no_target.$stat] | add" stats.json)"
	done
	local saved
	saved=$(stat_value saved_ms)
	assertTrue "saved_ms is the served entry's duration" "[ '$saved' -gt 0 ]"
	"$CJC" stats --zero >/dev/null || fail
	"$CJC" stats --by-target >after.txt || fail
	assertFalse "zeroed breakdowns" "grep -q '^app ' after.txt"
}

testStatsStayRightUnderParallelBuilds() {
	"$CJC" "$NVCC" --cubin k.cu -o warm.cubin -arch=$ARCH || fail
	"$CJC" stats --zero >/dev/null
	local i
	for i in $(seq 1 24); do
		"$CJC" "$NVCC" --cubin k.cu -o par$i.cubin -arch=$ARCH &
	done
	wait
	expect_stat hits 24
}

# A counter shard locked by someone else (a process descheduled while it
# holds the lock, a reader of a shared store) costs no count: the hit goes to
# a shard free at once.  Fifteen of the sixteen are held here, as one is
# when its holder sleeps on a loaded machine, so most hits' own are.
testStatsCountPastAShardSomeoneHolds() {
	"$CJC" "$NVCC" --cubin k.cu -o warm.cubin -arch=$ARCH || fail
	"$CJC" stats --zero >/dev/null
	hold_locks "$(id -un)" LOCK_EX "$CJC_DIR"/v1/*/stats/[0-9] "$CJC_DIR"/v1/*/stats/1[0-4]
	local i
	for i in $(seq 1 6); do
		"$CJC" "$NVCC" --cubin k.cu -o held$i.cubin -arch=$ARCH || fail "hit $i"
	done
	expect_stat hits 6
}

# cjc ls reads the index publishers keep (index.h), and never trusts it over
# the entries: a missing, damaged or stale index gives the same rows.
testLsIndexIsNeverTrustedOverTheEntries() {
	populate
	"$CJC" ls --json >expected.json || fail
	local index
	index=$(echo "$CJC_DIR"/v1/*/index)
	assertTrue "publishers keep an index" "ls '$index' | grep -q ."
	rm -rf "$index"
	assertTrue "no index" "\"$CJC\" ls --json | cmp -s - expected.json"
	assertTrue "ls wrote it again" "ls '$index' | grep -q ."
	local f
	for f in "$index"/*; do head -c 100 /dev/urandom >"$f"; done
	assertTrue "a damaged index" "\"$CJC\" ls --json | cmp -s - expected.json"
	# a row that names another document (the entry published again): read anew
	local entry
	entry=$("$CJC" ls --json | jq -r '.[] | select(.kind == "fatbin") | .path')
	cp -a "$entry" "$entry.new" && rm -rf "$entry" && mv "$entry.new" "$entry"
	plain_metadata "$entry/metadata.json"
	sed -i 's/"target": null/"target": "relabelled"/' "$entry/metadata.json" 2>/dev/null ||
		{ chmod u+w "$entry/metadata.json"; sed -i 's/"target": null/"target": "relabelled"/' "$entry/metadata.json"; }
	assertEquals "the entry's own metadata wins" relabelled \
		"$("$CJC" ls --json | jq -r '.[] | select(.kind == "fatbin") | .target')"
	# an entry replaced by a link to a copy of itself: the row (its
	# metadata.json is the same file) is not used; the link is refused
	mv "$entry" "$entry.elsewhere" && ln -s "$entry.elsewhere" "$entry"
	assertEquals "a linked entry is damaged, not listed from the index" true \
		"$("$CJC" ls --json | jq '[.[] | select(.damaged)] | length == 1')"
	rm -rf "$entry" "$entry.elsewhere"
	assertEquals "a removed entry's row is gone" 1 "$("$CJC" ls --json | jq length)"
}

testLsAndShow() {
	populate
	assertEquals "rows" 2 "$("$CJC" ls | wc -l)"
	assertTrue "target shown" "\"$CJC\" ls | grep -q ' app '"
	assertTrue "kinds shown" "\"$CJC\" ls | grep -q fatbin"
	local key
	key=$("$CJC" ls --json | sed -n 's/.*"key": "\(.*\)".*/\1/p' | head -1)
	assertEquals "64 hex" 64 "${#key}"
	assertTrue "show by prefix" "\"$CJC\" show ${key:0:10} | grep -q \"$key\""
	"$CJC" show "$key" --json >meta.json || fail
	local field
	for field in format key created files command argv cwd compiler host_compiler options \
		inputs environment target tool duration_ms; do
		assertTrue "metadata has $field" "grep -q '^  \"$field\":' meta.json"
	done
	assertTrue "format" "grep -q '\"cudajitcache.entry.v1\"' meta.json"
	assertFalse "unknown key" "\"$CJC\" show ffffffffff 2>/dev/null"
}

# A target's name is whatever the build said, kept in the store's named
# counters and metadata: every listing shows its ESC and bidi override as
# \xNN and \u{XXXX} text (SPEC 9), --json as \u escapes, never raw.
testStoredNamesAreEscapedInEveryListing() {
	write_sources
	"$CJC" --target $'evil\e[2J\xe2\x80\xaename' "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local key out
	key=$("$CJC" ls --json | jq -r '.[0].key')
	"$CJC" stats --by-target >out.stats && "$CJC" ls >out.ls && "$CJC" show "$key" >out.show &&
		"$CJC" report --markdown >out.md && "$CJC" stats --format=openmetrics >out.metrics &&
		"$CJC" stats --json --by-target >out.json && "$CJC" show "$key" --json >out.show.json || fail
	for out in out.stats out.ls out.show; do
		assertTrue "$out escapes: $(grep -a evil $out)" "grep -qF 'evil\x1b[2J\u{202e}name' $out"
	done
	# Markdown escapes the backslashes and brackets again: it renders as the others show it
	assertTrue "markdown escapes" "grep -qF 'evil\\\\x1b\\[2J\\\\u{202e}name' out.md"
	# OpenMetrics escapes the backslashes again: the label reads as the others show it
	assertTrue "openmetrics escapes: $(grep -a -m1 evil out.metrics)" "grep -qF 'target=\"evil\\\\x1b[2J\\\\u{202e}name\"' out.metrics"
	for out in out.stats out.ls out.show out.md out.metrics out.json out.show.json; do
		assertFalse "$out: no ESC or U+202E" "grep -q $'\e\\|\xe2\x80\xae' $out"
	done
	assertEquals "the name, whole, in JSON" $'evil\e[2J\xe2\x80\xaename' "$(jq -r '.targets | keys[0]' out.json)"
}

testConfigShowsWhereEachSettingCameFrom() {
	mkdir -p "$CJC_DIR"
	printf '[cache]\nmax_size = 2G\n' >"$CJC_DIR/cudajitcache.conf"
	CJC_READONLY=1 "$CJC" config >config.txt || fail
	assertTrue "file origin" "grep -q 'max_size.*2G.*cudajitcache.conf:2' config.txt"
	assertTrue "env origin" "grep -q 'readonly.*CJC_READONLY' config.txt"
	assertTrue "default origin" "grep -q 'debug.*default' config.txt"
	"$CJC" config --json | grep -q '"origin"' || fail "json"
}

testVerifyFindsAndFixesDamage() {
	populate
	"$CJC" verify >/dev/null || fail "a clean store verifies"
	local entry
	entry=$("$CJC" ls --json | sed -n 's/.*"path": "\(.*\)".*/\1/p' | head -1)
	chmod u+w "$entry/metadata.json"
	echo '{' >"$entry/metadata.json"
	"$CJC" verify >verify.txt
	assertEquals "exit 1" 1 $?
	assertTrue "names the entry" "grep -q \"$(basename "$entry")\" verify.txt"
	"$CJC" verify --json >verify.json
	assertEquals "exit 1 with --json" 1 $?
	assertTrue "json names the entry and reason" "grep -q '\"bad\": 1' verify.json && grep -q '\"reason\": \"metadata.json is not valid JSON' verify.json"
	"$CJC" verify --fix >/dev/null
	"$CJC" verify >/dev/null || fail "fixed"
	assertEquals "quarantined" 1 "$(ls "$CJC_DIR"/v1/*/quarantine | wc -l)"
	assertEquals "entries" 1 "$(entry_count)"
}

testCleanEmptiesTheStore() {
	populate
	"$CJC" clean >/dev/null || fail
	assertEquals "entries" 0 "$(entry_count)"
	"$CJC" "$NVCC" -c k.cu -o c.o -arch=$ARCH || fail
	expect_nvcc_runs 3
}

testGcReclaimsOnlyOrphanedStaging() {
	"$CJC" stats >/dev/null || fail
	local staging host
	staging=$(echo "$CJC_DIR"/v1/*/staging)
	host=$(cjc_host)
	mkdir "$staging/s.$host.999999999.0000abcd" "$staging/s.$host.$$.0000abcd" \
		"$staging/s.otherhost.1.0000abcd" "$staging/s.otherhost.2.0000abcd"
	touch -d '3 days ago' "$staging/s.otherhost.1.0000abcd"
	"$CJC" gc >gc.txt || fail
	assertFalse "dead writer's staging reclaimed" "[ -e '$staging/s.$host.999999999.0000abcd' ]"
	assertTrue "live writer's staging kept" "[ -e '$staging/s.$host.$$.0000abcd' ]"
	assertFalse "another host's old staging reclaimed" "[ -e '$staging/s.otherhost.1.0000abcd' ]"
	assertTrue "another host's recent staging kept" "[ -e '$staging/s.otherhost.2.0000abcd' ]"
	assertTrue "report" "grep -q 'reclaimed 2' gc.txt"
	"$CJC" gc --older-than 0s >/dev/null || fail
	assertFalse "--older-than" "[ -e '$staging/s.otherhost.2.0000abcd' ]"
	"$CJC" gc --max-size 1X 2>err.txt
	assertEquals "bad size" 2 $?
	assertTrue "says what a size is" "grep -q 'not a size' err.txt"
}

testConfigThatIsADirectory() {
	CJC_CONFIG=$TEST_DIR "$CJC" config >/dev/null 2>err.txt
	assertEquals "exit 1" 1 $?
	assertTrue "names the file: $(cat err.txt)" "grep -q \"$TEST_DIR: cannot read: Is a directory\" err.txt"
	CJC_CONFIG=$TEST_DIR cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>/dev/null || fail "the build broke"
	assertTrue "compiled uncached" "[ -s a.cubin ]"
}

testBadSubcommandUsage() {
	"$CJC" ls --bogus 2>err.txt
	assertEquals "usage error" 2 $?
	assertTrue "message" "grep -q bogus err.txt"
}

# docs/settings.md's table, `cjc config` and `cjc --help` come from one table.
testReadmeSettingsTableIsTheTable() {
	sed -n 's/^| `\([a-z_]*\)` | `\(CJC_[A-Z_]*\)` |.*/\1 \2/p' "$CJC_SOURCE_DIR/docs/settings.md" | sort >readme.txt
	"$CJC" config --json | jq -r 'to_entries[] | "\(.key) \(.value.env)"' | sort >table.txt
	assertTrue "README and table: $(diff readme.txt table.txt)" "cmp -s readme.txt table.txt"
	assertTrue "some rows" "[ $(wc -l <table.txt) -gt 10 ]"
	"$CJC" --help >help.txt
	local name
	for name in $(cut -d' ' -f1 table.txt); do
		assertTrue "--help names $name" "grep -q \"^  $name \" help.txt"
	done
}

. "$SHUNIT2"
