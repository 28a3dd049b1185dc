#!/bin/bash
# store_test.sh - docs/store.md and docs/command-line.md for the store as a whole: eviction of the
# least recently used entries (automatic with max_size, on demand with
# `cjc gc`), a store shared by a group, and symbolic links planted in it;
# cjc's own heap, advised for 2 MB pages (src/tool/main.c).
# The compiles are --cubin: no host compile, and an entry like any other.

. "$(dirname "$0")/helpers.sh"

ns() { echo "$CJC_DIR"/v1/linux-*; }

# variants N: compiles -DV=1..N, each a new entry.
variants() {
	local i
	for i in $(seq "$1"); do cjc_nvcc --cubin k.cu -o v$i.cubin -arch=$ARCH -DV=$i || return 1; done
}

# stored_record: the output's record in the only entry's metadata.json.
stored_record() {
	meta_doc "$(ns)"/entries/*/*/metadata.json | jq -c '.files["output.cubin"]'
}

# entry_with TEXT: the directory of each entry whose metadata holds TEXT.
entry_with() {
	local m
	for m in "$(ns)"/entries/*/*/metadata.json; do
		meta_doc "$m" | grep -q -- "$1" && dirname "$m"
	done
}

# Outputs are stored as one zstd frame each (docs/store.md): the file is
# the frame its record names (size, sha256), it inflates to the output's
# bytes, and a hit serves those.
testOutputsAreStoredCompressed() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	local e rec
	e=$(echo "$(ns)"/entries/*/*)
	rec=$(stored_record)
	assertEquals "the file is the stored size" "$(echo "$rec" | jq .zstd.size)" "$(stat -c %s "$e/output.cubin")"
	assertTrue "smaller than the output" "[ $(stat -c %s "$e/output.cubin") -lt $(stat -c %s a.cubin) ]"
	assertEquals "the stored hash" "$(echo "$rec" | jq -r .zstd.sha256)" "$(sha256sum <"$e/output.cubin" | cut -d' ' -f1)"
	assertEquals "the output's own hash" "$(echo "$rec" | jq -r .sha256)" "$(sha256sum <a.cubin | cut -d' ' -f1)"
	if command -v zstd >/dev/null; then
		assertTrue "a zstd frame of the output" "zstd -q -d -c '$e/output.cubin' | cmp -s - a.cubin"
	fi
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail
	expect_stat hits 1
	assertTrue "the hit served the output's bytes" "cmp -s a.cubin b.cubin"
}

# compression_level 0 writes entries as every entry was written before
# compression: the file is the output, its record has no "zstd".  Such
# entries stay readable, and are served to a reader that compresses.
testUncompressedEntriesStayReadable() {
	CJC_COMPRESSION_LEVEL=0 cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	local e
	e=$(echo "$(ns)"/entries/*/*)
	assertEquals "no zstd record" null "$(stored_record | jq .zstd)"
	assertEquals "plain metadata" "{" "$(head -c1 "$e/metadata.json")"
	assertTrue "the file is the output" "cmp -s '$e/output.cubin' a.cubin"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail
	expect_stat hits 1
	assertTrue "served" "cmp -s a.cubin b.cubin"
	assertTrue "it verifies" "'$CJC' verify >/dev/null"
	cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH || fail # and through the memo of checked metadata
	expect_stat hits 2
	assertTrue "served again" "cmp -s a.cubin c.cubin"
}

# metadata.json is stored compressed too (docs/store.md#compression): one
# zstd frame of the document, with zstd's checksum; `cjc show` and
# `cjc verify` read it, a hit serves the entry, and a frame whose bytes
# changed is damage: counted, a miss, never served.
testMetadataIsStoredCompressed() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	local e key
	e=$(echo "$(ns)"/entries/*/*) key=$(basename "$(echo "$(ns)"/entries/*/*)")
	assertEquals "a zstd frame" 28b52ffd "$(od -An -tx1 -N4 "$e/metadata.json" | tr -d ' ')"
	assertEquals "of the document" cudajitcache.entry.v1 "$(meta_doc "$e/metadata.json" | jq -r .format)"
	assertTrue "smaller" "[ $(stat -c %s "$e/metadata.json") -lt $(meta_doc "$e/metadata.json" | wc -c) ]"
	assertContains "cjc show reads it" "$("$CJC" show "$key")" "$key"
	assertTrue "it verifies" "'$CJC' verify >/dev/null"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail
	expect_stat hits 1
	chmod u+w "$e" "$e/metadata.json"
	printf 'x' | dd of="$e/metadata.json" bs=1 seek=40 conv=notrunc 2>/dev/null
	assertFalse "verify finds the damage" "'$CJC' verify >verify.txt"
	assertTrue "names it: $(cat verify.txt)" "grep -q 'metadata.json is damaged' verify.txt"
	rm -rf "$(ns)"/hashes # no memo of the document read before
	cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH || fail "the build broke"
	expect_nvcc_runs 2
	expect_stat damaged 1
}

# first4 FILE: the four bytes after a blob's magic (od's hex), where a
# packed payload begins with zstd's magic number (blob.h).
first4() {
	od -An -tx1 -j4 -N4 "$1" | tr -d ' '
}

# The manifest and the hash cache are packed (docs/store.md): one zstd frame
# in the blob, smaller than the plain payload, read back on the next hit.
# compression_level 0 writes them plain, as before, and a reader that packs
# reads those too.
testBookkeepingIsPackedAndPlainStaysReadable() {
	CJC_COMPRESSION_LEVEL=0 cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	local m h
	m=$(echo "$(ns)"/manifests/*/*) h=$(find "$(ns)/hashes" -type f | head -1)
	assertEquals "a plain manifest: its version" 02000000 "$(first4 "$m")"
	assertEquals "a plain hash cache: its version" 02000000 "$(first4 "$h")"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail
	expect_stat hits 1
	rm -rf "$(ns)"/manifests "$(ns)"/hashes "$(ns)"/entries
	cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH || fail
	m=$(echo "$(ns)"/manifests/*/*) h=$(find "$(ns)/hashes" -type f | head -1)
	assertEquals "a packed manifest" 28b52ffd "$(first4 "$m")"
	assertEquals "a packed hash cache" 28b52ffd "$(first4 "$h")"
	cjc_nvcc --cubin k.cu -o d.cubin -arch=$ARCH || fail
	expect_stat hits 2
	assertTrue "served" "cmp -s c.cubin d.cubin"
}

# A packed manifest whose CRC holds but whose frame does not inflate is
# damaged: a miss, logged, never a crash.
testAPackedManifestThatDoesNotInflateIsAMiss() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	local m
	m=$(echo "$(ns)"/manifests/*/*)
	chmod u+w "$m"
	python3 - "$m" <<'PY' || fail "the forged manifest"
import sys, zlib
p = sys.argv[1]
data = open(p, 'rb').read()
body = data[:4] + data[4:8] + bytes(b ^ 0x5a for b in data[8:-4])  # the frame's bytes changed
open(p, 'wb').write(body + zlib.crc32(body).to_bytes(4, 'little'))
PY
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail "the build broke"
	expect_nvcc_runs 2
	assertTrue "logged: $(cat "$CJC_LOG")" "grep -q 'unusable manifest .*: damaged; ignored' '$CJC_LOG'"
	assert_same_devcode a.cubin b.cubin
}

testCompressionLevelIsChecked() {
	CJC_COMPRESSION_LEVEL=20 cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH 2>err.txt || fail "the build broke"
	assertContains "the setting is named" "$(cat err.txt)" "compression_level"
	CJC_COMPRESSION_LEVEL=19 cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH -DV=19 || fail
	assertTrue "level 19 compresses" "meta_doc '$(entry_with -DV=19)/metadata.json' | grep -q '\"zstd\"'"
}

testAHitRefreshesRecency() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	local e
	e=$(echo "$(ns)"/entries/*/*)
	touch -d '2001-01-01' "$e"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail
	expect_stat hits 1
	assertTrue "the hit refreshed the entry's time" "[ $(stat -c %Y "$e") -gt $(($(date +%s) - 60)) ]"
	CJC_READONLY=1 cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH || fail
	touch -d '2001-01-01' "$e"
	CJC_READONLY=1 cjc_nvcc --cubin k.cu -o d.cubin -arch=$ARCH || fail
	assertEquals "a read-only hit writes nothing" "$(date -d 2001-01-01 +%s)" "$(stat -c %Y "$e")"
}

testGcMaxSizeEvictsLeastRecentlyUsedFirst() {
	variants 6 || fail
	local i bytes
	# v1 is the oldest ... v6 the newest; then a hit makes v1 the newest.
	for i in 1 2 3 4 5 6; do
		touch -d "$((10 - i)) minutes ago" "$(entry_with "-DV=$i\"")"
	done
	cjc_nvcc --cubin k.cu -o again1.cubin -arch=$ARCH -DV=1 || fail
	rm -rf "$(ns)"/hashes/* # gc counts hash caches too: none here, entries alone decide
	bytes=$(stat_value bytes)
	"$CJC" gc --max-size $((bytes / 2 + bytes / 12))B >gc.txt || fail
	assertTrue "report: $(cat gc.txt)" "grep -q 'evicted 3 of 6 entries' gc.txt"
	assertEquals "entries left" 3 "$(entry_count)"
	assertTrue "store within the size" "[ $(stat_value bytes) -le $((bytes / 2 + bytes / 12)) ]"
	for i in 1 5 6; do cjc_nvcc --cubin k.cu -o w$i.cubin -arch=$ARCH -DV=$i || fail; done
	assertEquals "the 3 most recently used were kept" 6 "$(nvcc_compiles)"
	cjc_nvcc --cubin k.cu -o w2.cubin -arch=$ARCH -DV=2 || fail
	assertEquals "an evicted one compiles again" 7 "$(nvcc_compiles)"
	"$CJC" verify >/dev/null || fail
	assertEquals "no staging left" 0 "$(find "$(ns)"/staging -mindepth 1 | wc -l)"
}

testGcOlderThanEvictsUnusedEntries() {
	variants 3 || fail
	touch -d '3 days ago' "$(entry_with '-DV=2"')"
	"$CJC" gc --older-than 2d >/dev/null || fail
	assertEquals "one evicted" 2 "$(entry_count)"
	assertEquals "bytes recounted" "$(du -sb --apparent-size "$(ns)"/entries/*/* | awk '{s += $1 - 4096} END {print s}')" \
		"$(stat_value bytes)"
	"$CJC" gc --older-than 1x 2>err.txt
	assertEquals "a bad age is a usage error" 2 $?
}

testMaxSizeKeepsTheStoreUnderItsLimit() {
	cjc_nvcc --cubin k.cu -o one.cubin -arch=$ARCH -DV=0 || fail
	local one limit
	one=$(stat_value bytes)
	# Room for about 1.5 entries per sixteenth: with 20 entries, some sixteenth overflows.
	limit=$((one * 3 / 2 * 16))
	export CJC_MAX_SIZE=${limit}B # bytes: a bare number is gibibytes
	variants 20 || fail
	assertTrue "the store stays within max_size" "[ $(stat_value bytes) -le $limit ]"
	assertTrue "entries were evicted" "[ $(entry_count) -lt 21 ]"
	assertTrue "eviction is logged" "grep -q 'evicted .* to stay under max_size' '$CJC_LOG'"
	assertEquals "the count matches the entries" "$(entry_count)" "$(stat_value entries)"
	"$CJC" verify >/dev/null || fail
	cjc_nvcc --cubin k.cu -o v20b.cubin -arch=$ARCH -DV=20 || fail
	assertEquals "the newest entry was kept" 21 "$(nvcc_compiles)"
	"$CJC" stats | grep -q 'of max_size' || fail "stats shows the limit"
}

testGroupSharedStore() {
	local group
	group=$(getent group users >/dev/null && echo users || echo nogroup)
	mkdir -p "$CJC_DIR" && chgrp "$group" "$CJC_DIR" && chmod 2775 "$CJC_DIR"
	echo 'umask = 002' >"$CJC_DIR/cudajitcache.conf"
	(umask 077 && cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH -MD) || fail
	(umask 077 && cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH -MD) || fail
	expect_stat hits 1
	# Subcommands that write the store use its umask too (quarantine/, here).
	chmod u+w "$(ns)"/entries/*/*/output.cubin && truncate -s 10 "$(ns)"/entries/*/*/output.cubin
	(umask 077 && "$CJC" verify --fix >/dev/null)
	assertTrue "quarantine made" "[ -d '$(ns)/quarantine' ]"
	assertEquals "every directory keeps the group and setgid" 0 \
		"$(find "$CJC_DIR" -type d \( ! -group "$group" -o ! -perm -2070 \) | wc -l)"
	# but the user's lease file (compile/lease.h): the user's alone by design
	assertEquals "every file is readable by the group" 0 \
		"$(find "$CJC_DIR" -type f ! -perm -040 ! -name "lease.$(id -u)" | wc -l)"
	assertEquals "the lease file is the user's alone" 600 "$(stat -c %a "$(ns)/stats/lease.$(id -u)")"
	assertEquals "the user's outputs keep the user's umask" "600 600 600" \
		"$(stat -c %a a.cubin b.cubin a.d | xargs)"
	CJC_UMASK=8 cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH 2>err.txt || fail "a bad umask broke the build"
	assertTrue "a bad umask is named" "grep -q CJC_UMASK err.txt"
}

# plant_links: symbolic links from the store to a directory outside it.
plant_links() {
	OUTSIDE=$TEST_DIR/outside
	mkdir -p "$OUTSIDE/victim/ab$(printf '0%.0s' $(seq 62))"
	echo precious >"$OUTSIDE/victim/file"
	echo precious >"$OUTSIDE/victim/ab$(printf '0%.0s' $(seq 62))/metadata.json"
	BEFORE=$(find "$OUTSIDE" -printf '%p %s %T@\n' | sort)
}

outside_untouched() {
	assertEquals "$1: nothing outside the store changed" "$BEFORE" "$(find "$OUTSIDE" -printf '%p %s %T@\n' | sort)"
}

# cjc's heap is advised for 2 MB pages (src/tool/main.c): read from cjc's
# own /proc entry while it runs, by an nvcc that then execs the real one.
testHeapIsAdvisedForHugePages() {
	if [ -n "$SANITIZED" ]; then
		echo "testHeapIsAdvisedForHugePages: the sanitizer's allocator keeps its own heap"
		return
	fi
	if [ ! -d /sys/kernel/mm/transparent_hugepage ]; then
		echo "testHeapIsAdvisedForHugePages: this kernel has no transparent huge pages"
		return
	fi
	mkdir "$TEST_DIR/peek"
	cat >"$TEST_DIR/peek/nvcc" <<PEEK
#!/bin/sh
awk '/^[0-9a-f]+-[0-9a-f]+ / { heap = / \\[heap\\]\$/ } heap && /^VmFlags:/' /proc/\$PPID/smaps >>"$TEST_DIR/heap-flags"
exec "$NVCC" "\$@"
PEEK
	chmod +x "$TEST_DIR/peek/nvcc"
	"$CJC" "$TEST_DIR/peek/nvcc" --cubin k.cu -o k.cubin -arch=$ARCH || fail "the compile failed"
	assertTrue "cjc's heap, advised: $(cat "$TEST_DIR/heap-flags")" "grep -q ' hg' '$TEST_DIR/heap-flags'"
}

testSymlinksInTheStoreCannotReachOutside() {
	cjc_nvcc --cubin k.cu -o a.cubin -arch=$ARCH || fail
	plant_links
	local e
	e=$(echo "$(ns)"/entries/*/*)
	# A link in place of a shard of entries (not the entry's own), an entry,
	# and an artifact.
	local own other=ab
	own=$(basename "$(dirname "$e")")
	[ "$own" != ab ] || other=cd
	ln -s "$OUTSIDE/victim" "$(ns)/entries/$other"
	ln -s "$OUTSIDE/victim" "$(ns)/entries/$own/$(printf 'f%.0s' $(seq 64))"
	chmod u+w "$e" && rm -f "$e/output.cubin" && ln -s "$OUTSIDE/victim/file" "$e/output.cubin"
	cjc_nvcc --cubin k.cu -o b.cubin -arch=$ARCH || fail "the build broke"
	assert_same_devcode a.cubin b.cubin
	"$CJC" verify --fix >/dev/null
	"$CJC" gc --max-size 1B >/dev/null
	"$CJC" clean >/dev/null
	outside_untouched "entries"
	# A link in place of the staging and manifests directories: no writes through them.
	rm -rf "$(ns)/staging" "$(ns)/manifests"
	ln -s "$OUTSIDE/victim" "$(ns)/staging"
	ln -s "$OUTSIDE/victim" "$(ns)/manifests"
	cjc_nvcc --cubin k.cu -o c.cubin -arch=$ARCH || fail "the build broke"
	assert_same_devcode a.cubin c.cubin
	assertTrue "the reason is logged" "grep -q 'Too many levels of symbolic links' '$CJC_LOG'"
	"$CJC" gc >/dev/null 2>&1
	"$CJC" clean >/dev/null 2>&1
	outside_untouched "staging"
}

. "$SHUNIT2"
