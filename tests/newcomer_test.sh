#!/bin/bash
# What a new user meets first (issue 39): a misspelt subcommand, a usage
# error, a store that cannot be used or written, cjc called as nvcc, and
# gc leaving nothing behind the entries it evicts.  Each mistake gets one
# line and the right exit status; the cache keeps working where it can.
. "$(dirname "$0")/helpers.sh"

# one_line FILE: the file holds exactly one line
one_line() {
	assertEquals "one line: $(cat "$1")" 1 "$(wc -l <"$1")"
}

testMisspeltSubcommandRunsNothing() {
	local word near
	for word in stat:stats clear:clean sats:stats; do
		near=${word#*:} word=${word%:*}
		"$CJC" "$word" >out.txt 2>err.txt
		assertEquals "cjc $word: exit status" 2 $?
		assertTrue "cjc $word: $(cat err.txt)" \
			"grep -q \"unknown subcommand '$word'; did you mean '$near'?\" err.txt"
		one_line err.txt
		assertFalse "cjc $word ran nothing" "[ -s out.txt ]"
	done
	"$CJC" frobnicate 2>err.txt
	assertEquals "exit status" 2 $?
	assertTrue "$(cat err.txt)" "grep -q \"'frobnicate' is neither a subcommand nor a compiler\" err.txt"
	# a compiler by its name (found on PATH) still compiles; nothing else was counted
	PATH=$TEST_DIR/bin:$PATH "$CJC" nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail "cjc nvcc"
	expect_stat uncacheable 0
	expect_stat misses 1
	expect_nvcc_runs 1
}

testUsageErrorIsOneLineAndAPointer() {
	local args
	for args in "-c k.cu" "gc --no-such-flag" "show" "gc --max-size" "--target"; do
		# shellcheck disable=SC2086
		"$CJC" $args 2>err.txt
		assertEquals "cjc $args: exit status" 2 $?
		one_line err.txt
		assertTrue "cjc $args: $(cat err.txt)" "grep -q \"see 'cjc --help'\" err.txt"
	done
}

# ccache's masquerade: a link named nvcc to cjc ahead of the toolkit on PATH.
testCalledAsNvccThroughALink() {
	local links=$TEST_DIR/links
	mkdir "$links" && ln -s "$CJC" "$links/nvcc"
	# the link's directory twice, before the (counting) nvcc
	PATH=$links:$links:$TEST_DIR/bin:$PATH nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err.txt ||
		fail "first compile: $(cat err.txt)"
	PATH=$links:$TEST_DIR/bin:$PATH nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail "second"
	assert_same_devcode a.cubin b.cubin
	expect_stat misses 1
	expect_stat hits 1
	expect_nvcc_runs 1
	# no nvcc but itself: one line, 127, and no recursion
	PATH=$links:$links:/usr/bin:/bin timeout 60 nvcc --cubin k.cu -o c.cubin 2>err.txt
	assertEquals "exit status" 127 $?
	one_line err.txt
	assertTrue "$(cat err.txt)" "grep -q 'no nvcc other than cjc itself is on PATH' err.txt"
}

# make_build DIR [WRAPPER...]: a Makefile building four cubins through
# cjc, run with -j2 (under WRAPPER); its stderr in DIR.err
make_build() {
	local i dir=$1
	shift
	mkdir -p "$dir"
	for i in 1 2 3 4; do sed "s/SCALE/(SCALE + $i)/" k.cu >"$dir/k$i.cu" && cp k.h dev.h host.h "$dir/"; done
	printf 'all: k1.cubin k2.cubin k3.cubin k4.cubin\n%%.cubin: %%.cu\n\t%s %s --cubin $< -o $@ -arch=%s\n' \
		"$MAKE_CJC" "$NVCC" "$ARCH" >"$dir/Makefile"
	"$@" make -s -j2 -C "$dir" 2>"$dir.err"
}

# Said once per build (a session's compiles without a minute's pause), not
# once per compile; a build in another session says it again.
testUnusableStoreIsSaid() {
	CJC_DIR=/dev/null/x make_build one || fail "build broke: $(cat one.err)"
	assertTrue "output made" "[ -s one/k4.cubin ]"
	one_line one.err
	assertTrue "$(cat one.err)" "grep -q 'cache directory /dev/null/x is unusable' one.err"
	CJC_DIR=/dev/null/x make_build two setsid -w || fail "build broke: $(cat two.err)"
	one_line two.err
	assertTrue "another build says it: $(cat two.err)" "grep -q 'is unusable' two.err"
	expect_nvcc_runs 8
	# a control character in the path is refused (docs/settings.md#mistakes),
	# said escaped, never raw
	CJC_DIR=$'/dev/null/\e[2Jx' XDG_CACHE_HOME=$TEST_DIR/xdg setsid -w "$CJC" "$NVCC" --cubin k.cu \
		-o esc.cubin -arch=$ARCH 2>esc.err || fail "compile broke: $(cat esc.err)"
	assertTrue "escaped: $(cat esc.err)" \
		"grep -qF \"CJC_DIR: bad value '/dev/null/\x1b[2Jx' for dir: expected no control characters\" esc.err &&
		grep -qF 'ignored: dir stays $TEST_DIR/xdg/cudajitcache (default)' esc.err"
	assertEquals "no escape character said" 0 "$(grep -c $'\e' esc.err)"
	CJC_DIR=/dev/null/x "$CJC" config >out.txt 2>err.txt
	assertEquals "config's exit status" 1 $?
	assertTrue "config says it: $(cat out.txt)" "grep -q '^store: /dev/null/x: unusable' out.txt"
	"$CJC" config >out.txt || fail "a store that will be made is fine"
	assertTrue "$(cat out.txt)" "grep -q '^store: .*: not made yet' out.txt"
}

# root without the capabilities that let it write anything: the store is
# read-only for it, as for a user without write access to a team's store
readonly_root() {
	setpriv --bounding-set=-dac_override,-dac_read_search,-fowner -- "$@"
}

testReadOnlyStoreIsSaid() {
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
		startSkipping
		return
	fi
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	chmod -R a-w "$CJC_DIR"
	readonly_root "$CJC" "$NVCC" --cubin k.cu -o b.cubin -arch=$ARCH 2>err.txt || fail "hit"
	assertFalse "a hit loses nothing: $(cat err.txt)" "[ -s err.txt ]"
	readonly_root "$CJC" "$NVCC" --cubin k.cu -o c.cubin -arch=$ARCH -DX=1 2>err.txt || fail "miss"
	assertTrue "output made" "[ -s c.cubin ]"
	one_line err.txt
	assertTrue "$(cat err.txt)" "grep -q 'is read-only for you: what is compiled is not kept' err.txt"
	readonly_root "$CJC" "$NVCC" --cubin k.cu -o c.cubin -arch=$ARCH -DX=3 2>err.txt || fail "miss"
	assertFalse "said once per build: $(cat err.txt)" "[ -s err.txt ]"
	readonly_root "$CJC" why c.cubin 2>err.txt
	assertEquals "why's exit status" 1 $?
	assertTrue "why says why: $(cat err.txt)" "grep -q 'read-only for you' err.txt"
	readonly_root "$CJC" config >out.txt 2>/dev/null
	assertEquals "config's exit status" 1 $?
	assertTrue "$(cat out.txt)" "grep -q '^store: .*: read-only for you' out.txt"
	# meant so: quiet
	CJC_READONLY=1 readonly_root "$CJC" "$NVCC" --cubin k.cu -o d.cubin -arch=$ARCH -DX=2 2>err.txt ||
		fail "miss, readonly"
	assertFalse "readonly set: nothing to say: $(cat err.txt)" "[ -s err.txt ]"
	CJC_READONLY=1 readonly_root "$CJC" config >/dev/null || fail "readonly set: config is fine"
	chmod -R u+w "$CJC_DIR"
}

# What why prints of a journal record goes through the same escaping as
# the paths: a planted record cannot drive the terminal.
testWhyEscapesEveryField() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	local journal
	journal=$(echo "$CJC_DIR"/v1/*/journal-"$(id -u)")
	tail -n 1 "$journal" | jq -c '.time = "t\u001b[2J" | .result = "miss" | .entry = "e\u001b[2J" |
		.compared_with = "c\u001b[2J" | .not_published = "n\u001b[2J" | .facts.rule = "r\u001b[2J"' \
		>>"$journal"
	"$CJC" why a.cubin >why.txt || fail "why"
	assertFalse "no escape byte: $(cat -v why.txt)" "grep -q $'\x1b' why.txt"
	assertEquals "each field escaped: $(cat why.txt)" 5 "$(grep -c '\\x1b\[2J' why.txt)"
}

# files FIND-ARGS...: how many regular files under the store match
files() { find "$CJC_DIR" -type f "$@" | wc -l; }

testGcTakesTheBookkeepingWithTheEntries() {
	local i
	for i in 1 2 3; do
		cjc_nvcc --cubin k.cu -o k$i.cubin -arch=$ARCH -DX=$i || fail
	done
	# last used a minute ago, all of it: gc keeps what is written while it runs
	find "$CJC_DIR" -path '*/v1/*' \( -path '*/entries/*' -o -path '*/manifests/*' -o -path '*/hashes/*' \) \
		-exec touch -h -d '-1 min' {} +
	cjc_nvcc --cubin k.cu -o k4.cubin -arch=$ARCH -DX=4 || fail
	"$CJC" gc --older-than 30s >gc.txt || fail "gc: $(cat gc.txt)"
	assertTrue "$(cat gc.txt)" "grep -q 'evicted 3 of 4 entries' gc.txt"
	assertEquals "the manifest left is the entry's left" 1 "$(files -path '*/manifests/*')"
	cjc_nvcc --cubin k.cu -o again.cubin -arch=$ARCH -DX=4 || fail
	expect_stat hits 1
	find "$CJC_DIR" -path '*/v1/*' \( -path '*/entries/*' -o -path '*/manifests/*' -o -path '*/hashes/*' \) \
		-exec touch -h -d '-1 min' {} +
	"$CJC" gc --max-size 1K >gc.txt || fail "gc: $(cat gc.txt)"
	assertTrue "$(cat gc.txt)" "grep -q 'evicted 1 of 1 entries' gc.txt"
	assertEquals "manifests" 0 "$(files -path '*/manifests/*')"
	assertEquals "hash caches" 0 "$(files -path '*/hashes/*')"
	"$CJC" stats >stats.txt
	assertTrue "$(cat stats.txt)" "grep -q '^  bookkeeping *0.0 MB' stats.txt"
}

# readme_make_block: the README's Make example, as a user copies it
readme_make_block() {
	sed -n '/^```make$/,/^```$/p' "$CJC_SOURCE_DIR/README.md" | sed '1d;$d'
}

# The README's Make line where pkg-config finds no cudajitcache.pc (an
# install to a PREFIX of one's own): make stops, saying what to set; with
# PKG_CONFIG_PATH set as the README says, the rules are there.
testReadmeMakeLineSaysWhatToSet() {
	command -v pkg-config >/dev/null || { startSkipping; return; }
	local prefix=$TEST_DIR/prefix
	mkdir -p app "$TEST_DIR/no-system-pc" "$prefix/lib/pkgconfig"
	readme_make_block >app/Makefile
	touch app/main.cu
	PKG_CONFIG_LIBDIR=$TEST_DIR/no-system-pc make -C app -n main.o >out.txt 2>err.txt
	assertNotEquals "make's exit status" 0 $?
	assertTrue "says what to set: $(cat err.txt)" \
		"grep -q 'pkg-config finds no cudajitcache.pc: add PREFIX/lib/pkgconfig to PKG_CONFIG_PATH' err.txt"
	printf 'makeinclude=%s\nName: cudajitcache\nDescription: x\nVersion: 0\n' \
		"$CJC_SOURCE_DIR/modules/cudajitcache.mk" >"$prefix/lib/pkgconfig/cudajitcache.pc"
	PKG_CONFIG_PATH=$prefix/lib/pkgconfig PKG_CONFIG_LIBDIR=$TEST_DIR/no-system-pc \
		make -C app --no-print-directory -n main.o >out.txt 2>err.txt || fail "make: $(cat err.txt)"
	assertTrue "the include's rule: $(cat out.txt)" \
		"grep -q 'cjc nvcc -gencode=arch=compute_80,code=sm_80 .* -c main.cu -o main.o' out.txt"
}

# fake_installers DIR: apt-get, npm, node, sudo, dpkg-query, systemctl and
# mkdir (of npm's prefix) in DIR that install nothing and change nothing;
# apt-get's and npm's arguments go to DIR/installed, one a line
fake_installers() {
	local name
	mkdir -p "$1"
	for name in apt-get npm; do
		printf '#!/bin/sh\nprintf "%%s\\n" "$@" >>"%s/installed"\n' "$1" >"$1/$name"
	done
	printf '#!/bin/sh\nexec "$@"\n' >"$1/sudo"
	printf '#!/bin/sh\nexit 0\n' >"$1/node"
	printf '#!/bin/sh\nexit 1\n' >"$1/dpkg-query"
	printf '#!/bin/sh\nexit 0\n' >"$1/systemctl"
	printf '#!/bin/sh\nexit 0\n' >"$1/mkdir"
	chmod +x "$1"/*
}

# Who only wants the tool gets no test servers; --tests (what .ci/run and
# the README's tests run) installs them.
testInstallDepsLeavesTheTestServersToTests() {
	local fake=$TEST_DIR/fake package
	fake_installers "$fake"
	PATH=$fake:$PATH "$CJC_SOURCE_DIR/scripts/install-deps" >out.txt 2>&1 || fail "install-deps: $(cat out.txt)"
	assertTrue "builds: $(cat "$fake/installed")" "grep -qx cmake '$fake/installed' && grep -qx libcurl4-openssl-dev '$fake/installed'"
	for package in chromium redis-server nginx-light docker-registry nodejs shunit2 s3rver@3.7.1; do
		assertFalse "no $package" "grep -qx '$package' '$fake/installed'"
	done
	rm "$fake/installed"
	PATH=$fake:$PATH "$CJC_SOURCE_DIR/scripts/install-deps" --tests >out.txt 2>&1 || fail "--tests: $(cat out.txt)"
	for package in cmake chromium redis-server nginx-light docker-registry shunit2 s3rver@3.7.1; do
		assertTrue "--tests: $package" "grep -qx '$package' '$fake/installed'"
	done
	assertTrue "CI installs the tests' dependencies" \
		"grep -q '^step \"install-deps\" scripts/install-deps --tests$' '$CJC_SOURCE_DIR/.ci/run'"
}

# The quick start's last words, to a newcomer who installed to a PREFIX of
# their own: where cjc is, and commands that, run in a fresh shell, reach
# it and the store the examples used (not the one cjc uses by default).
testQuickstartSaysWhereCjcAndTheExamplesStoreAre() {
	local prefix="$TEST_DIR/my prefix" fake=$TEST_DIR/fake
	mkdir -p "$prefix/bin" && ln -s "$CJC" "$prefix/bin/cjc"
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail "the examples' compile"
	# should it build (it must not), it installs and builds nothing
	fake_installers "$fake"
	printf '#!/bin/sh\nexit 1\n' >"$fake/cmake" && chmod +x "$fake/cmake"
	PATH=$fake:$PATH PREFIX=$prefix XDG_CACHE_HOME=$TEST_DIR/xdg \
		"$CJC_SOURCE_DIR/scripts/quickstart" --next-steps >next.txt 2>&1 || fail "$(cat next.txt)"
	assertTrue "where cjc went: $(cat next.txt)" "grep -qxF '== cjc is installed as $prefix/bin/cjc' next.txt"
	assertTrue "the default store named: $(cat next.txt)" "grep -qF 'your builds use $TEST_DIR/xdg/cudajitcache' next.txt"
	sed -n 's/^    //p' next.txt >steps.sh
	env -i HOME="$TEST_DIR" PATH=/usr/bin:/bin bash -e steps.sh >stats.txt 2>&1 || fail "$(cat steps.sh): $(cat stats.txt)"
	assertTrue "the examples' store: $(cat stats.txt)" \
		"grep -qF 'cache directory  $CJC_DIR/' stats.txt && grep -qx 'misses *1' stats.txt"
}

. "$SHUNIT2"
