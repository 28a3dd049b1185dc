#!/bin/bash
# oci_test.sh - docs/remote.md#oci-registries: a remote store in an OCI
# registry (Debian's docker-registry 2.8, htpasswd authentication, plain
# HTTP on 127.0.0.1, started by this suite: tests/servers.sh).  Machine A
# compiles and publishes; machine B, another user with an empty store, is
# served A's bytes with no nvcc run.  Wrong or missing credentials are a
# message that says so and a local compile, never a failed build, and no
# secret is shown.  The registry's hostile cases (tampering, 500s, drips,
# quota, token server) are tests/oci_hostile_test.sh's.

. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/servers.sh"

for tool in docker-registry htpasswd curl jq; do
	command -v $tool >/dev/null || { echo "$tool not found: skipping" >&2; exit 125; }
done

OTHER=cjc-oci-b # machine B's user

oneTimeSetUp() {
	use_suite_dir oci
	setUp() { case_setup; }
	tearDown() {
		local pid # B's helper: its socket is gone with WORK, but it need not wait to see it
		for pid in $(sed -n 's/.*started the helper of .* (pid \([0-9]*\),.*/\1/p' "$WORK/B/cjc.log" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null
		done
		rm -rf "$CASE/run" "$WORK" 2>/dev/null || rm -rf "$CASE/run" "$WORK"
	}
	start_registry "$SUITE_DIR/registry" || exit 1
	use_others_dir
	id -u "$OTHER" >/dev/null 2>&1 || useradd -M -N -s /usr/sbin/nologin "$OTHER" ||
		id -u "$OTHER" >/dev/null 2>&1 || { echo "cannot make user $OTHER" >&2; exit 1; }
}

oneTimeTearDown() {
	servers_stop_all
	rm_others_dir
	rm -rf "$SUITE_DIR"
}

# Each case: its own log and run directory, and a work directory that both
# machines reach at the same path (the sources, the counting nvcc and its log).
case_setup() {
	CASE=$(mktemp -d "$SUITE_DIR/case.XXXXXX")
	use_run_dir "$CASE"
	export CJC_LOG="$CASE/cjc.log"
	unset CJC_REMOTE
	WORK=$(mktemp -d "$OTHERS_DIR/work.XXXXXX") && chmod 755 "$WORK" &&
		mkdir -p "$WORK/src" "$WORK/bin" "$WORK/B" && chmod 777 "$WORK/src" &&
		chown "$OTHER" "$WORK/B" || fail "the work directory"
	cp "$SUITE_DIR"/src/*.cu "$SUITE_DIR"/src/*.h "$WORK/src" && make_nvcc_wrapper "$WORK/bin/nvcc" &&
		touch "$WORK/nvcc.log" && chmod 666 "$WORK/nvcc.log" || fail "the files"
	export NVCC_LOG=$WORK/nvcc.log
	cd "$WORK/src" || fail "cd"
	# registry state from other cases: a fresh repository each case
	REPO=cjc/c$RANDOM$RANDOM
	URL=${REGISTRY_URL%/cjc/store}/$REPO
	ANON_URL=${REGISTRY_ANON_URL%/cjc/store}/$REPO
}

# compile_A [ARG...]: machine A (root, its own store) compiles the kernel.
compile_A() {
	CJC_DIR="$CASE/A" "$CJC" "$WORK/bin/nvcc" -c "${SRC:-k.cu}" -o "$WORK/A.o" -arch=$ARCH "$@" \
		2>"$CASE/A.err"
}

# compile_B: machine B, another user with an empty store and its own helpers.
compile_B() {
	setpriv --reuid="$OTHER" --regid="$(id -g "$OTHER")" --init-groups env \
		CJC_DIR="$WORK/B/cache" CJC_LOG="$WORK/B/cjc.log" XDG_RUNTIME_DIR="$WORK/B/run" \
		HOME="$WORK/B" "$OTHERS_CJC" "$WORK/bin/nvcc" -c "${SRC:-k.cu}" -o "$WORK/B/B.o" -arch=$ARCH \
		2>"$CASE/B.err"
}

# The registry's access log since line $1 of it: "METHOD PATH STATUS" lines.
requests_since() {
	registry_log_settled # says why when it cannot
	tail -n +"$(($1 + 1))" "$REGISTRY_LOG" | grep -v '/v2/_settle/' | sed -n 's/.*"\([A-Z]*\) \(\/v2\/[^ ]*\) HTTP\/[0-9.]*" \([0-9]*\).*/\1 \2 \3/p'
}

log_lines() { wc -l <"$REGISTRY_LOG"; }

registry_curl() {
	curl -sf -u "$REGISTRY_USER:$REGISTRY_PASSWORD" "$@"
}

# The tag of the entry A published.
# stored_sha: the SHA-256 of the object as A's store keeps it (compressed
# or not; docs/store.md#compression), its blob's digest.
stored_sha() {
	meta_doc "$CASE"/A/v1/*/entries/*/*/metadata.json | jq -r '.files["output.o"] | .zstd.sha256 // .sha256'
}

entry_tag() {
	registry_curl "http://$REGISTRY_HOST/v2/$REPO/tags/list" | jq -r '.tags[] | select(contains(".e."))'
}

testMachineBAnotherUserIsServedWhatAPublished() {
	export CJC_REMOTE=$URL
	compile_A || fail "A's compile: $(cat "$CASE/A.err")"
	assertEquals "A compiled" 1 "$(nvcc_compiles)"
	local mark
	mark=$(log_lines)
	compile_B || fail "B's compile: $(cat "$CASE/B.err")"
	assertEquals "B compiled nothing" 1 "$(nvcc_compiles)"
	assertTrue "B got A's bytes" "cmp -s '$WORK/A.o' '$WORK/B/B.o'"
	local stats
	stats=$(setpriv --reuid="$OTHER" --regid="$(id -g "$OTHER")" --init-groups env \
		CJC_DIR="$WORK/B/cache" "$OTHERS_CJC" stats --json)
	assertEquals "B's remote hits" 1 "$(jq .remote_hits <<<"$stats")"
	assertEquals "B's remote errors" 0 "$(jq .remote_errors <<<"$stats")"
	# a hit on an empty store: the direct-mode manifest, which embeds the
	# entry's record and its small artifact; no more (a 401 at most once)
	local asked
	asked=$(requests_since "$mark")
	assertEquals "manifests B read: $asked" 1 "$(grep -c '^GET /v2/[^ ]*/manifests/.* 200$' <<<"$asked")"
	assertEquals "no blob read: $asked" 0 "$(grep -c '^GET /v2/[^ ]*/blobs/' <<<"$asked")"
	assertTrue "no more than one 401: $asked" "[ $(grep -vc ' 401$' <<<"$asked") = 1 ]"
}

# An entry too large to embed (a direct-mode manifest of 4000 headers and
# a record naming them, an object of incompressible bytes): the direct-mode
# manifest names the entry's record and object beside its own value, and B
# fetches those three blobs at once (remote_oci.c: get_at_once), so its hit
# is the one manifest and then the blobs: no entry manifest is read.  A
# damaged blob among them is a miss; a publication's merge fetches none.
testLargeEntryIsOneManifestAndItsBlobs() {
	export CJC_REMOTE=$URL
	local SRC=big.cu mark asked
	/usr/bin/python3 - <<-'EOF' || fail "the sources"
		import os
		os.mkdir("many")
		with open("big.cu", "w") as cu:
		    for i in range(4000):
		        name = "many/header_%05d_%s.h" % (i, os.urandom(6).hex())
		        open(name, "w").write("#define H%d %d\n" % (i, i))
		        cu.write('#include "%s"\n' % name)
		    data = os.urandom(150000)
		    cu.write("__device__ const unsigned char big[] = {%s};\n" % ",".join(map(str, data)))
		    cu.write("__global__ void k(unsigned char *o, int i) { o[i] = big[i]; }\n")
	EOF
	chmod -R a+rX . && touch -d '-1 hour' big.cu many/* # older than the racy window
	compile_A || fail "A's compile: $(cat "$CASE/A.err")"
	mark=$(log_lines)
	compile_B || fail "B's compile: $(cat "$CASE/B.err")"
	assertEquals "B compiled nothing" 1 "$(nvcc_compiles)"
	assertTrue "B got A's bytes" "cmp -s '$WORK/A.o' '$WORK/B/B.o'"
	asked=$(requests_since "$mark" | grep -v ' 401$')
	assertEquals "B's requests: $asked" 4 "$(wc -l <<<"$asked")"
	assertEquals "the direct-mode manifest: $asked" 1 "$(grep -c '^GET /v2/[^ ]*/manifests/[^ ]*\.m\.[0-9a-f]* 200$' <<<"$asked")"
	assertEquals "three blobs: $asked" 3 "$(grep -c '^GET /v2/[^ ]*/blobs/sha256:[0-9a-f]* 200$' <<<"$asked")"
	# The object's blob damaged in the registry's storage (put back after):
	# fetched with the others it is not kept, asked for again it is a miss
	# counted as an error, and C, another empty store, compiles.
	local hex data rc
	hex=$(stored_sha)
	data=$REGISTRY_ROOT/docker/registry/v2/blobs/sha256/${hex:0:2}/$hex/data
	cp "$data" "$CASE/object" || fail "the object's blob"
	/usr/bin/python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(1000); b = f.read(1)[0]; f.seek(1000); f.write(bytes([b ^ 0x55]))' "$data"
	CJC_DIR="$CASE/C" "$CJC" "$WORK/bin/nvcc" -c big.cu -o "$WORK/C.o" -arch=$ARCH 2>"$CASE/C.err"
	rc=$?
	cp "$CASE/object" "$data"
	assertEquals "C's build: $(tail -2 "$CASE/C.err")" 0 $rc
	assertEquals "C compiled" 2 "$(nvcc_compiles)"
	assertEquals "C: no hit" 0 "$(CJC_DIR="$CASE/C" "$CJC" stats --json | jq .remote_hits)"
	assertEquals "C: the damage counted" 1 "$(CJC_DIR="$CASE/C" "$CJC" stats --json | jq .remote_errors)"
	assertContains "$(cat "$CJC_LOG")" "differs from its digest"
	# A header changed: D's lookup fetches the newest entry with the
	# manifest (its object once), misses, compiles and publishes; reading
	# the direct-mode manifest to merge its record into it fetches nothing
	# that manifest names (remote_oci.c: merging).
	echo '/* changed */' >>"$(ls many/header_00000_*.h)" && touch -d '-1 hour' many/header_00000_*.h
	mark=$(log_lines)
	CJC_DIR="$CASE/D" "$CJC" "$WORK/bin/nvcc" -c big.cu -o "$WORK/D.o" -arch=$ARCH 2>"$CASE/D.err" ||
		fail "D's build: $(cat "$CASE/D.err")"
	assertEquals "D compiled" 3 "$(nvcc_compiles)"
	asked=$(requests_since "$mark")
	assertEquals "D merged the direct-mode manifest: $asked" 1 \
		"$(grep -c '^PUT /v2/[^ ]*/manifests/[^ ]*\.m\.[0-9a-f]* 201$' <<<"$asked")"
	assertEquals "the old object fetched once: $asked" 1 "$(grep -c "^GET /v2/[^ ]*/blobs/sha256:$hex 200$" <<<"$asked")"
}

# A blob the registry has is not uploaded again: the entry's manifest
# deleted, `cjc remote upload` writes it again with no upload at all (its
# record's blob, the config and the artifact are all there).
testSecondPublishUploadsNoBlobAgain() {
	export CJC_REMOTE=$URL
	compile_A || fail "A's compile"
	local tag digest mark asked
	tag=$(entry_tag)
	assertNotNull "an entry's tag" "$tag"
	digest=$(registry_curl -I -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$REGISTRY_HOST/v2/$REPO/manifests/$tag" |
		sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: *\([^[:space:]]*\).*/\1/p')
	registry_curl -X DELETE "http://$REGISTRY_HOST/v2/$REPO/manifests/$digest" || fail "DELETE $digest"
	mark=$(log_lines)
	CJC_DIR="$CASE/A" "$CJC" remote upload >/dev/null 2>&1 || fail "cjc remote upload"
	asked=$(requests_since "$mark")
	assertEquals "the entry's manifest written again: $asked" 1 \
		"$(grep -c "^PUT /v2/$REPO/manifests/$tag 201\$" <<<"$asked")"
	assertEquals "no upload: $asked" 0 "$(grep -c '/blobs/uploads/' <<<"$asked")"
}

# expect_auth_failure URL: the compile succeeds, the local store works, one
# message says authentication failed, and the password is nowhere.
expect_auth_failure() {
	export CJC_REMOTE=$1
	compile_A || fail "the compile failed: $(cat "$CASE/A.err")"
	cp "$CASE/A.err" "$CASE/first.err"
	assertTrue "the object is there" "[ -s '$WORK/A.o' ]"
	assertEquals "one message: $(cat "$CASE/A.err")" 1 "$(grep -c 'authentication failed' "$CASE/A.err")"
	assertEquals "nothing else said" 1 "$(grep -c . "$CASE/A.err")"
	compile_A || fail "the second compile"
	assertEquals "the local store served the second" 1 "$(nvcc_compiles)"
	assertEquals "counted as a remote error" true \
		"$(CJC_DIR="$CASE/A" "$CJC" stats --json | jq '.remote_errors >= 1')"
	local shown
	shown=$(cat "$CASE/first.err" "$CASE/A.err" "$CJC_LOG"; CJC_DIR="$CASE/A" "$CJC" stats; CJC_DIR="$CASE/A" "$CJC" stats --json)
	assertNotContains "no password shown" "$shown" "$PASSWORD"
	assertNotContains "no registry password shown" "$shown" "$REGISTRY_PASSWORD"
}

testWrongPasswordIsSaidOnceAndTheBuildGoesOn() {
	PASSWORD=wrong-$RANDOM-secret
	expect_auth_failure "oci+http://$REGISTRY_USER:$PASSWORD@$REGISTRY_HOST/$REPO"
}

testAnonymousAgainstAPasswordRegistryIsSaid() {
	PASSWORD=$REGISTRY_PASSWORD
	expect_auth_failure "$ANON_URL"
	assertContains "it says what is missing" "$(cat "$CASE/first.err")" "asks for credentials"
}

testRemoteCheckPassesAndFailsClearly() {
	local said
	said=$(CJC_REMOTE=$URL CJC_DIR="$CASE/A" "$CJC" remote check 2>&1)
	assertTrue "check passes: $said" $?
	assertContains "$said" "wrote and read back"
	local wrong=wrong-$RANDOM-secret
	said=$(CJC_REMOTE="oci+http://$REGISTRY_USER:$wrong@$REGISTRY_HOST/$REPO" CJC_DIR="$CASE/A" \
		"$CJC" remote check 2>&1)
	assertFalse "check fails: $said" $?
	assertContains "$said" "authentication failed"
	assertNotContains "$said" "$wrong"
}

# credentials-file: one line USER:SECRET (a CI token as the secret).
testCredentialsFile() {
	printf '%s:%s\n' "$REGISTRY_USER" "$REGISTRY_PASSWORD" >"$CASE/credentials"
	chmod 600 "$CASE/credentials"
	export CJC_REMOTE="$ANON_URL|credentials-file=$CASE/credentials"
	compile_A || fail "A's compile"
	assertEquals "nothing said: $(cat "$CASE/A.err")" 0 "$(grep -c . "$CASE/A.err")"
	CJC_DIR="$CASE/C" "$CJC" "$WORK/bin/nvcc" -c k.cu -o "$WORK/C.o" -arch=$ARCH || fail "C's compile"
	assertEquals "C was served" 1 "$(nvcc_compiles)"
	assertEquals "C's remote hit" 1 "$(CJC_DIR="$CASE/C" "$CJC" stats --json | jq .remote_hits)"
	local said
	said=$(CJC_DIR="$CASE/A" "$CJC" remote check 2>&1)
	assertTrue "check passes: $said" $?
	assertNotContains "$said" "$REGISTRY_PASSWORD"
}

# The entry is an OCI artifact others can list: our artifactType, the
# empty config, and a layer for each artifact, by its SHA-256.
testEntryIsAnOciArtifact() {
	export CJC_REMOTE=$URL
	compile_A || fail "A's compile"
	local m
	m=$(registry_curl -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$REGISTRY_HOST/v2/$REPO/manifests/$(entry_tag)")
	assertEquals "artifactType" application/vnd.cudajitcache.entry.v1 "$(jq -r .artifactType <<<"$m")"
	assertEquals "config" application/vnd.oci.empty.v1+json "$(jq -r .config.mediaType <<<"$m")"
	assertEquals "the record's layer" application/vnd.cudajitcache.record.v1 \
		"$(jq -r '.layers[0].mediaType' <<<"$m")"
	assertContains "the object's layer" \
		"$(jq -r '.layers[1:][] | select(.mediaType == "application/vnd.cudajitcache.artifact.v1") | .digest' <<<"$m")" \
		"sha256:$(stored_sha)"
	assertEquals "the record's embedded bytes (deflated) are its blob" \
		"$(jq -r '.layers[0].annotations["org.cudajitcache.deflate"]' <<<"$m" | base64 -d |
			/usr/bin/python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read()))' |
			sha256sum | cut -d' ' -f1)" \
		"$(jq -r '.layers[0].digest' <<<"$m" | cut -d: -f2)"
	# the direct-mode manifest embeds that record, named by the entry's key
	local tag d
	tag=$(entry_tag)
	d=$(registry_curl -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
		"http://$REGISTRY_HOST/v2/$REPO/manifests/$(registry_curl \
		"http://$REGISTRY_HOST/v2/$REPO/tags/list" | jq -r '.tags[] | select(contains(".m."))')")
	assertEquals "the entry's record in the direct-mode manifest" "$(jq -r '.layers[0].digest' <<<"$m")" \
		"$(jq -r --arg key "${tag##*.}" '.layers[1:][] | select(.annotations["org.cudajitcache.entry"] == $key) | .digest' <<<"$d")"
}

. "$SHUNIT2"
