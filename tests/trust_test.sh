#!/bin/bash
# trust_test.sh - docs/store.md, trust beyond planted files (hostile_test.sh): settings
# from a store's config, memos a member forged (identity, hash and absence
# records), bytes that are not UTF-8, secrets, symbolic links in the layout
# and at the output, a store the user cannot write, labels with control
# characters, and what gc reclaims.  The compiles are --cubin (a third of
# the CPU of -c, no host compile): what is trusted or not is the store's,
# whatever kind an entry holds.

. "$(dirname "$0")/helpers.sh"
command -v setpriv >/dev/null || { echo "setpriv not found: skipping" >&2; exit 125; }
command -v python3 >/dev/null || { echo "python3 not found: skipping" >&2; exit 125; }

ns() { echo "$CJC_DIR"/v1/*; }

# as_nobody CMD...: runs CMD as another user (the tests run as root in CI).
oneTimeSetUp() { use_others_dir; }
oneTimeTearDown() { rm_others_dir; }
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups env CJC_DIR="$CJC_DIR" "$@"
}

testStoreConfigOfAnotherUserDirectsNoWrite() {
	mkdir -p "$CJC_DIR" private && chmod 700 private
	printf 'log = %s/private/x.log\numask = 000\nmax_size = 1G\n' "$PWD" >"$CJC_DIR/cudajitcache.conf"
	chown nobody "$CJC_DIR/cudajitcache.conf"
	unset CJC_LOG
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt || fail "the compile runs"
	assertTrue "the output" "[ -s k.cubin ]"
	assertFalse "no log where the file said" "[ -e private/x.log ]"
	assertTrue "says so: $(cat err.txt)" "grep -q 'cudajitcache.conf:1: ignoring log: the file is not owned by you or root' err.txt"
	assertTrue "and umask" "grep -q 'cudajitcache.conf:2: ignoring umask' err.txt"
	assertEquals "other settings still apply" 1073741824 "$("$CJC" config --json 2>/dev/null | jq -r .max_size.value | numfmt --from=iec)"
	chown root "$CJC_DIR/cudajitcache.conf" && chmod 666 "$CJC_DIR/cudajitcache.conf"
	# the same words: said once per build, so this is another build (session)
	setsid -w "$CJC" "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt || fail
	assertTrue "writable by others: ignored too" "grep -q 'ignoring log' err.txt"
	chmod 644 "$CJC_DIR/cudajitcache.conf"
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt || fail
	assertTrue "a trusted file is honoured" "[ -s private/x.log ] && [ ! -s err.txt ]"
}

# forge KIND ARGS...: writes a memo as a member of the store would (blob.h:
# magic, payload, CRC-32) and prints its path; the caller gives it away.
#   identity NVCC REALPATH  nvcc's record in ids/, naming REALPATH, stamping
#                           no file (so it always holds)
#   hash SRC SHA PATH...    SRC's hash cache: each PATH hashed to SHA, as of
#                           its stamp now
#   absent SRC PATH...      SRC's hash cache: no file at each PATH, as of its
#                           directory's stamp now
# Records are taken far in the future: every stamp in them is settled.
forge() {
	python3 - "$(ns)" "$@" <<'PY'
import hashlib, os, struct, sys, zlib
ns, kind, *args = sys.argv[1:]
cwd = os.getcwd()
def text(t):
    return struct.pack('<I', len(t.encode())) + t.encode()
def stamp(p):
    st = os.stat(p)
    return struct.pack('<5Q', st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
late = struct.pack('<Q', 1 << 62)
if kind == 'identity':
    name = 'ids/' + hashlib.sha256(b'nvcc\0' + args[0].encode() + b'\0').hexdigest()[:40]
    magic = b'CJI3'  # made for nvcc at NVCC, as identity.c's records say
    payload = late + text('nvcc') + text(args[0]) + text(args[1]) + text('forged') + text('f' * 64) \
        + struct.pack('<I', 0)
else:
    tu = hashlib.sha256((cwd + '\0' + args[0]).encode()).hexdigest()
    name = 'hashes/%s/%s' % (tu[:2], tu)
    paths = args[2:] if kind == 'hash' else args[1:]
    records = b''
    for p in paths:
        if kind == 'hash':
            records += text(p) + struct.pack('<I', 0) + stamp(p) + late + bytes.fromhex(args[1])
        else:
            records += text(p) + struct.pack('<I', 1) + stamp(os.path.dirname(p)) + late
    magic = b'CJCF'
    payload = struct.pack('<II', 2, len(paths)) + records
path = os.path.join(ns, name)
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, 'wb') as f:
    f.write(magic + payload + struct.pack('<I', zlib.crc32(magic + payload)))
print(path)
PY
}

# Issue 22, 1: a member sets keep_sass in the store's config and rewrites
# nvcc's identity record to name a directory with a cuobjdump of theirs.
testAMembersIdentityRecordAndKeepSassRunNothing() {
	"$CJC" stats --zero >/dev/null || fail "the namespace"
	mkdir planted && printf '#!/bin/sh\ntouch "%s/ran"\n' "$PWD" >planted/cuobjdump &&
		chmod 755 planted/cuobjdump || fail "the member's program"
	printf 'keep_sass = true\n' >"$CJC_DIR/cudajitcache.conf"
	chown nobody "$CJC_DIR/cudajitcache.conf" "$(forge identity "$NVCC" "$PWD/planted/nvcc")" ||
		fail "the member's files"
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt || fail "the compile"
	assertTrue "the output" "[ -s k.cubin ]"
	assertFalse "root's miss ran the member's cuobjdump" "[ -e ran ]"
	assertTrue "keep_sass refused, named with its file: $(cat err.txt)" \
		"grep -q 'cudajitcache.conf:1: ignoring keep_sass' err.txt"
	# a record of root's own that names another realpath names no program either
	rm -f ran && forge identity "$NVCC" "$PWD/planted/nvcc" >/dev/null
	CJC_KEEP_SASS=1 cjc_nvcc --cubin k.cu -o k2.cubin -arch=$ARCH -DV=2 2>err.txt || fail
	assertTrue "the output" "[ -s k2.cubin ]"
	assertFalse "nor with your own keep_sass: $(cat err.txt)" "[ -e ran ]"
	expect_nvcc_runs 2
}

# Issue 22, 4: a hash record with the edited source's stamp and the old
# content's SHA-256, owned by a member.
testAMembersHashRecordGivesNoWrongHit() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail "the first compile"
	local sha
	sha=$(sha256sum k.cu | cut -d' ' -f1)
	sed -i 's/SCALE + DEVICE_OFFSET/SCALE - DEVICE_OFFSET/' k.cu # other code, the same size
	chown nobody "$(forge hash k.cu "$sha" k.cu "$PWD/k.cu")" || fail "the member's record"
	cjc_nvcc --cubin k.cu -o k2.cubin -arch=$ARCH || fail
	expect_nvcc_runs 2
	assertFalse "the old output served for the edited source" "cmp -s k.cubin k2.cubin"
}

# Issue 22, 4: an absence record for a header created since, earlier in the
# include path, owned by a member.
testAMembersAbsenceRecordGivesNoWrongHit() {
	mkdir first second
	echo '#define VALUE 1.0f' >second/v.h
	printf '#include <v.h>\n__global__ void set(float *p) { *p = VALUE; }\n' >v.cu
	sleep 0.02 # past the tick they were written in: the first compile publishes
	cjc_nvcc --cubin v.cu -o v.cubin -arch=$ARCH -Ifirst -Isecond || fail "the first compile"
	echo '#define VALUE 2.0f' >first/v.h
	chown nobody "$(forge absent v.cu first/v.h "$PWD/first/v.h")" || fail "the member's record"
	cjc_nvcc --cubin v.cu -o v2.cubin -arch=$ARCH -Ifirst -Isecond || fail
	expect_nvcc_runs 2
	assertFalse "the output built without first/v.h" "cmp -s v.cubin v2.cubin"
}

testMissingConfigFileAndEmptyDirAreErrors() {
	CJC_CONFIG=$PWD/nonexistent.conf cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt || fail
	assertTrue "names the file: $(cat err.txt)" "grep -q 'nonexistent.conf: cannot read: No such file' err.txt"
	assertTrue "compiled uncached" "grep -q 'compiling without the cache' err.txt && [ -s k.cubin ]"
	CJC_DIR= cjc_nvcc --cubin k.cu -o k2.cubin -arch=$ARCH 2>err.txt || fail
	assertTrue "an empty CJC_DIR: $(cat err.txt)" "grep -q \"environment variable CJC_DIR: bad value '' for dir\" err.txt"
}

testDuplicateKeyIsReportedWhereItsValueIs() {
	printf 'max_size = 1G\n# note\nmax_size = lots\n' >my.conf
	CJC_CONFIG=$PWD/my.conf "$CJC" config >/dev/null 2>err.txt
	assertTrue "the line whose value counts: $(cat err.txt)" "grep -q 'my.conf:3: bad value' err.txt"
}

testLogGetsTheUsersUmaskNotTheStores() {
	export CJC_UMASK=000 CJC_LOG=$PWD/user.log
	(umask 077 && cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH) || fail
	assertEquals "the log's mode" 600 "$(stat -c %a user.log)"
	unset CJC_UMASK
}

testPathsThatAreNotUtf8RoundTrip() {
	local d
	d=$(printf 'dir\377')
	mkdir "$d" && cp k.cu k.h dev.h host.h "$d/"
	touch -d '1 minute ago' "$d"/* # not written just now: else "changed during the compile"
	cjc_nvcc --cubin "$d/k.cu" -o k.cubin -arch=$ARCH 2>/dev/null || fail
	cjc_nvcc --cubin "$d/k.cu" -o k2.cubin -arch=$ARCH 2>/dev/null || fail
	expect_nvcc_runs 1
	assertTrue "verify: the entry is good" "\"$CJC\" verify"
	"$CJC" show "$("$CJC" ls --json | jq -r '.[0].key')" --json >meta.json
	assertEquals "the argument's bytes" "$(printf '%s/k.cu' "$d" | od -An -tx1 | tr -d ' \n')" \
		"$(jq -r '.argv[2].bytes' meta.json)"
	(eval "set -- $(jq -r .command meta.json)" && printf '%s' "$3") >pasted.txt
	assertTrue "the command still pastes" "printf '%s/k.cu' '$d' | cmp -s - pasted.txt"
	"$CJC" audit all >audit.txt 2>&1
	assertTrue "and audits: $(cat audit.txt)" "grep -q '1 reproducible' audit.txt"
	"$CJC" why "$d/k.cu" >why.txt 2>&1
	assertTrue "why does not crash: $?" "[ $? -le 1 ]"
}

testSecretsStayOutOfTheStore() {
	printf -- '-DAPI_TOKEN=hunter2\n' >secret.opts && chmod 600 secret.opts
	printf -- '-DPUBLIC_FLAG=1\n' >public.opts && chmod 644 public.opts
	NVCC_APPEND_FLAGS=-DSECRET=swordfish cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH \
		--options-file secret.opts --options-file public.opts || fail
	assertFalse "no secret in the store" "grep -rqa 'hunter2\|swordfish' '$CJC_DIR'"
	"$CJC" show "$("$CJC" ls --json | jq -r '.[0].key')" --json >meta.json
	assertTrue "the variable by its hash" "jq -e '.environment.NVCC_APPEND_FLAGS.sha256 | length == 64' meta.json"
	assertTrue "the private file by its hash" "jq -e '.options_files[0].private and (.options_files[0].sha256 | length == 64)' meta.json"
	assertTrue "a public file's options are listed" "jq -e '.options.defines == [\"PUBLIC_FLAG=1\"]' meta.json"
	NVCC_APPEND_FLAGS=-DSECRET=other cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH \
		--options-file secret.opts --options-file public.opts || fail
	expect_why k.cubin "miss: NVCC_APPEND_FLAGS changed"
	printf -- '--secret-option=hunter2\n' >secret.opts
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH --options-file secret.opts 2>/dev/null
	assertFalse "not through an uncacheable reason either" "grep -rqa hunter2 '$CJC_DIR' '$CJC_LOG'"
	CJC_REMOTE='redis://:s3cret@127.0.0.1:6379' "$CJC" config >config.txt 2>&1
	assertTrue "no password in cjc config: $(grep remote config.txt)" "grep -q 'redis://\*\*\*@127.0.0.1:6379' config.txt && ! grep -q s3cret config.txt"
}

testSymbolicLinkedHashesAreNotFollowed() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	mkdir elsewhere
	rm -rf "$(ns)/hashes" && ln -s "$PWD/elsewhere" "$(ns)/hashes"
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>/dev/null || fail
	assertEquals "nothing written through the link" "" "$(ls -A elsewhere)"
	rm "$(ns)/hashes" && mkdir "$(ns)/hashes" "$(ns)/hashes/$(ls "$(ns)/manifests" | head -1)"
	local shard
	for shard in $(seq 0 255); do ln -s "$PWD/elsewhere" "$(ns)/hashes/$(printf %02x "$shard")" 2>/dev/null; done
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	assertEquals "nor through a shard's link" "" "$(ls -A elsewhere)"
	# gc takes a file named like a dead writer's temporary for its own: not through a link
	local victim=k.$(cjc_host).999999.0badf00d
	touch -d '2 days ago' "elsewhere/$victim"
	"$CJC" gc --older-than 1d >/dev/null
	assertTrue "gc removes nothing through a shard's link" "[ -e 'elsewhere/$victim' ]"
}

testSymbolicLinkedShardServesNothing() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local shard
	shard=$(ls "$(ns)/entries")
	mv "$(ns)/entries/$shard" moved && ln -s "$PWD/moved" "$(ns)/entries/$shard"
	cjc_nvcc --cubin k.cu -o k2.cubin -arch=$ARCH || fail
	expect_nvcc_runs 2
	assertEquals "ls sees what a compile sees" "[]" "$("$CJC" ls --json | jq -c .)"
}

testOutputThatIsALinkIsWrittenThrough() {
	ln -s real.cubin link.cubin
	cjc_nvcc --cubin k.cu -o link.cubin -arch=$ARCH || fail
	assertTrue "the link stays" "[ -L link.cubin ] && [ -s real.cubin ]"
	rm real.cubin
	cjc_nvcc --cubin k.cu -o link.cubin -arch=$ARCH || fail
	assertTrue "and on a hit" "[ -L link.cubin ] && [ -s real.cubin ]"
	expect_stat hits 1
}

testMissingOutputDirectoryGetsNvccsMessage() {
	cjc_nvcc --cubin k.cu -o nodir/k.cubin -arch=$ARCH 2>err.txt
	assertNotEquals "fails" 0 $?
	assertTrue "nvcc's message: $(cat err.txt)" "grep -q 'nodir/k.cubin' err.txt"
	assertFalse "no temporary name" "grep -q 'k.cubin\.' err.txt"
}

testStoreTheUserCannotWrite() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	chmod 755 "$TEST_DIR"
	local cmd
	for cmd in clean gc "stats --zero" "verify --fix"; do
		as_nobody "$OTHERS_CJC" $cmd >out.txt 2>err.txt
		assertEquals "$cmd: fails" 1 $?
		assertTrue "$cmd: says why: $(cat err.txt)" "grep -q 'cannot change the store .*: Permission denied' err.txt"
	done
	assertEquals "nothing removed" 1 "$(entry_count)"
}

testControlCharactersInALabelAreEscaped() {
	"$CJC" --target "$(printf 'evil\033]0;x\007')" "$NVCC" --cubin k.cu -o k.cubin -arch=$ARCH || fail
	"$CJC" ls >ls.txt && "$CJC" stats --by-target >stats.txt && "$CJC" why k.cubin >why.txt
	assertFalse "no escape character printed" "grep -qa $'\033' ls.txt stats.txt why.txt"
	assertTrue "shown escaped" "grep -q 'evil\\\\x1b' ls.txt && grep -q 'evil\\\\x1b' stats.txt && grep -q 'evil\\\\x1b' why.txt"
}

testGcReclaimsKilledWritersTemporariesAndOldHashCaches() {
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH || fail
	local m
	m=$(ls -d "$(ns)"/manifests/*/* | head -1)
	cp "$m" "$m.$(cjc_host).999999999.0badf00d" # above any pid_max
	"$CJC" gc --older-than 1d >gc.txt || fail
	assertTrue "a dead writer's temporary: $(cat gc.txt)" "grep -q ', 1 temporary files of killed writers' gc.txt"
	assertFalse "removed" "[ -e '$m.$(cjc_host).999999999.0badf00d' ]"
	touch -d '2 days ago' "$(ns)"/hashes/*/*
	local caches
	caches=$(find "$(ns)/hashes" -type f | wc -l)
	"$CJC" gc --older-than 1d >gc.txt || fail
	assertTrue "old hash caches: $(cat gc.txt)" "grep -q ', $caches unused hash caches' gc.txt"
	assertEquals "none left" "" "$(find "$(ns)/hashes" -type f)"
	cjc_nvcc --cubin k.cu -o k2.cubin -arch=$ARCH || fail
	expect_stat hits 1
	# hash caches count against max_size in gc: entries get what they leave
	local entries hashes
	entries=$(stat_value bytes)
	hashes=$(find "$(ns)/hashes" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	assertTrue "a hash cache to count" "[ ${hashes:-0} -gt 1 ]"
	"$CJC" gc --max-size $((entries + hashes / 2))B >gc.txt || fail
	assertTrue "the entry no longer fits: $(cat gc.txt)" "grep -q 'evicted 1 of 1 entries' gc.txt"
	"$CJC" clean >/dev/null || fail
	assertEquals "clean takes the hash caches too" "" "$(find "$(ns)/hashes" -type f)"
}

testAnOptionsFileThatIsNotASmallRegularFileGoesToNvccUncached() {
	truncate -s 3G big.optf
	# nvcc here logs its arguments and fails without reading the file
	cat >"$NVCC" <<WRAP
#!/bin/sh
echo "\$*" >>"\$NVCC_LOG"
case " \$* " in *" --version "*) exec "$REAL_NVCC" --version ;; esac
exit 3
WRAP
	local f rc
	for f in /dev/zero "$PWD/big.optf"; do
		cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH -optf "$f" 2>err.txt
		rc=$?
		assertEquals "nvcc's status with $f: $(cat err.txt)" 3 $rc
		assertTrue "nvcc got the options file $f" "grep -qF -- '-optf $f' '$NVCC_LOG'"
	done
	expect_stat uncacheable 2
	expect_stat errors 0
	assertContains "the log says why" "$(cat "$CJC_LOG")" \
		"cannot read options file /dev/zero: not a regular file"
	assertContains "the log says why" "$(cat "$CJC_LOG")" \
		"cannot read options file $PWD/big.optf: larger than 1 MiB"
}

# A member of a group store (2775, cjc-team) links the store's config to a
# file of root's whose text she chose (log = a path, a secret): root takes
# no setting from it and shows none of it.  Her own config with an unknown
# setting is ignored with a note: root's JIT still opens.
testAMembersLinkedOrBrokenStoreConfigIsIgnored() {
	local member=cjc-member2 group=cjc-team
	if ! command -v useradd >/dev/null; then
		startSkipping
		return
	fi
	getent group $group >/dev/null || groupadd $group || getent group $group >/dev/null || fail "group"
	id -u $member >/dev/null 2>&1 || useradd -M -N -s /usr/sbin/nologin -g $group $member ||
		id -u $member >/dev/null 2>&1 || fail "user"
	chmod 755 "$TEST_DIR" && mkdir -p "$CJC_DIR" && chgrp $group "$CJC_DIR" &&
		chmod 2775 "$CJC_DIR" || fail "the store"
	printf 'log = %s/planted.log\nmax_size = TOPSECRET-42\n' "$PWD" >root-only.conf &&
		chmod 600 root-only.conf || fail "root's file"
	setpriv --reuid=$member --regid="$(id -g $member)" --init-groups \
		ln -s "$PWD/root-only.conf" "$CJC_DIR/cudajitcache.conf" || fail "the member's link"
	unset CJC_LOG
	cjc_nvcc --cubin k.cu -o k.cubin -arch=$ARCH 2>err.txt
	assertEquals "the compile succeeds: $(cat err.txt)" 0 $?
	assertTrue "the output" "[ -s k.cubin ]"
	assertFalse "no log where root's file said" "[ -e planted.log ]"
	assertFalse "the secret is not shown" "grep -q TOPSECRET err.txt"
	assertTrue "the link is ignored, said once: $(cat err.txt)" \
		"grep -q 'cudajitcache.conf: ignored: cannot read: not a regular file' err.txt"
	rm "$CJC_DIR/cudajitcache.conf" && printf 'bogus = 1\n' >"$CJC_DIR/cudajitcache.conf" &&
		chown $member "$CJC_DIR/cudajitcache.conf" || fail "the member's file"
	local v
	[ -x "${CJC_JIT_CLI:-}" ] || fail "CJC_JIT_CLI: set it to build/tests/jit_cli"
	v=$(CJC_JIT_DEBUG=0 "$CJC_JIT_CLI" --setting DEBUG 2>err.txt)
	assertEquals "root's JIT opens: $(cat err.txt)" 0 $?
	assertEquals "and reads its settings" 0 "$v"
}

. "$SHUNIT2"
