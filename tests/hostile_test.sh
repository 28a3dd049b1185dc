#!/bin/bash
# hostile_test.sh - docs/store.md, trust: whatever the store holds may have been planted by
# someone else.  At every path of the layout in turn, a symbolic link (to
# /dev/zero, to a directory outside the store), a FIFO, a huge sparse file
# or a directory where a file belongs is planted; then a compile, ls,
# verify, gc, stats, why and audit run under a 1 GB address-space limit, and
# report and stats' OpenMetrics where they read (the counters, the journals).
# None may crash, hang, write outside the store, or fail a compile that
# plain nvcc completes; the compile's output is nvcc's.
#
# Each case's compile (a cubin: the kind is not the subject) is a miss (its nvcc, CASE_NVCC, is not the template's),
# so publication meets the planted file too.  The audit then checks both
# entries up to running the compilers' --version; the rebuild itself (audit
# steps 4 and 5) runs nvcc in a scratch directory, outside the store, on
# entries the planted file cannot be in, so it is done for real once
# (testTheUndamagedStoreAuditsReproducible) and in the cases at ids/, whose
# records could name the program an audit runs.  CJC_SHARD=I/N runs the
# I-th of N shares of the cases (ctest runs hostile_1 and hostile_2 side by
# side); CI's plain and sanitized builds take every other case each
# (half_here), so CI plants every case once.

. "$(dirname "$0")/helpers.sh"

# Every command gets this long before the suite calls it a hang: a bound,
# not a guess at timing (each takes a second or two).
LIMIT=120
SENTINEL=k.$(cjc_host).999999.0badf00d
# This suite divides its cases between shares itself (my_cases).
SHARDS_ITSELF=1
# The address-space limit (1 GB) is for the plain build: AddressSanitizer
# reserves terabytes of shadow memory up front, and finds overruns itself.
MEMORY=1000000
[ -n "$SANITIZED" ] && MEMORY=unlimited

oneTimeSetUp() {
	use_suite_dir hostile
	TEMPLATE=$SUITE_DIR/template
	export CJC_DIR=$TEMPLATE CJC_LOG=$SUITE_DIR/template.log NVCC_LOG=$SUITE_DIR/nvcc.log
	# signed, so the layout has metadata.sig, which verify reads with trusted_keys
	openssl genpkey -algorithm ed25519 -out "$SUITE_DIR/sign.pem" 2>/dev/null &&
		openssl pkey -in "$SUITE_DIR/sign.pem" -pubout -out "$SUITE_DIR/trusted.pem" || exit 1
	CJC_SIGN_KEY=$SUITE_DIR/sign.pem "$CJC" --target app "$NVCC" --cubin k.cu -o k.cubin -MD -arch=$ARCH || exit 1
	# the template's entries no longer rebuild: their nvcc prints another --version
	make_nvcc_wrapper "$NVCC" 'template nvcc, changed'
	CASE_NVCC=$SUITE_DIR/bin/case/nvcc
	mkdir -p "$(dirname "$CASE_NVCC")"
	"$CJC" "$NVCC" -E k.cu >/dev/null || exit 1 # an uncacheable reason
	"$REAL_NVCC" --cubin k.cu -o plain.cubin -arch=$ARCH || exit 1
	NS=$(echo "$TEMPLATE"/v1/*)
	PATHS=$(cd "$NS" && find . -mindepth 1 | sed 's|^\./||' | grep -v '^staging/' | sort)
	echo "$PATHS" | grep -q metadata.json && echo "$PATHS" | grep -q metadata.sig || exit 1
	unset CJC_DIR
}

oneTimeTearDown() { rm -rf "$SUITE_DIR"; }

# plant KIND PATH: replaces PATH (in the store under test) by KIND.
plant() {
	local p=$1/$2
	chmod -R u+w "$(dirname "$p")" 2>/dev/null
	rm -rf "$p"
	case $3 in
	devzero) ln -s /dev/zero "$p" ;;
	outside) ln -s "$OUTSIDE" "$p" ;;
	fifo) mkfifo "$p" ;;
	huge) truncate -s 2500M "$p" ;;
	dir) mkdir "$p" ;;
	esac
}

# run_bounded NAME MAX-STATUS CMD...: runs CMD under the limits; fails on a
# crash, a hang or a status above MAX-STATUS (a compile: 0; a subcommand
# says 1 for a bad entry or a store it will not use).
run_bounded() {
	local what=$1 max=$2 rc
	shift 2
	(ulimit -v $MEMORY; timeout -s KILL $LIMIT "$@") >"$SUITE_DIR/case.out" 2>&1
	rc=$?
	assertTrue "$CASE: $what: status $rc: $(tail -3 "$SUITE_DIR/case.out")" "[ $rc -le $max ]"
}

# check_case PATH KIND
check_case() {
	CASE="$2 at $1"
	local store=$SUITE_DIR/store
	rm -rf "$store" "$OUTSIDE" && mkdir -p "$OUTSIDE" && cp -a "$TEMPLATE" "$store"
	# outside, a file that gc would take for a dead writer's old temporary
	touch -d '2 days ago' "$OUTSIDE/$SENTINEL"
	plant "$(echo "$store"/v1/*)" "$1" "$2"
	export CJC_DIR=$store
	rm -f out.cubin
	make_nvcc_wrapper "$CASE_NVCC"
	run_bounded compile 0 "$CJC" --target app "$CASE_NVCC" --cubin k.cu -o out.cubin -MD -arch=$ARCH
	assertTrue "$CASE: the compile's output is nvcc's" "cmp -s out.cubin plain.cubin"
	case $1 in
	ids | ids/*) ;; # rebuilt for real: see the top of the file
	*) make_nvcc_wrapper "$CASE_NVCC" 'case nvcc, changed' ;;
	esac
	run_bounded ls 1 "$CJC" ls
	run_bounded verify 1 "$CJC" verify
	CJC_TRUSTED_KEYS=$SUITE_DIR/trusted.pem run_bounded "verify, signatures" 1 "$CJC" verify
	run_bounded gc 1 "$CJC" gc
	run_bounded stats 1 "$CJC" stats
	run_bounded why 1 "$CJC" why out.cubin
	# report and the OpenMetrics writer read the counters (stats/) and the
	# journals (at the top): only a case there can reach them
	if [[ $1 != */* || $1 == stats/* ]]; then
		run_bounded report 1 "$CJC" report
		run_bounded metrics 1 "$CJC" stats --format=openmetrics
	fi
	run_bounded audit 1 "$CJC" audit all
	assertEquals "$CASE: nothing written or removed outside the store" "$SENTINEL" "$(ls -A "$OUTSIDE")"
	unset CJC_DIR
}

# path_class PATH: PATH with what differs from one template to another
# named by its kind: a key or digest (H), a shard (S), a counter shard (N).
path_class() {
	sed -E 's#[0-9a-f]{16,}#H#g; s#^([a-z]+)/[0-9a-f]{2}(/|$)#\1/S\2#; s#^stats/[0-9]+$#stats/N#' <<<"$1"
}

# layout_cases: "CLASS KIND PATH" a line, every kind at every path, in the
# order of their classes (every share's template has the same classes, not
# the same paths).  Directories get links, FIFOs and files; files get links,
# FIFOs, huge files and directories.
layout_cases() {
	local p k kinds
	for p in $PATHS; do
		if [ -d "$NS/$p" ]; then kinds="outside fifo huge"; else kinds="devzero outside fifo huge dir"; fi
		for k in $kinds; do echo "$(path_class "$p") $k $p"; done
	done | LC_ALL=C sort -k1,2
}

# The cases this run takes, "PATH KIND" a line, a class and kind at a time:
# every other one in each of CI's two builds (half_here: the first, third,
# ... in the plain build; the second, fourth, ... under the sanitizers; so
# every path gets kinds in both), then every N-th of those from the I-th
# (CJC_SHARD=I/N).  So CI plants every class and kind once, at each of its
# paths.
my_cases() {
	local shard=${CJC_SHARD:-1/1} plain=0 sanitized=0
	half_here plain >/dev/null && plain=1
	half_here sanitized >/dev/null && sanitized=1
	layout_cases | awk -v p=$plain -v s=$sanitized -v i="${shard%/*}" -v n="${shard#*/}" '
		{ c = $1 " " $2; if (c != last) { m++; last = c; mine = m % 2 ? p : s; if (mine) j++ } }
		mine && j % n == i % n { print $3, $2 }'
}

# first_share: whether this run is the first share (cases outside the
# layout's run in one share only).
first_share() {
	local shard=${CJC_SHARD:-1/1}
	[ "${shard%/*}" = 1 ]
}

testEveryPathOfTheLayout() {
	local p k n=0 total
	OUTSIDE=$SUITE_DIR/outside
	total=$(layout_cases | wc -l)
	assertTrue "every kind of file is covered: $total cases" "[ $total -gt 40 ]"
	while read -r p k; do
		check_case "$p" "$k"
		n=$((n + 1))
	done < <(my_cases)
	echo "planted $n of $total cases (share ${CJC_SHARD:-1/1}) at $(echo "$PATHS" | wc -l) paths"
	assertTrue "this share has cases" "[ $n -gt 0 ]"
}

# The rebuild that the damaged cases leave out: an undamaged copy of the
# store, with the template's nvcc as it was, audits reproducible.
testTheUndamagedStoreAuditsReproducible() {
	first_share || return 0
	CASE=undamaged
	rm -rf "$SUITE_DIR/store" && cp -a "$TEMPLATE" "$SUITE_DIR/store"
	make_nvcc_wrapper "$NVCC"
	CJC_DIR=$SUITE_DIR/store run_bounded audit 0 "$CJC" audit all
	assertTrue "reproducible: $(cat "$SUITE_DIR/case.out")" "grep -q '1 reproducible' '$SUITE_DIR/case.out'"
	make_nvcc_wrapper "$NVCC" 'template nvcc, changed'
}

testPlantedConfigFileStillCompiles() {
	local k
	first_share || return 0
	OUTSIDE=$SUITE_DIR/outside
	for k in devzero fifo huge dir; do
		CASE="$k as cudajitcache.conf"
		rm -rf "$SUITE_DIR/store" && cp -a "$TEMPLATE" "$SUITE_DIR/store"
		plant "$SUITE_DIR/store" cudajitcache.conf "$k"
		export CJC_DIR=$SUITE_DIR/store
		use_run_dir "$SUITE_DIR/$k" # a build of its own: said again (once per build)
		rm -f out.cubin
		run_bounded compile 0 "$CJC" "$REAL_NVCC" --cubin k.cu -o out.cubin -arch=$ARCH
		assertTrue "$CASE: compiled" "[ -s out.cubin ]"
		assertTrue "$CASE: says why: $(cat "$SUITE_DIR/case.out")" \
			"grep -q 'cudajitcache.conf: .*cannot read' '$SUITE_DIR/case.out'"
		unset CJC_DIR
	done
}

. "$SHUNIT2"
