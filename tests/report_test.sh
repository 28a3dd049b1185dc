#!/bin/bash
# report_test.sh - `cjc report` (docs/report.md): the page renders in a real
# headless Chromium without a console message and shows the numbers that
# `cjc stats --json` gives; its Markdown summary; `cjc stats
# --format=openmetrics` read by prometheus_client's parser; a merged report
# of three stores adds up; and the CI recipes of examples/ci/, whose store
# restored at another path still hits.  One template store, compiled once
# (--cubin), is copied for each case; what the journal holds beyond it is
# made up by bench/make_journal.py.  The page and its screenshots (a monitor's
# width and a phone's) are kept in $CJC_BUILD_DIR/tests/report/.

. "$(dirname "$0")/helpers.sh"

TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$TESTS_DIR")
PY=/usr/bin/python3 # Debian's, with python3-prometheus-client and python3-yaml
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || echo none)}
if [ ! -x "$CHROMIUM" ] || ! $PY -c 'import prometheus_client, yaml' 2>/dev/null; then
	echo "chromium, python3-prometheus-client or python3-yaml not found: skipping" >&2
	exit 125
fi
OUT=${CJC_BUILD_DIR:-${TMPDIR:-/tmp}}/tests/report
REFUSING=http://127.0.0.1:9/cjc
mkdir -p "$OUT"

# past_a_tick FILE: waits until two of the kernel's coarse clock ticks have
# passed since FILE was last changed: a miss publishes nothing that changed
# in the tick it starts in (miss.c).  Waits for that state, not for a time.
past_a_tick() {
	local probe=$SUITE_DIR/tick seen ticks=0
	seen=$(stat -c %z "$1")
	while [ $ticks -lt 2 ]; do
		touch "$probe"
		if [[ $(stat -c %z "$probe") > $seen ]]; then
			seen=$(stat -c %z "$probe")
			ticks=$((ticks + 1))
		fi
	done
}

# The template: app misses (nothing earlier), hits, misses again (k.h
# changed) with a remote store that refuses (nothing listens on port 9 of
# the loopback); lib hits that entry; one compile passes through.
oneTimeSetUp() {
	use_suite_dir report
	export CJC_DIR=$SUITE_DIR/template NVCC_LOG=$SUITE_DIR/nvcc.log CJC_LOG=$SUITE_DIR/cjc.log
	past_a_tick k.cu
	"$CJC" --target app "$NVCC" --cubin k.cu -o app.cubin -arch=$ARCH &&
		"$CJC" --target app "$NVCC" --cubin k.cu -o app.cubin -arch=$ARCH || exit 1
	sed -i 's/2.0f/3.0f/' k.h && past_a_tick k.h
	CJC_REMOTE="$REFUSING|connect-timeout=30s" \
		"$CJC" --target app "$NVCC" --cubin k.cu -o app.cubin -arch=$ARCH &&
		"$CJC" --target lib "$NVCC" --cubin k.cu -o lib.cubin -arch=$ARCH &&
		"$CJC" "$NVCC" --version >/dev/null || exit 1
	NS=$(basename "$("$CJC" stats --json | jq -r .dir)")
	[ "$("$CJC" stats --json | jq -c '[.hits, .misses, .uncacheable]')" = "[2,2,1]" ] || exit 1
}

oneTimeTearDown() {
	rm -rf "$SUITE_DIR"
}

# store NAME: a copy of the template at $SUITE_DIR/NAME, as CJC_DIR.
store() {
	rm -rf "${SUITE_DIR:?}/$1" && cp -a "$SUITE_DIR/template" "$SUITE_DIR/$1"
	CJC_DIR=$SUITE_DIR/$1
}

# journal DIR: the namespace directory of the store at DIR.
journal_dir() {
	echo "$1/v1/$NS"
}

# browse PNG WIDTH,HEIGHT PAGE [ARG...]: Chromium, headless, renders the page
# and takes a screenshot; its stderr (with the console) in PNG.log.
browse() {
	local png=$1 size=$2 page=$3
	shift 3
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--no-first-run --hide-scrollbars --force-device-scale-factor=1 \
		--user-data-dir="$SUITE_DIR/chromium" --enable-logging=stderr --v=0 \
		--window-size="$size" --screenshot="$png" "$@" "file://$page" 2>"$png.log"
}

# number FILE KEY STAT: a number read back from a page (report_check.py page).
number() {
	jq -r --arg k "$2" --arg s "$3" '.[$k][$s]' "$1"
}

# The page a CI owner opens, with two weeks of journal besides the
# template's: no console message at a monitor's width, and every counter as
# `cjc stats --json` has it.  At a phone's width the page carries a probe,
# an image from elsewhere, which its Content-Security-Policy refuses on the
# console: the one message there, so a message would not go unseen.
testPageRendersWithoutConsoleMessagesAndShowsTheCounters() {
	store page
	$PY "$ROOT/bench/make_journal.py" 3000 14 >"$(journal_dir "$CJC_DIR")/journal-4242" || fail
	"$CJC" report >"$OUT/report.html" || fail "report"
	"$CJC" stats --json --by-target >stats.json
	browse "$OUT/report-monitor.png" 1280,3000 "$OUT/report.html" --dump-dom >dom.html
	assertEquals "chromium" 0 $?
	assertTrue "screenshot" "[ -s '$OUT/report-monitor.png' ]"
	assertFalse "console: $(grep CONSOLE "$OUT/report-monitor.png.log")" \
		"grep -q ':CONSOLE' '$OUT/report-monitor.png.log'"
	$PY "$TESTS_DIR/report_check.py" page dom.html >page.json || fail "read the page"
	local stat
	for stat in hits misses uncacheable errors compile_failed saved_ms; do
		assertEquals "summary $stat" "$(jq .$stat stats.json)" "$(number page.json section:summary $stat)"
	done
	for stat in bytes entries evicted evicted_bytes damaged; do
		assertEquals "store $stat" "$(jq .$stat stats.json)" "$(number page.json section:store $stat)"
	done
	assertEquals "hit rate" "$(jq '.hit_rate * 100 | round' stats.json)" \
		"$(jq '."section:summary".hit_rate * 100 | round' page.json)"
	for stat in hits misses uncacheable saved_ms; do
		assertEquals "app $stat" "$(jq .targets.app.$stat stats.json)" "$(number page.json target:app $stat)"
		assertEquals "lib $stat" "$(jq .targets.lib.$stat stats.json)" "$(number page.json target:lib $stat)"
	done
	assertEquals "the passed-through compile" 1 \
		"$(number page.json "reason:a query (--version, --help, --list-gpu-*)" uncacheable)"
	for stat in remote_errors remote_timeouts remote_hits; do
		assertEquals "remote $stat" "$(jq ".remotes[\"$REFUSING\"].$stat" stats.json)" \
			"$(number page.json "remote:$REFUSING" $stat)"
	done
	assertEquals "the refusal counted" 1 "$(number page.json "remote:$REFUSING" remote_errors)"
	assertEquals "records of the journal" 3005 "$(number page.json section:over-time journal_records)"
	assertTrue "charts drawn" "[ $(jq .charts.svg page.json) -ge 2 ] && [ $(jq .charts.rect page.json) -gt 20 ]"
	sed 's|</h1>|</h1><img hidden src="http://127.0.0.1:9/probe.png">|' "$OUT/report.html" >"$SUITE_DIR/probed.html"
	browse "$OUT/report-phone.png" 390,3400 "$SUITE_DIR/probed.html" || fail "phone"
	assertEquals "the probe's refusal alone: $(grep CONSOLE "$OUT/report-phone.png.log")" 1 \
		"$(grep -c ':CONSOLE' "$OUT/report-phone.png.log")"
	assertTrue "refused" "grep -q ':CONSOLE.*probe.png.*Content Security Policy' '$OUT/report-phone.png.log'"
	echo "report_test: the page and its screenshots are in $OUT"
}

# Each miss under the cause `cjc why` names first; what a store planted in
# a path is escaped, in the page and in the summary.
testCausesAreWhyWordsAndEscaped() {
	store causes
	local ns miss
	ns=$(journal_dir "$CJC_DIR")
	miss=$(grep -h '"result":"miss"' "$ns"/journal-* | grep -m1 'k.h')
	jq -c '.output = "/x/a|b_<script>.o" | .time = "2999-01-01T00:00:00Z"' <<<"$miss" >>"$ns/journal-4243"
	"$CJC" report >page.html && "$CJC" report --markdown >summary.md || fail
	$PY "$TESTS_DIR/report_check.py" page page.html >page.json
	assertEquals "header changes" 2 "$(number page.json "cause:a source or header changed" misses)"
	assertEquals "nothing earlier" 1 "$(number page.json "cause:no earlier compile is recorded" misses)"
	assertTrue "the example is the latest, in why's words" \
		"grep -q 'miss: k.h changed<br><span class=\"path\">/x/a|b_&lt;script&gt;.o' page.html"
	assertFalse "no tag planted" "grep -q '<script' page.html"
	assertTrue "summary escapes" "grep -qF '/x/a\\|b\\_\\<script\\>.o' summary.md"
	assertTrue "summary's counts" "grep -q '^| 2 | 2 | [0-9.]* [ms]* | 1 | 0 | 0 |' summary.md"
	assertTrue "summary's remote store" "grep -qF '| $REFUSING | 0 | 0 | 1 | 0 |' summary.md"
}

testOpenMetricsAreReadByPrometheusClient() {
	store metrics
	"$CJC" stats --format=openmetrics >metrics.txt || fail
	"$CJC" stats --json --by-target >stats.json
	$PY "$TESTS_DIR/report_check.py" metrics metrics.txt >samples.json
	assertEquals "parsed: $(head -c 300 samples.json)" 0 $?
	assertEquals "ends as OpenMetrics asks" "# EOF" "$(tail -1 metrics.txt)"
	local stat
	for stat in hits misses uncacheable errors compile_failed; do
		assertEquals "$stat" "$(jq .$stat stats.json)" "$(jq ".\"cjc_${stat}_total{}\"" samples.json)"
	done
	assertEquals "bytes" "$(jq .bytes stats.json)" "$(jq '."cjc_store_bytes{}"' samples.json)"
	assertEquals "seconds saved" "$(jq '.saved_ms / 1000' stats.json)" "$(jq '."cjc_saved_seconds_total{}"' samples.json)"
	assertEquals "app's hits" "$(jq .targets.app.hits stats.json)" \
		"$(jq '."cjc_target_hits_total{target=app}"' samples.json)"
	assertEquals "a remote store's errors" "$(jq ".remotes[\"$REFUSING\"].remote_errors" stats.json)" \
		"$(jq ".\"cjc_remote_errors_total{remote=$REFUSING}\"" samples.json)"
	assertEquals "by reason" 1 \
		"$(jq '."cjc_uncacheable_by_reason_total{reason=a query (--version, --help, --list-gpu-*)}"' samples.json)"
	"$CJC" stats --format=xml 2>err.txt
	assertEquals "an unknown format" 2 $?
	assertTrue "says which" "grep -q 'text, json or openmetrics' err.txt"
}

# Three copies of the template, one with a hit more, one evicted to nothing:
# the merged page is each store's counters added up.
testMergedReportOfThreeStoresAddsUp() {
	store one && store two
	NVCC_LOG=/dev/null "$CJC" --target app "$NVCC" --cubin k.cu -o app.cubin -arch=$ARCH || fail
	assertEquals "a hit more" 3 "$(stat_value hits)"
	store three
	"$CJC" gc --max-size 1B >/dev/null || fail
	assertEquals "every entry evicted" 0 "$(stat_value entries)"
	assertEquals "and counted" 2 "$(stat_value evicted)"
	local d sum
	for d in one two three; do
		CJC_DIR=$SUITE_DIR/$d "$CJC" stats --json --by-target >"$d.json"
	done
	"$CJC" report --merge "$SUITE_DIR/one" "$SUITE_DIR/two" "$SUITE_DIR/three" >merged.html || fail
	$PY "$TESTS_DIR/report_check.py" page merged.html >page.json
	for stat in hits misses uncacheable saved_ms entries bytes evicted; do
		sum=$(jq -s "map(.$stat) | add" one.json two.json three.json)
		assertEquals "$stat added up" "$sum" "$(jq ".\"section:summary\".$stat // .\"section:store\".$stat" page.json)"
	done
	assertEquals "evicted, from the third" "$(jq .evicted three.json)" "$(number page.json section:store evicted)"
	assertEquals "app's hits" "$(jq -s 'map(.targets.app.hits) | add' one.json two.json three.json)" \
		"$(number page.json target:app hits)"
	for d in one two three; do
		assertEquals "$d's own row" "$(jq .hits $d.json)" \
			"$(number page.json "store:$SUITE_DIR/$d/v1/$NS" hits)"
	done
	assertEquals "causes add up to the journals' misses" \
		"$(cat "$SUITE_DIR"/{one,two,three}/v1/"$NS"/journal-* | grep -c '"result":"miss"')" \
		"$(jq '[to_entries[] | select(.key | startswith("cause:")) | .value.misses] | add' page.json)"
}

testJournalLinesThatAreNotRecordsAreCounted() {
	store damaged
	local ns=$(journal_dir "$CJC_DIR")
	{
		echo 'not json'
		echo '{"result":"hit"'
		printf '[%.0s' $(seq 5000) && echo
		echo '{"result":"hit","time":"yesterday"}'
		printf '\377\376{"result":"miss"}\n'
		head -c 17000000 /dev/zero | tr '\0' x && echo # over CJC_JOURNAL_MAX_LINE (16 MiB)
	} >>"$ns/journal-4244"
	"$CJC" report >page.html
	assertEquals "exit status" 0 $?
	$PY "$TESTS_DIR/report_check.py" page page.html >page.json
	assertTrue "5 skipped, the line too long among them" "grep -q '(5 damaged lines skipped)' page.html"
	assertEquals "the hit without a time is counted, not plotted" 5 \
		"$(number page.json section:over-time journal_records)"
}

testMergeOfWhatIsNotAStoreFails() {
	"$CJC" report --merge "$SUITE_DIR/template" "$SUITE_DIR/nowhere" >out.html 2>err.txt
	assertEquals "exit status" 1 $?
	assertTrue "names it" "grep -q 'nowhere is not a readable cjc store' err.txt"
	assertEquals "no half report" 0 "$(wc -c <out.html)"
	assertFalse "made nothing" "[ -e '$SUITE_DIR/nowhere' ]"
	"$CJC" report --merge 2>err.txt
	assertEquals "no directory" 2 $?
	assertTrue "says so" "grep -q -- '--merge needs at least one DIR' err.txt"
}

# examples/ci/cjc-ci.sh in one checkout, then the store and the sources
# moved elsewhere, as a CI cache restores them on another runner: a hit.
testStoreRestoredAtAnotherPathStillHits() {
	local a=$SUITE_DIR/runner-1/builds/project b=$SUITE_DIR/runner-2/x/y/project
	mkdir -p "$a" "$b"
	cp "$SUITE_DIR"/src/*.cu "$SUITE_DIR"/src/*.h "$a/" && past_a_tick "$a/k.cu"
	ci_job "$a" >"$SUITE_DIR/job1.log" 2>&1 || fail "job 1: $(cat "$SUITE_DIR/job1.log")"
	tar -C "$a" -cf "$SUITE_DIR/cache.tar" .cjc && tar -C "$b" -xf "$SUITE_DIR/cache.tar" || fail
	cp "$SUITE_DIR"/src/*.cu "$SUITE_DIR"/src/*.h "$b/" # a fresh checkout
	: >"$SUITE_DIR/nvcc-ci.log"
	ci_job "$b" >"$SUITE_DIR/job2.log" 2>&1 || fail "job 2: $(cat "$SUITE_DIR/job2.log")"
	assertEquals "nvcc ran" 0 "$(grep -vc -- --version "$SUITE_DIR/nvcc-ci.log")"
	assertTrue "the summary counts one hit: $(cat "$b/summary.md")" \
		"grep -q '^| 1 | 0 | ' '$b/summary.md'"
	assertTrue "the page" "grep -q 'data-stat=\"hits\" data-value=\"1\"' '$b/out/cjc-report.html'"
	assertTrue "the metrics" "grep -q '^cjc_hits_total 1$' '$b/out/cjc-metrics.txt'"
}

# ci_job DIR: a CI job in DIR: its store in DIR/.cjc, base_dir DIR.
ci_job() (
	cd "$1" && export CJC_DIR=$1/.cjc CJC_BASE_DIR=$1 CJC="$CJC" CJC_CI_OUT=$1/out \
		GITHUB_STEP_SUMMARY=$1/summary.md NVCC_LOG=$SUITE_DIR/nvcc-ci.log &&
		"$ROOT/examples/ci/cjc-ci.sh" begin &&
		"$CJC" --target app "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH &&
		"$ROOT/examples/ci/cjc-ci.sh" end
)

# The recipes are YAML their CI systems can read, and call the two steps
# around the build with the store where the cache keeps it.
testCiRecipesCallTheStepsAroundTheBuild() {
	$PY "$TESTS_DIR/report_check.py" yaml "$ROOT/examples/ci/github-actions.yml" >gh.json || fail
	$PY "$TESTS_DIR/report_check.py" yaml "$ROOT/examples/ci/gitlab-ci.yml" >gl.json || fail
	assertEquals "GitHub: begin, then end" '["ci/cjc-ci.sh begin","ci/cjc-ci.sh end"]' \
		"$(jq -c '[.jobs.build.steps[].run // empty | select(test("cjc-ci.sh")) | sub(" *#.*"; "")]' gh.json)"
	assertEquals "GitHub: the cache is the store" '["${{ env.CJC_DIR }}","${{ env.CJC_DIR }}"]' \
		"$(jq -c '[.jobs.build.steps[] | select(.uses // "" | test("actions/cache")) | .with.path]' gh.json)"
	assertEquals "GitHub: base_dir is the checkout" '${{ github.workspace }}' "$(jq -r .jobs.build.env.CJC_BASE_DIR gh.json)"
	assertEquals "GitLab: the cache is the store" '.cjc/' "$(jq -r '.build.cache.paths[0]' gl.json)"
	assertEquals "GitLab: store" '$CI_PROJECT_DIR/.cjc' "$(jq -r .build.variables.CJC_DIR gl.json)"
	assertEquals "GitLab: steps" '["ci/cjc-ci.sh begin","ci/cjc-ci.sh end"]' \
		"$(jq -c '[.build.before_script[], .build.after_script[]]' gl.json)"
	assertEquals "GitLab: metrics" 'cjc-metrics.txt' "$(jq -r .build.artifacts.reports.metrics gl.json)"
}

. "$SHUNIT2"
