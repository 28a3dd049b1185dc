#!/bin/bash
# damage_test.sh - docs/store.md: a damaged entry is a miss, never served and never
# touched on the build path; `cjc verify` finds it and `--fix` moves it aside
# so the next compile republishes.  Every case starts from a copy of one good
# store, so each costs only the compiles it checks; they compile --cubin
# (no host compile), since what is damaged is an artifact of any kind.

. "$(dirname "$0")/helpers.sh"

oneTimeSetUp() {
	use_suite_dir damage
	CJC_DIR="$SUITE_DIR/template" NVCC_LOG=/dev/null "$CJC" "$NVCC" --cubin k.cu -o good.cubin -arch=$ARCH
	# A hit too, so every case also meets the memo of checked metadata (metamemo.h).
	CJC_DIR="$SUITE_DIR/template" NVCC_LOG=/dev/null "$CJC" "$NVCC" --cubin k.cu -o good.cubin -arch=$ARCH
	ls "$SUITE_DIR"/template/v1/*/hashes/*/*.meta >/dev/null || exit 1
	CASES=0
}

oneTimeTearDown() {
	echo "damage cases checked: $CASES"
	rm -rf "$SUITE_DIR"
}

# Each file of an entry, with its type, size and hash: to prove it untouched.
snapshot() {
	(cd "$1" && find . -printf '%p %y %s\n' | sort && find . -type f -exec sha256sum {} + | sort)
}

# Replaces the first match of a sed pattern in the entry's metadata.json.
edit_first() {
	sed -i "0,/$1/s//$2/" "$ENTRY/metadata.json"
}

# restamp: the output's zstd record in metadata.json made to fit the file
# again, so that only the check of what it inflates to can find the damage.
restamp() {
	local o="$ENTRY/output.cubin" m="$ENTRY/metadata.json" sha
	sha=$(sha256sum <"$o" | cut -d' ' -f1)
	jq --argjson n "$(stat -c %s "$o")" --arg sha "$sha" \
		'.files["output.cubin"].zstd = {size: $n, sha256: $sha}' "$m" >"$m.new" && mv "$m.new" "$m"
}

# frame_of_size EXTRA WLOG: a zstd frame of zeros, the output's recorded
# size plus EXTRA bytes, with a window of 2^WLOG bytes.
frame_of_size() {
	local n
	n=$(jq '.files["output.cubin"].size' "$ENTRY/metadata.json")
	head -c $((n + $1)) /dev/zero | zstd -q -c --zstd=wlog=$2
}

# damage CASE: applies the damage named CASE to $ENTRY.
damage() {
	local o="$ENTRY/output.cubin" m="$ENTRY/metadata.json" size
	size=$(stat -c %s "$o")
	case $1 in
	zeroed) head -c "$size" /dev/zero >"$o" ;;
	truncated) truncate -s $((size / 2)) "$o" ;;
	emptied) : >"$o"
		edit_first '"size": [0-9]*' '"size": 0'
		edit_first '"sha256": "[0-9a-f]*"' '"sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"' ;;
	flipped) printf '\x55' | dd of="$o" bs=1 seek=100 conv=notrunc 2>/dev/null ;;
	meta-missing) rm -f "$m" ;;
	meta-empty) : >"$m" ;;
	meta-brace) echo '{' >"$m" ;;
	meta-utf8) edit_first '"cwd": "' '"cwd": "\xff\xfe' ;;
	meta-array) echo '[]' >"$m" ;;
	meta-directory) rm -f "$m" && mkdir "$m" ;;
	size-missing) sed -i '0,/"size": [0-9]*,/{/"size": [0-9]*,/d}' "$m" ;;
	size-true) edit_first '"size": [0-9]*' '"size": true' ;;
	size-zero) edit_first '"size": [0-9]*' '"size": 0' ;;
	size-string) edit_first '"size": \([0-9]*\)' '"size": "\1"' ;;
	sha-missing) edit_first '"size": \([0-9]*\),' '"size": \1'
		sed -i '0,/"sha256": "[0-9a-f]*"/{/"sha256": "[0-9a-f]*"/d}' "$m" ;;
	sha-empty) edit_first '"sha256": "[0-9a-f]*"' '"sha256": ""' ;;
	sha-x) edit_first '"sha256": "[0-9a-f]*"' "\"sha256\": \"$(printf 'x%.0s' $(seq 64))\"" ;;
	sha-spaces) edit_first '"sha256": "[0-9a-f]*"' "\"sha256\": \"$(printf ' %.0s' $(seq 64))\"" ;;
	format) edit_first '"cudajitcache.entry.v1"' '"cudajitcache.entry.v2"' ;;
	# the stored (compressed) file and its record (metadata.h "zstd")
	zstd-garbage) head -c "$size" /dev/urandom >"$o" && restamp ;;
	zstd-cut) truncate -s $((size - 4)) "$o" && restamp ;;
	zstd-trailing) printf 'more' >>"$o" && restamp ;;
	zstd-bomb) frame_of_size 10000000 10 >"$o" && restamp ;;
	zstd-window) frame_of_size 0 27 >"$o" && restamp ;;
	zstd-other) frame_of_size 0 10 >"$o" && restamp ;;
	zstd-size-zero) jq '.files["output.cubin"].zstd.size = 0' "$m" >"$m.new" && mv "$m.new" "$m" ;;
	zstd-sha-x) jq '.files["output.cubin"].zstd.sha256 = "x"' "$m" >"$m.new" && mv "$m.new" "$m" ;;
	zstd-not-object) jq '.files["output.cubin"].zstd = 5' "$m" >"$m.new" && mv "$m.new" "$m" ;;
	zstd-dropped) jq 'del(.files["output.cubin"].zstd)' "$m" >"$m.new" && mv "$m.new" "$m" ;;
	*) fail "unknown damage $1" ;;
	esac
}

# check_damage CASE: the whole promise for one kind of damage.
check_damage() {
	local c=$1 before key
	CASES=$((CASES + 1))
	export CJC_DIR="$SUITE_DIR/cache-$c" NVCC_LOG="$SUITE_DIR/nvcc-$c.log" CJC_LOG="$SUITE_DIR/cjc-$c.log"
	rm -rf "$CJC_DIR" && cp -a "$SUITE_DIR/template" "$CJC_DIR"
	ENTRY=$(echo "$CJC_DIR"/v1/*/entries/*/*)
	plain_metadata "$ENTRY/metadata.json" # edited as text below
	key=$(basename "$ENTRY")
	chmod -R u+w "$ENTRY"
	damage "$c"
	before=$(snapshot "$ENTRY")

	"$CJC" "$NVCC" --cubin k.cu -o "$c.cubin" -arch=$ARCH || fail "$c: the build broke"
	assertEquals "$c: nvcc compiled" 1 "$(nvcc_compiles)"
	assert_same_devcode good.cubin "$c.cubin"
	assertEquals "$c: counted as damaged" 1 "$(stat_value damaged)"
	assertEquals "$c: the entry is untouched by the build and the later writer" "$before" "$(snapshot "$ENTRY")"
	assertTrue "$c: stats says how to repair" "\"$CJC\" stats | grep -q 'cjc verify --fix'"
	assertTrue "$c: the reason is logged" "grep -q 'damaged entry $key' '$CJC_LOG'"

	"$CJC" verify >"$SUITE_DIR/verify-$c.txt"
	assertEquals "$c: verify fails" 1 $?
	assertTrue "$c: verify names the entry and a reason" "grep -q '^$key: ..' '$SUITE_DIR/verify-$c.txt'"
	"$CJC" verify --fix >/dev/null
	"$CJC" verify >/dev/null || fail "$c: verify --fix repaired the store"
	"$CJC" "$NVCC" --cubin k.cu -o "$c-2.cubin" -arch=$ARCH || fail "$c: build after the fix"
	"$CJC" "$NVCC" --cubin k.cu -o "$c-3.cubin" -arch=$ARCH || fail "$c: build after the fix"
	assertEquals "$c: republished once, then served" 2 "$(nvcc_compiles)"
	assert_same_devcode good.cubin "$c-3.cubin"
	"$CJC" verify >/dev/null || fail "$c: the republished entry verifies"
}

testDamagedArtifacts() {
	for c in zeroed truncated emptied flipped; do check_damage $c; done
}

testDamagedMetadata() {
	for c in meta-missing meta-empty meta-brace meta-utf8 meta-array meta-directory; do check_damage $c; done
}

testBadSizeFields() {
	for c in size-missing size-true size-zero size-string; do check_damage $c; done
}

testBadHashFields() {
	for c in sha-missing sha-empty sha-x sha-spaces; do check_damage $c; done
}

testOtherFormatVersion() {
	check_damage format
}

# The output is stored compressed: a file that passes the stored check but
# does not inflate to the artifact (not a frame, a frame cut short or with
# bytes after it, one that inflates past the recorded size or to other
# bytes), a record of the stored bytes that is malformed, and a compressed
# file whose record no longer says so.
testDamagedCompressedArtifacts() {
	command -v zstd >/dev/null || startSkipping
	local m n
	m=$(echo "$SUITE_DIR"/template/v1/*/entries/*/*/metadata.json)
	n=$(meta_doc "$m" | jq '.files["output.cubin"].size')
	assertEquals "the template's output is stored compressed" \
		"$(stat -c %s "$(dirname "$m")/output.cubin")" "$(meta_doc "$m" | jq '.files["output.cubin"].zstd.size')"
	for c in zstd-garbage zstd-cut zstd-trailing zstd-bomb zstd-window zstd-other zstd-size-zero \
		zstd-sha-x zstd-not-object zstd-dropped; do
		check_damage $c
	done
	assertTrue "the bomb was stopped at the recorded size ($n bytes)" \
		"grep -q 'larger than its recorded size once decompressed' '$SUITE_DIR/verify-zstd-bomb.txt'"
	assertTrue "a window larger than the output needs is refused" \
		"grep -q 'not a whole zstd frame' '$SUITE_DIR/verify-zstd-window.txt'"
	assertTrue "other bytes" "grep -q 'output.cubin does not match its sha256' '$SUITE_DIR/verify-zstd-other.txt'"
	assertTrue "garbage is not a frame" "grep -q 'not a whole zstd frame' '$SUITE_DIR/verify-zstd-garbage.txt'"
	assertTrue "a cut frame" "grep -q 'cut short' '$SUITE_DIR/verify-zstd-cut.txt'"
	assertTrue "bytes after the frame" "grep -q 'after its zstd frame' '$SUITE_DIR/verify-zstd-trailing.txt'"
}

testVerifyJsonNamesEveryBadEntry() {
	export CJC_DIR="$SUITE_DIR/cache-json" NVCC_LOG=/dev/null
	rm -rf "$CJC_DIR" && cp -a "$SUITE_DIR/template" "$CJC_DIR"
	"$CJC" "$NVCC" --cubin k.cu -o other.cubin -arch=$ARCH -DOTHER || fail
	local e
	for e in "$CJC_DIR"/v1/*/entries/*/*; do
		chmod u+w "$e/output.cubin" && truncate -s 10 "$e/output.cubin"
	done
	"$CJC" verify --json >"$SUITE_DIR/verify.json"
	assertEquals "exit 1" 1 $?
	assertTrue "both bad" "grep -q '\"bad\": 2' '$SUITE_DIR/verify.json'"
	assertEquals "reasons" 2 "$(grep -c '"reason": "output.cubin has 10 stored bytes' "$SUITE_DIR/verify.json")"
}

. "$SHUNIT2"
