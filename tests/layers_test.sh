#!/bin/bash
# layers_test.sh - the include rule of HACKING.md ("Layers"): a file of
# src/lib/<layer>/ includes headers of its own layer and of the layers below
# it only, always by "<layer>/<name>.h"; src/tool and src/jit include the
# library's headers that way and their own by name, and neither includes the
# other's; src/shim (the NVRTC shim) stands on src/jit through its seam
# (src/jit/seam.h) and public header alone, never jit_internal.h, and
# nothing includes the shim's own.  Reads the sources only: no build needed.

. "$(dirname "$0")/helpers.sh"

LAYERS="base keys store remote compile" # lowest first

# check_tree ROOT: prints each include that breaks the rule; fails when any does.
check_tree() {
	local root=$1 bad=0 file dir rank line header folder name
	for file in "$root"/src/lib/*/*.[ch] "$root"/src/tool/*.[ch] "$root"/src/jit/*.[ch] \
		"$root"/src/shim/*.[ch]; do
		dir=${file%/*}
		dir=${dir#"$root"/src/}
		rank=$(layer_rank "${dir#lib/}")
		while IFS= read -r line; do
			header=${line#*\"}
			header=${header%%\"*}
			if [ -f "$root/src/$dir/include/$header" ]; then
				continue # the JIT library's public header
			elif [ "$dir" = shim ] && [ "$header" = seam.h -o -f "$root/src/jit/include/$header" ]; then
				continue # the shim stands on the JIT library's seam
			elif [ "$dir" = shim ] && [ -f "$root/src/jit/$header" ]; then
				echo "$file: includes \"$header\", the JIT library's own (the shim's is seam.h)"
				bad=1
			elif [[ $header == */* ]]; then
				folder=${header%%/*}
				if [ ! -f "$root/src/lib/$header" ]; then
					echo "$file: $header is no header of src/lib"
					bad=1
				elif [[ $dir == lib/* ]] && [ "$(layer_rank "$folder")" -gt "$rank" ]; then
					echo "$file: includes $header, of a higher layer ($folder above ${dir#lib/})"
					bad=1
				fi
			elif [[ $dir == lib/* ]] || [ ! -f "$root/src/$dir/$header" ]; then
				name=$(cd "$root/src" && ls lib/*/"$header" tool/"$header" jit/"$header" shim/"$header" 2>/dev/null | head -1)
				echo "$file: includes \"$header\" by its bare name${name:+ (it is src/$name)}"
				bad=1
			fi
		done < <(grep -E '^#include "' "$file")
	done
	return $bad
}

# layer_rank NAME: its place in LAYERS (0 = lowest); tool and jit stand above all.
layer_rank() {
	local i=0 l
	for l in $LAYERS; do
		[ "$l" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo 99
}

testTheSourcesKeepTheRule() {
	local out
	out=$(check_tree "$CJC_SOURCE_DIR")
	assertEquals "includes that break the rule" "" "$out"
}

testEveryLibraryFileIsInALayer() {
	local stray
	stray=$(cd "$CJC_SOURCE_DIR/src/lib" && ls ./*.c 2>/dev/null; for d in */; do
		[[ " $LAYERS " == *" ${d%/} "* ]] || echo "$d"; done)
	assertEquals "files or folders of src/lib outside the layers" "" "$stray"
}

# The check itself: an include that runs upward, one that skips the layer
# name, a tool header included by the JIT library, and the JIT library's
# private header included by the shim are each caught.
testTheCheckCatchesEachBreak() {
	local out
	mkdir -p copy/src
	cp -r "$CJC_SOURCE_DIR/src/lib" "$CJC_SOURCE_DIR/src/tool" "$CJC_SOURCE_DIR/src/jit" \
		"$CJC_SOURCE_DIR/src/shim" copy/src/
	echo '#include "compile/config.h"' >>copy/src/lib/base/fs.c
	echo '#include "util.h"' >>copy/src/lib/keys/key.c
	echo '#include "audit.h"' >>copy/src/jit/jit.c
	echo '#include "shim.h"' >>copy/src/jit/nvrtc.c
	echo '#include "run_cmd.h"' >>copy/src/shim/cache.c
	echo '#include "jit_internal.h"' >>copy/src/shim/shim.c
	out=$(check_tree copy)
	assertFalse "the check fails" $?
	assertContains "$out" "base/fs.c: includes compile/config.h, of a higher layer (compile above base)"
	assertContains "$out" "keys/key.c: includes \"util.h\" by its bare name (it is src/lib/base/util.h)"
	assertContains "$out" "jit/jit.c: includes \"audit.h\" by its bare name (it is src/tool/audit.h)"
	assertContains "$out" "jit/nvrtc.c: includes \"shim.h\" by its bare name (it is src/shim/shim.h)"
	assertContains "$out" "shim/cache.c: includes \"run_cmd.h\" by its bare name (it is src/tool/run_cmd.h)"
	assertContains "$out" "shim/shim.c: includes \"jit_internal.h\", the JIT library's own (the shim's is seam.h)"
	assertEquals "six breaks, nothing else" 6 "$(echo "$out" | wc -l)"
}

. "$SHUNIT2"
