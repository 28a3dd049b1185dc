#!/bin/bash
# shared_test.sh - docs/store.md and docs/remote.md: a store shared by a
# group holds against the other people who can reach it.  Nobody writes
# outside it: a member who replaces each new staging directory with a link,
# as fast as inotify lets her, redirects none of root's writes.  Nobody waits on
# anyone: a lock held by a user outside the group hangs no compile.  Nobody
# switches eviction off: FIFOs, directories or held locks planted at the
# eviction locks by a member leave the store under max_size.  A password in
# a remote URL is never shown, whatever it holds, and no secret-bearing
# variable reaches nvcc, what it runs, or a --wrap launcher.
#
# Acts as real users: cjc-member2 (in group cjc-team, which owns the store)
# and cjc-outsider (not in it, so it may only read the store); the suite
# makes them, once, with useradd.  The tests run as root (CI).  The
# compiles are --cubin (no host compile): what is shared is the store.

. "$(dirname "$0")/helpers.sh"
command -v setpriv >/dev/null || { echo "setpriv not found: skipping" >&2; exit 125; }
command -v useradd >/dev/null || { echo "useradd not found: skipping" >&2; exit 125; }
[ "$(id -u)" = 0 ] || { echo "not root: cannot act as other users: skipping" >&2; exit 125; }

MEMBER=cjc-member2
MEMBER3=cjc-member3
OUTSIDER=cjc-outsider
GROUP=cjc-team

# add_user NAME [useradd options...]: makes the user unless it exists (another
# run of the suite may be making it at the same moment).
add_user() {
	local name=$1
	shift
	id -u "$name" >/dev/null 2>&1 || useradd -M -N -s /usr/sbin/nologin "$@" "$name" ||
		id -u "$name" >/dev/null 2>&1
}

oneTimeSetUp() {
	getent group "$GROUP" >/dev/null || groupadd "$GROUP" || getent group "$GROUP" >/dev/null || exit 1
	add_user "$MEMBER" -g "$GROUP" && add_user "$MEMBER3" -g "$GROUP" && add_user "$OUTSIDER" || exit 1
	use_others_dir
}

oneTimeTearDown() { rm_others_dir; }

tearDown() {
	stop_holder
	umask 022
	unset CJC_UMASK
	cd / && rm -rf "$TEST_DIR"
}

ns() { echo "$CJC_DIR"/v1/*; }

# as USER CMD...: runs CMD as USER, with USER's own groups.
as() {
	local user=$1
	shift
	setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups "$@"
}

# group_store: CJC_DIR becomes a store the group shares (docs/settings.md,
# umask), under a directory the others can enter, with its namespace made
# and its 16 counter shards written (mode 0664: the outsider can read them).
group_store() {
	chmod 755 "$TEST_DIR"
	umask 002
	export CJC_UMASK=002
	mkdir -p "$CJC_DIR" && chgrp "$GROUP" "$CJC_DIR" && chmod 2775 "$CJC_DIR" || fail "the store"
	"$CJC" stats --zero >/dev/null || fail "cjc stats --zero"
}

# plant KIND: the member puts a KIND (fifo, dir, file) at every eviction
# lock's name, the old shared one and this user's own, and at this user's
# lease file (docs/store.md): no compile may wait on it, fail, or write
# through it.
plant() {
	as "$MEMBER" sh -c '
		cd "$1" || exit 1
		for n in $(seq 0 15); do
			for name in evict.$n evict.$n.$2 lease.$2; do
				rm -rf "$name"
				case $3 in
				fifo) mkfifo "$name" ;;
				dir) mkdir "$name" ;;
				file) : >"$name" && chmod 666 "$name" ;;
				esac || exit 1
			done
		done' sh "$(ns)/stats" "$(id -u)" "$1" || fail "the member cannot plant a $1"
}

# bounded NAME CMD...: runs CMD (output to NAME.out, NAME.err) under
# `timeout 60`, while the locks stay held, and it must succeed.  A CMD that
# waits on a lock is interrupted at 60 s, and then timeout exits 124 even
# when CMD itself exits 0; no clock of ours is read, so a busy machine
# cannot fail this.
bounded() {
	local name=$1
	shift
	timeout -k 5 60 "$@" >"$name.out" 2>"$name.err"
	assertEquals "$name: succeeds without waiting (124: the timeout ended it): $(cat "$name.err")" 0 $?
}

# compile_limited NAME V: compiles variant V to NAME.cubin with max_size 1K, so
# that every shard is over its share and the new entry's shard is emptied.
compile_limited() {
	CJC_MAX_SIZE=1K bounded "$1" "$CJC" "$NVCC" --cubin k.cu -o "$1.cubin" -arch=$ARCH -DV="$2"
	assertTrue "$1: the cubin" "[ -s '$1.cubin' ]"
}

# --- 3. nobody writes outside the store -----------------------------------

# member_python: a python3 the member can run (the one on root's PATH may be
# under /root); fails when there is none.
member_python() {
	local p
	for p in /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3)"; do
		[ -x "$p" ] && as "$MEMBER" "$p" -c '' 2>/dev/null && echo "$p" && return 0
	done
	return 1
}

# race_staging PYTHON DIR: the member watches staging/ with inotify and, for
# each new s.* directory, renames it away and plants a link to DIR in its
# place, a few microseconds after the mkdir.  Returns once the watch is set:
# the attacker says so on a pipe.  stop_holder ends it.
race_staging() {
	local said=
	exec {HOLDER_FD}< <(exec setpriv --reuid="$MEMBER" --regid="$(id -g "$MEMBER")" --init-groups \
		"$1" -c '
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(sys.argv[1]), 0x100) < 0:  # IN_CREATE
    sys.exit("inotify: " + os.strerror(ctypes.get_errno()))
os.chdir(sys.argv[1])
target = sys.argv[2]
print("watching", flush=True)
while True:
    events = os.read(fd, 65536)
    i = 0
    while i < len(events):
        wd, mask, cookie, length = struct.unpack_from("=iIII", events, i)
        name = events[i + 16:i + 16 + length].split(b"\0", 1)[0]
        i += 16 + length
        if mask & 0x40000000 and name.startswith(b"s."):  # IN_ISDIR
            try:
                os.rename(name, b"away." + name)
                os.symlink(target, name)
            except OSError:
                pass' "$(ns)/staging" "$2")
	HOLDER=$!
	read -r -t 60 -u "$HOLDER_FD" said
	assertEquals "$MEMBER watches staging/" watching "$said"
}

# The race is real: the link may land before root opens its staging
# directory, after, or not at all; whichever, nothing lands in root's
# directory and every compile succeeds.
testAMemberRacingStagingRedirectsNoWrite() {
	group_store
	local python private=$TEST_DIR/root-only i
	if ! python=$(member_python); then
		echo "no python3 that $MEMBER can run: skipped" >&2
		startSkipping
		return
	fi
	mkdir -m 700 "$private" || fail "the root-only directory"
	race_staging "$python" "$private"
	for i in 1 2 3; do
		"$CJC" "$NVCC" --cubin k.cu -o "k$i.cubin" -arch=$ARCH -DV=$i 2>"err$i.txt"
		assertEquals "compile $i succeeds: $(cat "err$i.txt")" 0 $?
		assertTrue "compile $i: its cubin" "[ -s k$i.cubin ]"
	done
	stop_holder
	assertEquals "nothing written in root's directory" "" "$(ls -A "$private")"
}

# --- 4. nobody plants or breaks the store itself (docs/trust.md) ----------

# fresh_tmp_ready: whether fresh_tmp can run here; if not, the test is
# skipped.
fresh_tmp_ready() {
	if ! unshare -m true 2>/dev/null; then
		echo "no mount namespace here: skipping" >&2
		startSkipping
		return 1
	fi
	[ -d "${CJC_BUILD_DIR:-}" ] || fail "CJC_BUILD_DIR: set it to the build tree"
	chmod 755 "$TEST_DIR"
}

# fresh_tmp SCRIPT ARGS...: bash -c SCRIPT ARGS in a mount namespace of its
# own, with a fresh /tmp and /root/.cache: nobody's real
# /tmp/cudajitcache-<uid>, nor root's real home, is touched.  The test's
# directory and the build under test (under /tmp, or /root/.cache, in a
# checkout there) are held by bind mounts made before, and mounted back at
# their paths.
fresh_tmp() {
	local script=$1
	shift
	mkdir -p /root/.cache "$TEST_DIR/build" || fail "/root/.cache"
	unshare -m bash -c '
		mount --make-rprivate / && mount --bind "$2" "$1/build" &&
		mount -t tmpfs -o mode=700 none /root/.cache &&
		mkdir /root/.cache/t && mount --rbind "$1" /root/.cache/t &&
		mount -t tmpfs -o mode=1777 none /tmp || exit 1
		[ -d "$1" ] || { mkdir -p "$1" && mount --rbind /root/.cache/t "$1"; } || exit 1
		[ -d "$2" ] || { mkdir -p "$2" && mount --bind "$1/build" "$2"; } || exit 1
		cd "$PWD" && shift 2 || exit 1
		'"$script" sh "$TEST_DIR" "$CJC_BUILD_DIR" "$@"
}

# Without HOME (root under env -i, a systemd unit), the default store was
# /tmp/.cache/cudajitcache, which any user can make first.  The test runs
# with a fresh /tmp and /root/.cache (fresh_tmp), so that it neither races
# anyone for /tmp/.cache nor touches root's real home.
testWithoutHomeNoOtherUsersDirectoryIsTheStore() {
	fresh_tmp_ready || return
	[ -x "${CJC_JIT_CLI:-}" ] || fail "CJC_JIT_CLI: set it to build/tests/jit_cli"
	fresh_tmp '
		setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups \
			sh -c "mkdir -p -m 777 /tmp/.cache/cudajitcache && chmod 777 /tmp/.cache" || exit 1
		env -i PATH=/usr/bin:/bin "$2" "$3" --cubin k.cu -o k.cubin -arch="$4" || exit 1
		env -i "$5" --setting CACHE_DIR >../jit-dir || exit 1
		ls -A /tmp/.cache/cudajitcache >../planted
		ls -d /root/.cache/cudajitcache/v1 >../private' \
		"$OUTSIDER" "$CJC" "$REAL_NVCC" "$ARCH" "$CJC_JIT_CLI"
	assertEquals "root's compile and JIT open succeed" 0 $?
	assertTrue "the output" "[ -s k.cubin ]"
	assertEquals "nothing of root's in the outsider's directory" "" "$(cat "$TEST_DIR/planted")"
	assertEquals "root's store is in its home" /root/.cache/cudajitcache/v1 "$(cat "$TEST_DIR/private")"
	assertEquals "so is the JIT library's" /root/.cache/cudajitcache "$(cat "$TEST_DIR/jit-dir")"
}

# unusable NAME: a compile with the store at CJC_DIR runs uncached and says
# NAME in the log; cjc stats says so once and exits 1.
unusable() {
	"$CJC" "$NVCC" --cubin k.cu -o u.cubin -arch=$ARCH 2>err.txt
	assertEquals "the compile succeeds: $(cat err.txt)" 0 $?
	assertTrue "the output" "[ -s u.cubin ]"
	assertFalse "no store made there" "[ -e '$CJC_DIR/v1' ]"
	assertTrue "the log says why: $(tail -1 "$CJC_LOG")" \
		"grep -q 'running uncached: cache directory .* is unusable: $1' '$CJC_LOG'"
	"$CJC" stats >out.txt 2>err.txt
	assertEquals "stats fails" 1 $?
	assertEquals "with one message: $(cat err.txt)" 1 "$(grep -c "$1" err.txt)"
}

# A directory on the way to the store that another user can write, or
# that is another user's, or a link of hers in a sticky directory: she
# could swap the store for one of hers.
testAStoreOnAPathAnotherUserControlsIsUnusable() {
	chmod 755 "$TEST_DIR"
	mkdir -p -m 777 "$TEST_DIR/open" && chmod 777 "$TEST_DIR/open" || fail "the directory"
	export CJC_DIR=$TEST_DIR/open/store
	unusable "$TEST_DIR/open can be written by others"
	mkdir -m 755 "$TEST_DIR/hers" && chown "$OUTSIDER" "$TEST_DIR/hers" || fail "hers"
	export CJC_DIR=$TEST_DIR/hers/store
	unusable "$TEST_DIR/hers belongs to another user"
	mkdir -m 1777 "$TEST_DIR/sticky" && mkdir "$TEST_DIR/mine" || fail "sticky"
	as "$OUTSIDER" ln -s "$TEST_DIR/mine" "$TEST_DIR/sticky/link" || fail "her link"
	export CJC_DIR=$TEST_DIR/sticky/link/store
	unusable "$TEST_DIR/sticky/link is a link owned by another user"
	assertFalse "nothing made through her link" "[ -e '$TEST_DIR/mine/store' ]"
	rm "$TEST_DIR/sticky/link" && ln -s "$TEST_DIR/mine" "$TEST_DIR/sticky/link" || fail "root's link"
	"$CJC" "$NVCC" --cubin k.cu -o u.cubin -arch=$ARCH || fail "the compile"
	assertTrue "root's own link in a sticky directory is followed" "[ -d '$TEST_DIR/mine/store/v1' ]"
}

# A group store a member set up for the team (hers, the group's, 2775) is
# a store for every other member; for root, who is not in the group, and
# for anyone when it is not the group's to write, it is another user's.
testAGroupStoreAMemberMadeServesTheOtherMembers() {
	chmod 755 "$TEST_DIR"
	mkdir -m 755 "$TEST_DIR/team" "$TEST_DIR/src3" && cp ./*.cu ./*.h "$TEST_DIR/src3/" &&
		chmod 1777 "$TEST_DIR/src3" || fail "the directories"
	# as an administrator makes it for her: mkdir, chown lead:team, chmod 2775
	mkdir "$TEST_DIR/team/store" && chown "$MEMBER:$GROUP" "$TEST_DIR/team/store" &&
		as "$MEMBER" chmod 2775 "$TEST_DIR/team/store" || fail "her store"
	export CJC_DIR=$TEST_DIR/team/store
	(cd "$TEST_DIR/src3" && as "$MEMBER3" env -u CJC_LOG CJC_UMASK=002 "$OTHERS_CJC" "$REAL_NVCC" \
		--cubin k.cu -o m3.cubin -arch=$ARCH) || fail "the third user's compile"
	assertEquals "the third user's entry is in her store" 1 \
		"$(find "$CJC_DIR"/v1/*/entries -name metadata.json | wc -l)"
	"$CJC" "$NVCC" --cubin k.cu -o r.cubin -arch=$ARCH 2>err.txt
	assertEquals "root's compile succeeds" 0 $?
	assertTrue "root, not in the group, is told: $(cat err.txt)" "grep -q 'belongs to another user' err.txt"
	as "$MEMBER" chmod 2755 "$CJC_DIR" || fail "chmod"
	(cd "$TEST_DIR/src3" && as "$MEMBER3" env CJC_LOG="$TEST_DIR/src3/log" "$OTHERS_CJC" "$REAL_NVCC" \
		--cubin k.cu -o m4.cubin -arch=$ARCH) || fail "the third user's second compile"
	assertTrue "not the group's to write: another user's" \
		"grep -q 'belongs to another user' '$TEST_DIR/src3/log'"
}

# Counters are rewritten in place: a member's hard link at each of them, to
# a file of hers outside the store (any file at all where
# fs.protected_hardlinks is 0, root's too), must not have root write there.
testAMembersHardLinksAtTheCountersRedirectNoWrite() {
	group_store
	mkdir -m 755 "$TEST_DIR/hers" && chown "$MEMBER" "$TEST_DIR/hers" || fail "hers"
	as "$MEMBER" sh -c 'echo precious >"$1/precious" && cd "$2" || exit 1
		for f in $(seq 0 15) targets uncacheable remotes; do
			rm -f "$f" && ln "$1/precious" "$f" || exit 1
		done' sh "$TEST_DIR/hers" "$(ns)/stats" || fail "the member's links"
	"$CJC" "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH -DV=1 2>err.txt
	assertEquals "the compile succeeds: $(cat err.txt)" 0 $?
	assertTrue "her file is untouched" "echo precious | cmp -s - '$TEST_DIR/hers/precious'"
	expect_stat misses 1
}

# One clean by root under umask 077 (no umask setting) made manifests/ and
# hashes/ 0700: every other member's compile then counted an error.
testACleanUnderAPrivateUmaskLocksNoMemberOut() {
	group_store
	"$CJC" "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH -DV=1 || fail "root's compile"
	(umask 077 && unset CJC_UMASK && "$CJC" clean >/dev/null) || fail "the clean"
	local d
	for d in manifests hashes staging entries; do
		assertEquals "$d: the store root's mode and group" "2775 $GROUP" \
			"$(stat -c '%a %G' "$(ns)/$d")"
	done
	mkdir -m 1777 "$TEST_DIR/out" || fail "out"
	as "$MEMBER" env -u CJC_LOG "$OTHERS_CJC" "$REAL_NVCC" --cubin k.cu \
		-o "$TEST_DIR/out/m.cubin" -arch=$ARCH -DV=2 || fail "the member's compile"
	expect_stat errors 0
	expect_stat misses 2
	assertEquals "her entry's shard: the store root's mode and group" "2775 $GROUP" \
		"$(stat -c '%a %G' "$(ns)"/entries/* | sort -u)"
}

# mark_unsound: marks the store's one entry as verify_rate does (an empty
# file unsound/<kk>/<key>, docs/key.md) and prints its key.
mark_unsound() {
	local key
	key=$(basename "$(dirname "$(find "$(ns)/entries" -name metadata.json)")")
	mkdir -p "$(ns)/unsound/${key:0:2}" && : >"$(ns)/unsound/${key:0:2}/$key" || fail "the marker"
	echo "$key"
}

# An entry that did not reproduce is never served again: a member who
# moves unsound/, or its shard, aside and links a directory of hers
# without the marker in its place makes it no hit (the marker was looked
# up through the links on the way); it is a miss each time.
testAMembersLinksOnTheWayToAnUnsoundMarkerServeNothing() {
	group_store
	mkdir -m 755 "$TEST_DIR/hers" && chown "$MEMBER" "$TEST_DIR/hers" || fail "hers"
	"$CJC" "$NVCC" --cubin k.cu -o a.cubin -arch=$ARCH -DV=1 || fail "root's compile"
	local key
	key=$(mark_unsound)
	as "$MEMBER" sh -c 'mkdir "$1/$2" && cd "$3" && mv unsound unsound.away && ln -s "$1" unsound' \
		sh "$TEST_DIR/hers" "${key:0:2}" "$(ns)" || fail "her link at unsound/"
	"$CJC" "$NVCC" --cubin k.cu -o b.cubin -arch=$ARCH -DV=1 || fail "root's compile through her link"
	as "$MEMBER" sh -c 'cd "$1" && rm unsound && mv unsound.away unsound && cd unsound &&
		mv "$2" "$2.away" && ln -s "$3/$2" "$2"' sh "$(ns)" "${key:0:2}" "$TEST_DIR/hers" ||
		fail "her link at unsound/<kk>/"
	"$CJC" "$NVCC" --cubin k.cu -o c.cubin -arch=$ARCH -DV=1 || fail "root's compile through her link"
	expect_stat hits 0
	expect_stat misses 3
	expect_why c.cubin "did not reproduce"
}

# --- 5. nobody waits on anyone ---------------------------------------------

testAnOutsidersLockOnTheCountersHangsNoCompile() {
	group_store
	"$CJC" --target t "$NVCC" --cubin k.cu -o first.cubin -arch=$ARCH -DV=1 || fail "the first compile"
	# the counters: not the users' own lock files (evict.*, lease.*), mode 0600
	assertTrue "the outsider can read the counters" \
		"as $OUTSIDER sh -c 'cat \"\$1\"/stats/[!el]* >/dev/null' sh '$(ns)'"
	hold_locks "$OUTSIDER" LOCK_SH "$(ns)"/stats/[!el]*
	bounded hit "$CJC" --target t "$NVCC" --cubin k.cu -o hit.cubin -arch=$ARCH -DV=1
	assertTrue "with its cubin" "[ -s hit.cubin ]"
	assertEquals "served, not compiled" 1 "$(nvcc_compiles)"
	# the counters cannot be updated: eviction measures the shard instead
	compile_limited miss 2
	assertEquals "compiled" 2 "$(nvcc_compiles)"
	assertTrue "and evicted all the same: $(entry_count) entries" "[ $(entry_count) -lt 2 ]"
	assertTrue "eviction is logged" "grep -q 'evicted .* to stay under max_size' '$CJC_LOG'"
	bounded stats "$CJC" stats
	stop_holder
	local before
	before=$(($(stat_value hits) + $(stat_value misses)))
	cjc_nvcc --cubin k.cu -o again.cubin -arch=$ARCH -DV=1 || fail
	assertEquals "counting goes on once the lock is let go" $((before + 1)) \
		$(($(stat_value hits) + $(stat_value misses)))
}

# --- 6. nobody switches eviction off ---------------------------------------

testFifosAndDirectoriesAtTheEvictionLocksStopNoEviction() {
	group_store
	plant fifo
	compile_limited fifo 1
	assertEquals "FIFOs: the store stays under max_size" 0 "$(entry_count)"
	assertTrue "eviction is logged" "grep -q 'evicted .* to stay under max_size' '$CJC_LOG'"
	plant dir
	compile_limited dir 2
	assertEquals "directories: the store stays under max_size" 0 "$(entry_count)"
	cjc_nvcc --cubin k.cu -o kept.cubin -arch=$ARCH -DV=3 || fail
	assertEquals "an entry, without max_size" 1 "$(entry_count)"
	plant fifo
	"$CJC" gc --max-size 1K >/dev/null || fail "cjc gc"
	assertEquals "cjc gc --max-size evicts" 0 "$(entry_count)"
}

testAMembersLockOnTheEvictionLocksStopsNoEviction() {
	group_store
	plant file
	hold_locks "$MEMBER" LOCK_EX "$(ns)"/stats/evict.* "$(ns)"/stats/lease.*
	compile_limited held 1
	assertEquals "held locks: the store stays under max_size" 0 "$(entry_count)"
	assertTrue "eviction is logged" "grep -q 'evicted .* to stay under max_size' '$CJC_LOG'"
	local mine
	mine=$(find "$(ns)/stats" -name "evict.*.$(id -u)" -user "$(id -u)" -perm 600 | wc -l)
	assertTrue "the evictor's lock is its own now" "[ $mine -ge 1 ]"
	assertEquals "so is the lease file" 1 \
		"$(find "$(ns)/stats" -name "lease.$(id -u)" -user "$(id -u)" -perm 600 | wc -l)"
}

# --- 7. secrets stay private -----------------------------------------------

# Passwords holding '|', a blank, or what looks like an attribute: some make
# the value malformed (the compile runs uncached), some do not.
odd_remotes() {
	printf '%s\n' 'redis://:Secret|Part2@127.0.0.1:1' \
		'redis://:Secret Part2@127.0.0.1:1' \
		'redis://u:Secret|ca-file=Part2@127.0.0.1:1' \
		'http://user:Secret|Part2 x@127.0.0.1:1/prefix' \
		'redis+unix://:Secret|Part2@/nonexistent/redis.sock'
}

testAPasswordIsNeverShownWhateverItHolds() {
	local value i=0
	while IFS= read -r value; do
		i=$((i + 1))
		CJC_REMOTE=$value cjc_nvcc --cubin k.cu -o "k$i.cubin" -arch=$ARCH 2>"err$i.txt"
		assertEquals "$value: the compile succeeds" 0 $?
		assertTrue "$value: the cubin" "[ -s k$i.cubin ]"
		CJC_REMOTE=$value "$CJC" config >"config$i.txt" 2>&1
		assertTrue "$value: cjc config names the setting: $(cat "config$i.txt")" \
			"grep -q 'CJC_REMOTE' 'config$i.txt'"
		assertFalse "$value: no part of the password shown: $(cat "err$i.txt" "config$i.txt")" \
			"grep -q 'Secret\|Part2' 'err$i.txt' 'config$i.txt'"
	done < <(odd_remotes)
	assertTrue "a malformed value is said" "grep -q \"bad value 'redis://...' for remote\" err1.txt"
	assertTrue "an accepted one is shown with its user info as ***" \
		"grep -q 'redis://\*\*\*@127.0.0.1:1' config3.txt"
	assertFalse "nor in the log" "grep -q 'Secret\|Part2' '$CJC_LOG'"
	"$CJC" stats --json >stats.json
	assertFalse "nor in the counters" "grep -q 'Secret\|Part2' stats.json"
}

testSecretVariablesReachNoChild() {
	cat >"$TEST_DIR/bin/nvcc-env" <<WRAP
#!/bin/sh
env >>"$TEST_DIR/nvcc-env.txt"
exec "$NVCC" "\$@"
WRAP
	cat >"$TEST_DIR/bin/launcher" <<WRAP
#!/bin/sh
env >>"$TEST_DIR/launcher-env.txt"
exec "\$@"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-env" "$TEST_DIR/bin/launcher"
	# a well-formed value (nvcc runs for the cache) and a malformed one with
	# disable (nvcc runs in cjc's place, uncached: a malformed remote alone
	# turns only the remote stores off, and the second compile would be a hit)
	CJC_REMOTE='redis://:Secret@127.0.0.1:1|connect-timeout=100ms' \
		"$CJC" --wrap "$TEST_DIR/bin/launcher" "$TEST_DIR/bin/nvcc-env" --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt ||
		fail "the cached compile: $(cat err.txt)"
	assertEquals "nvcc ran for the cache" 1 "$(nvcc_compiles)"
	CJC_REMOTE='redis://:Secret|Part2@127.0.0.1:1' CJC_DISABLE=1 \
		"$CJC" --wrap "$TEST_DIR/bin/launcher" "$TEST_DIR/bin/nvcc-env" --cubin k.cu -o k2.cubin -arch=$ARCH 2>err.txt ||
		fail "the uncached compile: $(cat err.txt)"
	assertTrue "and uncached: $(cat err.txt)" "grep -q CJC_REMOTE err.txt && [ -s k2.cubin ]"
	local f
	for f in nvcc-env launcher-env; do
		assertTrue "$f: the environment was seen" "grep -q '^PATH=' '$TEST_DIR/$f.txt'"
		assertTrue "$f: both compiles" "[ $(grep -c '^PATH=' "$TEST_DIR/$f.txt") -ge 2 ]"
		assertFalse "$f: no CJC_REMOTE" "grep -q 'CJC_REMOTE\|Secret' '$TEST_DIR/$f.txt'"
	done
}

# --- 5. nobody takes the run-time directory (docs/trust.md) ---------------

# run_dir_taken KIND: the outsider makes /tmp/cudajitcache-<root's uid> a
# KIND (a directory of hers, open to all, or a link to one), then
# root, without XDG_RUNTIME_DIR (cron, sudo, CI), compiles three times in
# one session with two remote stores: one that says its trouble once per
# build (a Redis nobody listens for) and one with the HTTP helper.  The
# helper's socket is waited for after the first compile, so that the
# others ask it.
run_dir_taken() {
	fresh_tmp '
		theirs=/tmp/cudajitcache-$(id -u)
		case $2 in
		directory) setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups mkdir -m 777 "$theirs" ;;
		link) setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups \
			sh -c "mkdir -m 777 /tmp/hers && ln -s /tmp/hers $theirs" ;;
		esac || exit 1
		unset XDG_RUNTIME_DIR
		export CJC_DIR=$CJC_DIR.$2 CJC_REMOTE="http://127.0.0.1:1/x|helper-idle=60s redis://127.0.0.1:1"
		for i in 1 2 3; do
			"$3" "$4" --cubin k.cu -o k$i.cubin -arch="$5" -DV=$i 2>>err.txt || exit 1
			name=$(sed -n "s/.*started the helper .*, \(.*\))$/\1/p" "$CJC_LOG")
			[ $i = 1 ] && [ -n "$name" ] || continue
			sock=$(cat /root/.cache/cudajitcache-run.*)/$name
			for w in $(seq 600); do [ -S "$sock" ] && break; sleep 0.1; done
		done
		ls -A "$theirs/" >planted
		for pid in $(sed -n "s/.*started the helper of .* (pid \([0-9]*\),.*/\1/p" "$CJC_LOG"); do
			kill -KILL "$pid"
		done' "$OUTSIDER" "$1" "$CJC" "$NVCC" "$ARCH"
	assertEquals "$1: root's compiles succeed" 0 $?
	assertTrue "$1: the outputs" "[ -s k3.cubin ]"
	assertEquals "$1: the trouble said once: $(cat err.txt)" 1 "$(grep -c 'cannot connect' err.txt)"
	local said="run-time directory /tmp/cudajitcache-0 is a $1 of $OUTSIDER (uid $(id -u "$OUTSIDER")),"
	said="$said not yours: using /tmp/cudajitcache-0-[A-Za-z0-9]\{6\} instead"
	assertEquals "$1: the log names the path, its owner and the private one, once: $(cat "$CJC_LOG")" \
		1 "$(grep -c "$said" "$CJC_LOG")"
	assertEquals "$1: the later compiles asked the helper" 2 "$(grep -c 'asking the helper' "$CJC_LOG")"
	assertEquals "$1: nothing of root's in her directory" "" "$(cat planted)"
}

# Without XDG_RUNTIME_DIR, the run-time directory is a fixed name in /tmp,
# which another user can make first, as a directory or a link: it is not
# used, and a private one is, made where nobody can name it first and found
# again by the next compile; so what is said once is said once, and the
# helper serves.
testAnotherUsersRunDirectoryIsSaidAndSidestepped() {
	fresh_tmp_ready || return
	run_dir_taken directory
	rm -f "$CJC_LOG" err.txt planted
	run_dir_taken link
}

# Memos of what was said once (src/tool/once.h) that no compile renewed
# for an hour are removed when a new one is made; the helpers' files
# beside them stay.
testOldMemosAreRemoved() {
	local run=$XDG_RUNTIME_DIR/cudajitcache
	mkdir -m 700 "$run" && touch -d '2 hours ago' "$run/said.0123456789abcdef.1" "$run/key.old" &&
		touch "$run/said.fedcba9876543210.2" || fail "the memos"
	CJC_DIR=/dev/null/x "$CJC" "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt || fail "the build"
	assertTrue "said: $(cat err.txt)" "grep -q 'is unusable' err.txt"
	assertFalse "the old memo is gone" "[ -e '$run/said.0123456789abcdef.1' ]"
	assertTrue "a fresh one stays" "[ -e '$run/said.fedcba9876543210.2' ]"
	assertTrue "what is not a memo stays" "[ -e '$run/key.old' ]"
	assertEquals "and the new memo is made: $(ls "$run")" 3 "$(ls "$run" | wc -l)"
}

. "$SHUNIT2"
