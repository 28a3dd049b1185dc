#!/bin/bash
# oci_hostile_test.sh - the OCI registry store (docs/remote.md) where things
# go wrong: Debian's docker-registry (distribution 2.8) with the bearer-token
# exchange of our own token server (tests/oci_token_server.py: Debian
# packages none), a registry whose blobs and manifests were tampered with,
# one that refuses, fails, drips or is full, a proxy that names 8 GB
# artifacts (tests/fake_remote.py's oci-* modes), and a fleet whose leases
# are on Redis beside the registry.  Every build succeeds with nvcc's bytes;
# no secret is ever shown.  tests/oci_test.sh has the plain cases.
#
# As root, the suite runs in a mount namespace of its own (unshare -m), with
# the registry's storage on a small tmpfs that a case fills up.

if [ "$(id -u)" = 0 ] && [ -z "${CJC_OCI_NAMESPACE:-}" ] &&
	unshare -m --propagation private true 2>/dev/null; then
	CJC_OCI_NAMESPACE=1 exec unshare -m --propagation private bash "$0" "$@"
fi

. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/servers.sh"

for tool in docker-registry htpasswd redis-server redis-cli openssl curl; do
	command -v $tool >/dev/null || { echo "$tool not found: skipping" >&2; exit 125; }
done
/usr/bin/python3 -c 'import jwt, cryptography' 2>/dev/null ||
	{ echo "python3-jwt or python3-cryptography not found: skipping" >&2; exit 125; }

MEMORY=3000000 # the address-space limit of a compile (remote_test.sh says why)
[ -z "$SANITIZED" ] || MEMORY=unlimited

oneTimeSetUp() {
	use_suite_dir oci_hostile
	setUp() { case_setup; }
	tearDown() { rm -rf "$CASE/run" 2>/dev/null || rm -rf "$CASE/run"; }
	FULL_FS=
	if [ -n "${CJC_OCI_NAMESPACE:-}" ]; then
		mkdir -p "$SUITE_DIR/registry/data" &&
			mount -t tmpfs -o size=16m tmpfs "$SUITE_DIR/registry/data" && FULL_FS=1
	fi
	start_registry "$SUITE_DIR/registry" token || exit 1
	start_redis "$SUITE_DIR/redis" || exit 1
	echo "$REGISTRY_USER:$REGISTRY_PASSWORD" >"$SUITE_DIR/credentials"
	# what a machine compiled, uploaded where a case needs it, and nvcc's bytes
	CJC_DIR="$SUITE_DIR/template" NVCC_LOG=/dev/null \
		"$CJC" "$NVCC" --cubin k.cu -o "$SUITE_DIR/ref.cubin" -arch=$ARCH || exit 1
	CASES=0
}

oneTimeTearDown() {
	servers_stop_all
	[ -z "$FULL_FS" ] || umount "$SUITE_DIR/registry/data" 2>/dev/null
	rm -rf "$SUITE_DIR"
}

# Each case its own repository (cjc/caseN) and so its own token scope.
case_setup() {
	cd "$SUITE_DIR/src" || return 1
	CASE=$(mktemp -d "$SUITE_DIR/case.XXXXXX")
	use_run_dir "$CASE"
	export CJC_LOG="$CASE/cjc.log" NVCC_LOG="$CASE/nvcc.log"
	unset CJC_REMOTE CJC_REMOTE_ONLY
	CASES=$((CASES + 1))
	REPO=cjc/case$CASES
	OCI_URL="oci+http://$REGISTRY_HOST/$REPO|credentials-file=$SUITE_DIR/credentials"
	redis_cli FLUSHALL >/dev/null
}

on() {
	local machine=$1
	shift
	CJC_DIR="$CASE/$machine" "$@"
}

# compile_on MACHINE: the compile, bounded in memory and (should cjc hang) time.
compile_on() {
	(ulimit -v $MEMORY && CJC_DIR="$CASE/$1" exec timeout -s KILL 60 \
		"$CJC" "$NVCC" --cubin k.cu -o "$CASE/$1.cubin" -arch=$ARCH) 2>"$CASE/$1.err"
}

remote_stat() {
	on "$1" "$CJC" stats --json | jq -r ".$2"
}

upload_template() {
	CJC_REMOTE=$OCI_URL CJC_DIR="$SUITE_DIR/template" "$CJC" remote upload >/dev/null ||
		fail "upload to $REPO"
}

# token_fetches [SCOPE]: tokens the token server gave for this case's
# repository (any scope, or pull / pull,push).
token_fetches() {
	grep -c "^200 [^ ]* repository:$REPO:${1:-}" "$REGISTRY_TOKEN_LOG"
}

# registry_requests: requests the registry answered for this case's repository.
registry_requests() {
	registry_log_settled # says why when it cannot
	grep -c "\"[A-Z]* /v2/$REPO/" "$REGISTRY_LOG"
}

# expect_built MACHINE STATUS: the build succeeded with nvcc's bytes, and
# the remote store gave it nothing.
expect_built() {
	assertEquals "$1: the build's status ($(tail -2 "$CASE/$1.err"))" 0 "$2"
	assertEquals "$1: no remote hit" 0 "$(remote_stat "$1" remote_hits)"
	assert_same_devcode "$SUITE_DIR/ref.cubin" "$CASE/$1.cubin"
}

# --- the token exchange -------------------------------------------------------

# A publishes, B is served through the token-protected registry; the token
# is fetched once per scope in a process, and once per scope in a helper's
# lifetime however many compiles ask it.
testTokenIsFetchedOncePerScope() {
	export CJC_REMOTE="$OCI_URL|no-helper"
	compile_on A || fail "A's build"
	assertEquals "A compiled" 1 "$(nvcc_compiles)"
	assertEquals "A: one pull token" 1 "$(token_fetches pull$)"
	assertEquals "A: one push token" 1 "$(token_fetches pull,push$)"
	local before=$(registry_requests)
	compile_on B || fail "B's build"
	assertEquals "B compiled nothing" 1 "$(nvcc_compiles)"
	assertEquals "B's remote hit" 1 "$(remote_stat B remote_hits)"
	assertTrue "B got A's bytes" "cmp -s '$CASE/A.cubin' '$CASE/B.cubin'"
	assertEquals "B: one more pull token" 2 "$(token_fetches pull$)"
	assertTrue "B made requests with it" "[ $(($(registry_requests) - before)) -ge 1 ]"
	# through one helper: C starts it, D, E and F ask it
	export CJC_REMOTE=$OCI_URL
	local m tokens
	for m in C D E F; do
		compile_on $m || fail "$m's build"
		assertEquals "$m's remote hit" 1 "$(remote_stat $m remote_hits)"
	done
	assertEquals "nothing compiled" 1 "$(nvcc_compiles)"
	tokens=$(token_fetches pull$)
	assertTrue "C's process and the helper fetched one pull token each: $tokens in all" \
		"[ $tokens -le 4 ]"
}

# A wrong password (in a credentials file, or in the URL): every build
# works, one clear message, and the secret is in no output, log, counter
# or `cjc remote check`.
testWrongPasswordIsOneMessageAndNoSecret() {
	upload_template
	local secret=Wr0ngSecret$RANDOM url out
	echo "$REGISTRY_USER:$secret" >"$CASE/credentials"
	for url in "oci+http://$REGISTRY_HOST/$REPO|credentials-file=$CASE/credentials" \
		"oci+http://$REGISTRY_USER:$secret@$REGISTRY_HOST/$REPO"; do
		export CJC_REMOTE=$url
		rm -rf "$CASE/W" && : >"$NVCC_LOG"
		compile_on W
		expect_built W $?
		assertEquals "W compiled" 1 "$(nvcc_compiles)"
		assertEquals "one error" 1 "$(remote_stat W remote_errors)"
		assertEquals "one message ($(cat "$CASE/W.err"))" 1 "$(grep -ci 'authentication failed' "$CASE/W.err")"
		out=$(on W "$CJC" remote check 2>&1)
		assertContains "cjc remote check says so" "$out" "authentication failed"
		out="$out$(cat "$CASE/W.err" "$CJC_LOG")$(on W "$CJC" stats --json)"
		assertNotContains "no secret shown" "$out" "$secret"
	done
	assertNotContains "no secret shown" "$(cat "$REGISTRY_TOKEN_LOG")" "$secret"
}

# --- tampered storage ---------------------------------------------------------

# The stored manifests of this case's repository (their blobs' paths):
# the entry's (e) or the direct-mode one (m).
stored_manifest() {
	local link manifest
	link=$(echo "$REGISTRY_ROOT"/docker/registry/v2/repositories/$REPO/_manifests/tags/*.$1.*/current/link)
	manifest=$(cut -d: -f2 <"$link")
	echo "$REGISTRY_ROOT/docker/registry/v2/blobs/sha256/${manifest:0:2}/$manifest/data"
}

# flip_embedded SUFFIX: in both manifests, the first layer embedded whose
# mediaType ends in SUFFIX changed (one base64 digit); each kept in $CASE,
# and where it was in $CASE/manifest.KIND.at (a publication since may have
# tagged another).
flip_embedded() {
	local kind manifest at
	for kind in e m; do
		manifest=$(stored_manifest $kind)
		at=$(embedded_at "$manifest" "$1")
		assertNotNull "embedded in the $kind manifest" "$at"
		cp "$manifest" "$CASE/manifest.$kind" && echo "$manifest" >"$CASE/manifest.$kind.at"
		flip_byte "$manifest" "$at" base64
	done
}

put_manifests_back() {
	local kind
	for kind in e m; do
		cp "$CASE/manifest.$kind" "$(cat "$CASE/manifest.$kind.at")"
	done
}

# A small artifact travels three times: as its blob, and embedded in its
# entry's manifest and in the direct-mode one (so that a hit is one
# request).  Its embedded copies rewritten in the registry's own storage:
# not what their layers say, so the blob is fetched instead, a hit with the
# right bytes.  The blob rewritten too (same size; the registry serves it
# as it is): its SHA-256 is wrong, a miss counted as bad data (an error),
# never a hit.  (Blobs are shared by the registry's repositories: the case
# puts them back.)
testTamperedBlobIsAMiss() {
	upload_template
	local hex data
	# the cubin as the template's store keeps it (docs/store.md#compression)
	hex=$(meta_doc "$SUITE_DIR"/template/v1/*/entries/*/*/metadata.json |
		jq -r '.files["output.cubin"] | .zstd.sha256 // .sha256')
	data=$REGISTRY_ROOT/docker/registry/v2/blobs/sha256/${hex:0:2}/$hex/data
	assertTrue "the artifact is a blob of the registry" "[ -f '$data' ]"
	cp "$data" "$CASE/blob"
	flip_embedded .artifact.v1
	export CJC_REMOTE=$OCI_URL
	compile_on A
	assertEquals "A: the build's status ($(tail -2 "$CASE/A.err"))" 0 $?
	assert_same_devcode "$SUITE_DIR/ref.cubin" "$CASE/A.cubin"
	assertEquals "A: the blob instead, a hit" 0 "$(nvcc_compiles)"
	assertEquals "A: a remote hit" 1 "$(remote_stat A remote_hits)"
	flip_byte "$data" "$(($(stat -c %s "$data") / 2))"
	compile_on B
	expect_built B $?
	assertEquals "B compiled" 1 "$(nvcc_compiles)"
	assertEquals "counted as an error" 1 "$(remote_stat B remote_errors)"
	assertContains "$(cat "$CJC_LOG")" "differs from its digest"
	assertTrue "B's store verifies" "on B '$CJC' verify >/dev/null"
	# The registry keeps one blob of a digest for all its repositories, and
	# an upload of one it has changes nothing: the damage stays (B's own
	# publication did not repair it) until the blob is put right by hand.
	compile_on C
	assertEquals "C compiled too" 2 "$(nvcc_compiles)"
	cp "$CASE/blob" "$data" && put_manifests_back
}

# Both manifests edited in the registry's storage: one character of the
# entry's record embedded in each changed (still base64, same size), so the
# embedded bytes no longer have their descriptor's digest: the direct-mode
# manifest's copy is passed over, and the entry's is a miss.
testTamperedManifestIsAMiss() {
	upload_template
	flip_embedded .record.v1
	export CJC_REMOTE=$OCI_URL
	compile_on B
	expect_built B $?
	put_manifests_back # shared with the other repositories
	assertEquals "B compiled" 1 "$(nvcc_compiles)"
	assertEquals "counted as an error" 1 "$(remote_stat B remote_errors)"
	assertContains "$(cat "$CJC_LOG")" "data differs from its digest"
}

# The direct-mode manifest names the entry whose record it embeds; one that
# embeds another entry's record (a registry's lie: its bytes are what the
# layer's new digest says) under this key is a miss, never that entry's
# output: the record's metadata names another key.
testAnotherEntrysRecordUnderThisKeyIsAMiss() {
	CJC_DIR="$CASE/other" "$CJC" "$NVCC" --cubin k.cu -o "$CASE/other.cubin" -arch=$ARCH \
		-DOTHER=1 || fail "the other entry"
	CJC_REMOTE="oci+http://$REGISTRY_HOST/$REPO-other|credentials-file=$SUITE_DIR/credentials" \
		CJC_DIR="$CASE/other" "$CJC" remote upload >/dev/null || fail "upload the other"
	local other mine
	other=$(REPO=$REPO-other stored_manifest m)
	upload_template
	mine=$(stored_manifest m)
	cp "$mine" "$CASE/manifest.m"
	/usr/bin/python3 - "$mine" "$other" <<-'EOF' || fail "swap"
		import json, sys
		mine, theirs = (json.load(open(p)) for p in sys.argv[1:])
		record = lambda m: next(l for l in m["layers"][1:] if l["mediaType"].endswith(".record.v1"))
		deflated = "org.cudajitcache.deflate"
		for field in ("digest", "size"):
		    record(mine)[field] = record(theirs)[field]
		record(mine)["annotations"][deflated] = record(theirs)["annotations"][deflated]
		open(sys.argv[1], "w").write(json.dumps(mine, separators=(",", ":")))
	EOF
	export CJC_REMOTE=$OCI_URL
	compile_on B
	expect_built B $?
	cp "$CASE/manifest.m" "$mine" # shared with the other repositories
	assertEquals "B compiled" 2 "$(nvcc_compiles)"
	assertEquals "counted as an error" 1 "$(remote_stat B remote_errors)"
	assertContains "$(cat "$CJC_LOG")" "metadata"
}

# embedded_at MANIFEST SUFFIX: the offset in the file of the middle of the
# first layer's embedded bytes (deflated, base64) whose mediaType ends in
# SUFFIX.
embedded_at() {
	/usr/bin/python3 - "$1" "$2" <<-'EOF'
		import json, sys
		raw = open(sys.argv[1], "rb").read()
		for layer in json.loads(raw)["layers"]:
		    text = layer.get("annotations", {}).get("org.cudajitcache.deflate")
		    if layer["mediaType"].endswith(sys.argv[2]) and text:
		        print(raw.index(text.encode()) + len(text) // 2)
		        break
	EOF
}

# flip_byte FILE OFFSET [base64]: another byte there (another base64 digit).
flip_byte() {
	/usr/bin/python3 - "$@" <<-'EOF'
		import sys
		path, at = sys.argv[1], int(sys.argv[2])
		with open(path, "r+b") as f:
		    f.seek(at)
		    b = f.read(1)[0]
		    f.seek(at)
		    f.write(bytes([(b"B" if b == ord("A") else b"A")[0] if sys.argv[3:] else b ^ 0x55]))
	EOF
}

# A direct-mode manifest naming far more blobs than an entry has (40
# artifact layers of digests the registry does not have, edited into its
# storage, and its value no longer embedded): eight blobs are asked for at
# once, the value's and seven of those (remote_oci.c, FETCH_AT_ONCE), their
# 404s cost nothing, and the hit is the entry's.
testManyNamedBlobsAreAskedForBoundedly() {
	upload_template
	local manifest before rc
	manifest=$(stored_manifest m)
	cp "$manifest" "$CASE/manifest.m"
	/usr/bin/python3 - "$manifest" <<-'EOF' || fail "the manifest"
		import json, os, sys
		m = json.load(open(sys.argv[1]))
		del m["layers"][0]["annotations"]["org.cudajitcache.deflate"] # the value: its blob
		m["layers"] += [{"mediaType": "application/vnd.cudajitcache.artifact.v1", "size": 1000,
		                 "digest": "sha256:" + os.urandom(32).hex()} for _ in range(40)]
		open(sys.argv[1], "w").write(json.dumps(m, separators=(",", ":")))
	EOF
	before=$(wc -l <"$REGISTRY_LOG")
	export CJC_REMOTE=$OCI_URL
	compile_on B
	rc=$?
	cp "$CASE/manifest.m" "$manifest" # shared with the other repositories
	assertEquals "B: the build's status ($(tail -2 "$CASE/B.err"))" 0 $rc
	assert_same_devcode "$SUITE_DIR/ref.cubin" "$CASE/B.cubin"
	assertEquals "B: nvcc not run" 0 "$(nvcc_compiles)"
	assertEquals "B: a remote hit" 1 "$(remote_stat B remote_hits)"
	assertEquals "B: no error" 0 "$(remote_stat B remote_errors)"
	local asked
	registry_log_settled || fail "the registry's log"
	asked=$(tail -n +$((before + 1)) "$REGISTRY_LOG" | grep -o "\"GET /v2/$REPO/blobs/[^\"]*\" [0-9]*")
	assertEquals "blobs asked for: $asked" 8 "$(grep -c . <<<"$asked")"
	assertEquals "the value's: $asked" 1 "$(grep -c '" 200$' <<<"$asked")"
	assertEquals "seven named: $asked" 7 "$(grep -c '" 404$' <<<"$asked")"
}

# A registry (a proxy of the real one) whose entry record says each
# artifact is 8 GB, and which streams zeros for any blob: nothing fetched
# or allocated for it, one error.
testHugeArtifactIsNotFetched() {
	upload_template
	start_fake "$CASE/fake" oci-huge "$REGISTRY_HOST" || fail "fake registry"
	export CJC_REMOTE="oci+http://127.0.0.1:$FAKE_PORT/$REPO|credentials-file=$SUITE_DIR/credentials|read-only"
	compile_on B
	expect_built B $?
	assertEquals "one error" 1 "$(remote_stat B remote_errors)"
	assertContains "$(cat "$CJC_LOG")" "larger than a remote artifact may be"
	kill_server fake
	local sent
	sent=$(awk '{ n += $1 } END { print n + 0 }' "$CASE/fake/port.sent")
	assertTrue "the registry sent $sent bytes" "[ $sent -lt $((1 << 20)) ]"
	assertTrue "it was asked ($(cat "$CASE/fake/port.requests"))" "grep -q manifests '$CASE/fake/port.requests'"
}

# A blob's GET redirected to a storage host that answers 401 and names a
# realm of its own (the value's and another named beside it, fetched at
# once, then the value again alone): no credentials go there, no token is
# fetched from it
# (the credentials go to the registry and the realm the registry's own 401
# names, nowhere else), and the build goes on.
testAStorageHostCannotNameARealm() {
	start_fake "$CASE/fake" oci-storage401 || fail "fake registry"
	export CJC_REMOTE="oci+http://$REGISTRY_USER:Pw$RANDOM@127.0.0.1:$FAKE_PORT/$REPO|read-only"
	compile_on B
	expect_built B $?
	local requests
	requests=$(cat "$CASE/fake/port.requests")
	assertEquals "both blobs, then the value alone: $requests" 3 \
		"$(grep -c '^GET /storage/' <<<"$requests")"
	assertNotContains "no token asked of the storage host: $requests" "$requests" "/steal"
	assertNotContains "no credentials sent to it: $requests" "$requests" "CREDENTIALS"
	kill_server fake
}

# A manifest of 32 MB that a JSON parser would make tens of times larger:
# refused by its length before it is read (a manifest of ours is small).
testABloatedManifestIsRefusedUnread() {
	start_fake "$CASE/fake" oci-bloat || fail "fake registry"
	export CJC_REMOTE="oci+http://127.0.0.1:$FAKE_PORT/$REPO|operation-timeout=4s|read-only"
	compile_on B
	expect_built B $?
	assertEquals "one error" 1 "$(remote_stat B remote_errors)"
	assertContains "$(cat "$CJC_LOG")" "the reply is larger than"
	kill_server fake
	local sent
	sent=$(awk '{ n += $1 } END { print n + 0 }' "$CASE/fake/port.sent")
	assertTrue "the registry sent $sent bytes" "[ $sent -lt $((4 << 20)) ]"
}

# --- registries that fail -----------------------------------------------------

# Refused (403 DENIED), failing (500), full (quota: reads 404, writes 403
# "quota exceeded"), dripping a byte a second: each build succeeds with
# nvcc's bytes, the store costs one error or timeout (a second's deadline
# at most, once), and the local store goes on: the next compile is a hit.
testFailingRegistriesCostOneFailure() {
	local mode counter failing requests first
	for mode in oci-denied:remote_errors:. oci-500:remote_errors:. \
		'oci-quota:remote_errors:^(POST|PUT|PATCH)' oci-drip:remote_timeouts:.; do
		IFS=: read -r mode counter failing <<<"$mode"
		start_fake "$CASE/$mode" $mode || fail "fake registry"
		export CJC_REMOTE="oci+http://127.0.0.1:$FAKE_PORT/$REPO|credentials-file=$SUITE_DIR/credentials|operation-timeout=1s"
		: >"$NVCC_LOG"
		compile_on $mode
		expect_built $mode $?
		assertEquals "$mode: compiled" 1 "$(nvcc_compiles)"
		assertEquals "$mode: one of $counter" 1 "$(remote_stat $mode $counter)"
		assertEquals "$mode: no other failure" 1 \
			"$(($(remote_stat $mode remote_errors) + $(remote_stat $mode remote_timeouts)))"
		compile_on $mode || fail "$mode: the second build"
		assertEquals "$mode: the local store's hit" 1 "$(remote_stat $mode hits)"
		assertEquals "$mode: compiled once" 1 "$(nvcc_compiles)"
		# the server counts a connection once it ends (a dripping one:
		# when its next byte finds the client gone)
		wait_for_lines 1 . "$CASE/$mode/port.sent" || fail "$mode: the server counted nothing"
		kill_server fake
		# (oci-quota: reads are misses; the first write is refused)
		requests=$CASE/$mode/port.requests
		first=$(grep -nE "$failing" "$requests" | head -1 | cut -d: -f1)
		assertEquals "$mode: nothing asked after the first failure: $(cat "$requests")" \
			"$(wc -l <"$requests")" "$first"
	done
	assertTrue "the drip was cut: $(cat "$CASE/oci-drip/port.sent") bytes" \
		"[ $(awk '{ n += $1 } END { print n + 0 }' "$CASE/oci-drip/port.sent") -le 10 ]"
}

# The real registry on a full file system (a tmpfs filled up): its uploads
# fail (500); the compile that would publish builds, with one error; once
# there is room again, the next publishes.
testFullRegistryCostsOneError() {
	[ -n "$FULL_FS" ] || { startSkipping; echo "not root, or no unshare -m: no full file system"; return; }
	dd if=/dev/zero of="$REGISTRY_ROOT/filler" bs=1M 2>/dev/null
	dd if=/dev/zero of="$REGISTRY_ROOT/filler2" bs=4k 2>/dev/null
	export CJC_REMOTE=$OCI_URL
	compile_on A
	rm -f "$REGISTRY_ROOT/filler" "$REGISTRY_ROOT/filler2"
	expect_built A $?
	assertEquals "A compiled" 1 "$(nvcc_compiles)"
	assertEquals "one error" 1 "$(remote_stat A remote_errors)"
	assertEquals "no entry published" 0 "$(tagged)"
	compile_on B || fail "B's build"
	assertEquals "B compiled" 2 "$(nvcc_compiles)"
	assertEquals "B published" 0 "$(remote_stat B remote_errors)"
	# (its helper may still be sending it: the entry and its manifest tagged)
	wait_until "[ \$(tagged) = 2 ]" || fail "B's entry never came"
	compile_on C || fail "C's build"
	assertEquals "C was served" 1 "$(remote_stat C remote_hits)"
}

# tagged: the manifests tagged in this case's repository.
tagged() {
	find "$REGISTRY_ROOT/docker/registry/v2/repositories/$REPO/_manifests/tags" \
		-path '*/current/link' 2>/dev/null | grep -c .
}

# --- a fleet ------------------------------------------------------------------

# Three runners compile the same key at once, each with its own store, the
# registry first and Redis beside it: the registry takes no leases, so they
# are Redis's (remote.c: the first store that takes them).  A holds the
# lease while nvcc runs; B and C wait for it and are served A's entry (from
# whichever store has it first: A publishes to both): nvcc runs once.
testFleetCompilesEachKeyOnce() {
	local TEST_DIR=$CASE
	mkdir -p "$CASE/bin" && make_held_nvcc
	export CJC_REMOTE="$OCI_URL $REDIS_URL"
	on A "$CJC" "$CASE/bin/nvcc-held" --cubin k.cu -o "$CASE/A.cubin" -arch=$ARCH 2>"$CASE/A.err" &
	local a=$! b c
	wait_for_file "$CASE/held" || fail "A never ran nvcc"
	assertEquals "A's lease is on Redis" 1 "$(redis_cli --raw KEYS 'cjc/*/l/*' | grep -c .)"
	on B "$CJC" "$CASE/bin/nvcc-held" --cubin k.cu -o "$CASE/B.cubin" -arch=$ARCH 2>"$CASE/B.err" &
	b=$!
	on C "$CJC" "$CASE/bin/nvcc-held" --cubin k.cu -o "$CASE/C.cubin" -arch=$ARCH 2>"$CASE/C.err" &
	c=$!
	wait_for_lines 2 'held by another machine' "$CJC_LOG" || fail "B and C did not wait"
	touch "$CASE/go"
	wait $a || fail "A failed"
	wait $b || fail "B failed"
	wait $c || fail "C failed"
	assertEquals "nvcc ran once" 1 "$(nvcc_compiles)"
	local m
	for m in A B C; do
		assert_same_devcode "$SUITE_DIR/ref.cubin" "$CASE/$m.cubin"
	done
	for m in B C; do
		assertEquals "$m was served" 1 "$(remote_stat $m remote_hits)"
		assertEquals "$m waited" 1 "$(remote_stat $m lease_waits)"
	done
	assertEquals "A published to the registry" 2 "$(tagged)"
}

# --- the recipe ---------------------------------------------------------------

# examples/ci/github-actions-ghcr.yml: YAML that gives the job packages:
# write, the token in a credentials file (never in the URL), and a fork's
# pull request a read-only store.
testGhcrRecipeParses() {
	local recipe=$CJC_SOURCE_DIR/examples/ci/github-actions-ghcr.yml
	[ -f "$recipe" ] || { startSkipping; echo "CJC_SOURCE_DIR not set"; return; }
	/usr/bin/python3 -c 'import yaml' 2>/dev/null || { startSkipping; echo "no python3-yaml"; return; }
	local doc run
	doc=$(/usr/bin/python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$recipe")
	assertEquals "packages: write" write "$(jq -r .permissions.packages <<<"$doc")"
	run=$(jq -r '.jobs.build.steps[] | select(.name == "The remote store on GHCR") | .run' <<<"$doc")
	assertContains "$run" 'oci://ghcr.io/'
	assertContains "$run" 'credentials-file='
	assertContains "$run" '|read-only'
	assertNotContains "no token in the URL" "$(grep 'url=' <<<"$run")" GITHUB_TOKEN
	assertEquals "the token from the job" '${{ secrets.GITHUB_TOKEN }}' \
		"$(jq -r '.jobs.build.steps[] | select(.name == "The remote store on GHCR") | .env.GITHUB_TOKEN' <<<"$doc")"
}

. "$SHUNIT2"
