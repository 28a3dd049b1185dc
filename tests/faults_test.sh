#!/bin/bash
# faults_test.sh - docs/store.md under failure: I/O errors injected into cjc's own
# calls on the store (tests/fault/faultinject.c, by LD_PRELOAD), reads cut
# short, and writers killed with SIGKILL at each step of publication (of a
# cubin: no host compile, and an artifact like any other).  Every
# build still succeeds with the right output, and no bad entry becomes visible.

. "$(dirname "$0")/helpers.sh"
: "${CJC_FAULTINJECT:?set CJC_FAULTINJECT to faultinject.so}"
# A sanitized cjc must accept a preloaded library ahead of its runtime.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

oneTimeSetUp() {
	use_suite_dir faults
	# One store that knows the compilers but not this compile, one that has it.
	export NVCC_LOG=/dev/null
	CJC_DIR="$SUITE_DIR/empty" "$CJC" "$NVCC" --cubin k.cu -o other.cubin -arch=$ARCH -DOTHER
	cp -a "$SUITE_DIR/empty" "$SUITE_DIR/full"
	CJC_DIR="$SUITE_DIR/full" "$CJC" "$NVCC" --cubin k.cu -o good.cubin -arch=$ARCH
	HOST=$(cjc_host)
	POINTS=0 STEPS=0 KILLED=0 OTHER_ENTRIES=1 # the empty store holds other.o's entry
}

oneTimeTearDown() {
	echo "fault points checked: $POINTS; writers killed at their step: $KILLED of $STEPS"
	rm -rf "$SUITE_DIR"
}

# use_store NAME TEMPLATE: a fresh copy of a template store, with the staging
# of another, live writer (this shell) that nothing may remove.
use_store() {
	export CJC_DIR="$SUITE_DIR/$1" CJC_LOG="$SUITE_DIR/$1.log" NVCC_LOG="$SUITE_DIR/$1.nvcc"
	rm -rf "$CJC_DIR" && cp -a "$SUITE_DIR/$2" "$CJC_DIR"
	LIVE=$(echo "$CJC_DIR"/v1/*/staging)/s.$HOST.$$.0000live
	mkdir "$LIVE"
}

# faulted ARGS...: cjc with the fault of $FAULT injected.
faulted() {
	CJC_FAULT=$FAULT CJC_FAULT_DIR=$CJC_DIR CJC_FAULT_FIRED="$CJC_DIR.fired" \
		LD_PRELOAD=$CJC_FAULTINJECT "$CJC" "$@"
}

# The state every fault must leave: right output, no bad entry, only the
# live writer's staging, and a logged reason when the fault fired.
check_aftermath() {
	local what=$1 out=$2
	assert_same_devcode good.cubin "$out"
	"$CJC" verify >/dev/null || fail "$what: a bad entry is visible"
	assertTrue "$what: another writer's staging kept" "[ -d '$LIVE' ]"
	assertEquals "$what: only the other writer's staging left" 1 \
		"$(find "$CJC_DIR"/v1/*/staging -mindepth 1 -maxdepth 1 | wc -l)"
	if [ -s "$CJC_DIR.fired" ]; then
		assertTrue "$what: the failure is logged" "grep -Eq '$ERRTEXT' '$CJC_LOG'"
	fi
}

# The two errnos take the same paths in cjc, and differ only in the message
# checked: EIO runs in CI's sanitized build, ENOSPC in the plain one
# (half_here).
testEveryFaultPointAndErrnoStillBuilds() {
	local op err nth errs= points=0
	half_here sanitized >/dev/null && errs+=" EIO" points=$((points + 12))
	half_here plain >/dev/null && errs+=" ENOSPC" points=$((points + 12))
	for op in mkdir write fsync rename; do
		for err in $errs; do
			[ $err = EIO ] && ERRTEXT='Input/output error' || ERRTEXT='No space left on device'
			for nth in 1 2 3 0; do
				FAULT=$op:$err:$nth
				use_store "$op-$err-$nth" empty
				faulted "$NVCC" --cubin k.cu -o "$op-$err-$nth.cubin" -arch=$ARCH || fail "$FAULT: the build broke"
				check_aftermath "$FAULT" "$op-$err-$nth.cubin"
				[ -s "$CJC_DIR.fired" ] && POINTS=$((POINTS + 1))
				if [ -s "$CJC_DIR.fired" ] && [ "$(stat_value errors)" -lt 1 ] && [ $op != write ]; then
					fail "$FAULT: the failure is not counted"
				fi
			done
			# Once the disk is well again, the store works.
			unset FAULT
			cjc_nvcc --cubin k.cu -o healed.cubin -arch=$ARCH || fail
			cjc_nvcc --cubin k.cu -o healed2.cubin -arch=$ARCH || fail
			assert_same_devcode good.cubin healed2.cubin
			expect_stat hits 1
		done
	done
	assertTrue "most fault points fired: $POINTS" "[ $POINTS -ge $points ]"
}

testReadCutShortIsAMiss() {
	use_store cut full
	FAULT=read:EOF:1 faulted "$NVCC" --cubin k.cu -o cut.cubin -arch=$ARCH || fail "the build broke"
	ERRTEXT=.
	check_aftermath "read:EOF" cut.cubin
	assertEquals "nvcc compiled" 1 "$(nvcc_compiles)"
	expect_stat damaged 1
	assertTrue "reason logged" "grep -q 'output.cubin has 0 stored bytes' '$CJC_LOG'"
}

testReadErrorIsAMiss() {
	use_store readerr full
	FAULT=read:EIO:1 faulted "$NVCC" --cubin k.cu -o readerr.cubin -arch=$ARCH || fail "the build broke"
	ERRTEXT='Input/output error'
	check_aftermath "read:EIO" readerr.cubin
	assertEquals "nvcc compiled" 1 "$(nvcc_compiles)"
}

# kill_writer_at OP PATH: a compile into a fresh store stops at its first OP
# on v1/<namespace>/PATH, before the call (a write: halfway through it), says
# so on a pipe (faultinject.c's STOP), and is killed there.  STEP names it.
kill_writer_at() {
	local stops=$SUITE_DIR/stops reached status
	STEP="killed at $1 $2" STEPS=$((STEPS + 1))
	use_store "killed-$STEPS" empty
	rm -f "$stops" && mkfifo "$stops"
	CJC_FAULT=$1:STOP CJC_FAULT_PATH="v1/*/$2" CJC_FAULT_DIR=$CJC_DIR CJC_FAULT_STOPPED=3 \
		LD_PRELOAD=$CJC_FAULTINJECT "$CJC" "$NVCC" --cubin k.cu -o killed.cubin -arch=$ARCH 3>"$stops" 2>/dev/null &
	# End of file instead of a line: the writer finished without stopping.
	# The time limit only keeps a broken writer from hanging the suite.
	read -r -t 600 reached <"$stops"
	kill -KILL $! 2>/dev/null
	wait $! 2>/dev/null
	status=$?
	assertEquals "$STEP: the writer stopped there" "$1 1" "${reached% *}"
	assertEquals "$STEP: the writer was killed" 137 $status
	[ "${reached% *}" = "$1 1" ] && [ $status = 137 ] && KILLED=$((KILLED + 1))
}

expect_staging() {
	assertEquals "$STEP: staging directories" "$1" \
		"$(find "$CJC_DIR"/v1/*/staging -mindepth 1 -maxdepth 1 | wc -l)"
}

# What every kill must leave: nothing bad visible, ENTRIES whole entries of
# the writer's, and its staging, if any, reclaimed by gc, not a live writer's.
expect_killed_writer_left() {
	"$CJC" verify >/dev/null || fail "$STEP: a bad entry is visible"
	assertEquals "$STEP: the writer's entries" "$1" $(($(entry_count) - OTHER_ENTRIES))
	"$CJC" gc >/dev/null || fail "$STEP: gc failed"
	assertTrue "$STEP: the other writer's staging kept" "[ -d '$LIVE' ]"
	expect_staging 1
}

# expect_next_compile LOGGED: the next compile of the same source builds the
# right object and logs LOGGED; the one after hits.
expect_next_compile() {
	cjc_nvcc --cubin k.cu -o next.cubin -arch=$ARCH || fail "$STEP: the next build broke"
	assert_same_devcode good.cubin next.cubin
	assertTrue "$STEP: the next compile $1" "grep -qF '] $1 ' '$CJC_LOG'"
	assertEquals "$STEP: the entries after" 1 $(($(entry_count) - OTHER_ENTRIES))
	cjc_nvcc --cubin k.cu -o hit.cubin -arch=$ARCH || fail "$STEP: the build after broke"
	assert_same_devcode good.cubin hit.cubin
	expect_stat hits 1
}

# Killed before its rename, a writer leaves half-made staging and no entry;
# the next compile publishes the entry.
testWriterKilledBeforeItsRenameLeavesNoEntry() {
	killed_before_rename write 'staging/s.*/output.cubin'      # writing the artifact
	killed_before_rename write 'staging/s.*/metadata.json' # writing the metadata, last
	killed_before_rename fsync 'staging/s.*'               # syncing the directory
	killed_before_rename rename 'entries/*/*'              # renaming it to its entry
}

killed_before_rename() {
	kill_writer_at "$1" "$2" || return
	expect_staging 2
	expect_killed_writer_left 0
	expect_next_compile published
}

# Killed after its rename, a writer leaves a whole entry, perhaps with no
# manifest to find it by: the next compile runs nvcc and finds it published.
testWriterKilledAfterItsRenameLeavesAWholeEntry() {
	killed_after_rename fsync 'entries/*'       # syncing entries/<kk> after the rename
	killed_after_rename write 'manifests/*/*'   # writing the manifest that finds it
	killed_after_rename rename 'manifests/*/*'  # renaming the manifest into place
}

killed_after_rename() {
	kill_writer_at "$1" "$2" || return
	expect_staging 1
	expect_killed_writer_left 1
	expect_next_compile "already published"
}

. "$SHUNIT2"
