#!/bin/bash
# layers_test.sh - the include rule of HACKING.md ("Layers"): a file of
# src/lib/<layer>/ includes headers of its own layer and of the layers below
# it only, always by "<layer>/<name>.h"; src/tool and src/jit include the
# library's headers that way and their own by name, and neither includes the
# other's; src/shim (the NVRTC shim) stands on src/jit through the cache of
# programs (src/jit/program.h) and the public header alone, never
# jit_internal.h, and
# nothing includes the shim's own.  And no circles (issue 49): no group of
# files that use each other in a circle, by the symbols their objects need
# and define (the build's objects, CJC_BUILD_DIR), and no circle of modules
# by includes, beyond the list below of those still to be broken.

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
			elif [ "$dir" = shim ] && [ "$header" = program.h -o -f "$root/src/jit/include/$header" ]; then
				continue # the shim stands on the JIT library's cache of programs
			elif [ "$dir" = shim ] && [ -f "$root/src/jit/$header" ]; then
				echo "$file: includes \"$header\", the JIT library's own (the shim's is program.h)"
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

# The circles still to be broken, one a line, as find_circles prints them.
# This list must only shrink: a circle not on it fails the suite, and so
# does a line here whose circle is gone (delete the line then).
CIRCLES_LEFT='
'

# find_circles ROOT BUILD: prints each circle, sorted, one a line:
#   "symbols: FILE..."  files (of ROOT/src) whose objects under BUILD/src use
#                       each other in a circle: A uses B when A's object needs
#                       (nm: U) a symbol B's defines; a strongly connected
#                       group of more than one file
#   "includes: MODULE..."  modules (a header's stem: keys/key is
#                       keys/key.h and keys/key.c; tool/report, jit/program)
#                       that include each other in a circle
# An object is named by its source (CMakeFiles/T.dir/PATH.o, "__" for
# ".."), so the library compiled twice, and the shim once per NVRTC, count
# once; an object whose source is gone (a stale one) is left out.
# Fails when BUILD holds no objects.
find_circles() {
	/usr/bin/python3 - "$1" "$2" <<-'EOF'
	import os, re, subprocess, sys
	sys.setrecursionlimit(10000)
	root, build = sys.argv[1:3]

	def circles(graph):  # Tarjan's strongly connected components
	    index, low, stack, on, out = {}, {}, [], set(), []
	    def visit(v):
	        index[v] = low[v] = len(index)
	        stack.append(v)
	        on.add(v)
	        for w in graph.get(v, ()):
	            if w not in index:
	                visit(w)
	                low[v] = min(low[v], low[w])
	            elif w in on:
	                low[v] = min(low[v], index[w])
	        if low[v] == index[v]:
	            group = []
	            while not group or group[-1] != v:
	                group.append(stack.pop())
	                on.discard(group[-1])
	            if len(group) > 1:
	                out.append(" ".join(sorted(group)))
	    for v in sorted(graph):
	        if v not in index:
	            visit(v)
	    return out

	def objects():
	    objs = {}
	    for d, _, names in os.walk(os.path.join(build, "src")):
	        for n in names:
	            path = os.path.join(d, n)
	            m = re.match(r"(.*?)/CMakeFiles/[^/]+\.dir/(.*)\.o$", os.path.relpath(path, build))
	            if not m:
	                continue
	            src = os.path.normpath(os.path.join(m[1], m[2].replace("__/", "../")))
	            if os.path.isfile(os.path.join(root, src)):
	                objs.setdefault(src, []).append(path)
	    return objs

	def by_symbols():
	    objs, uses, defs = objects(), {}, {}
	    if not objs:
	        sys.exit("no objects under " + build + "/src: build first")
	    for src, paths in objs.items():
	        nm = subprocess.run(["nm", "-P", "-g"] + paths, capture_output=True, text=True, check=True)
	        for f in (line.split() for line in nm.stdout.splitlines()):
	            if len(f) < 2 or f[0].endswith(":"):
	                continue
	            if f[1] in "Uwv":
	                uses.setdefault(src, set()).add(f[0])
	            else:
	                defs.setdefault(f[0], set()).add(src)
	    return {a: {b for s in uses.get(a, ()) for b in defs.get(s, ()) if b != a} for a in objs}

	def module(src):
	    stem = os.path.splitext(src)[0]
	    return stem[len("src/lib/"):] if stem.startswith("src/lib/") else stem[len("src/"):]

	def by_includes():  # a header is found as the compiler finds it
	    graph = {}
	    for top, depth in (("src/lib", 2), ("src/tool", 1), ("src/jit", 1), ("src/shim", 1)):
	        for d, _, names in os.walk(os.path.join(root, top)):
	            rel = os.path.relpath(d, root)
	            for n in names if rel.count("/") <= depth else ():
	                if not n.endswith((".c", ".h")):
	                    continue
	                src = os.path.join(rel, n)
	                mine = graph.setdefault(module(src), set())
	                text = open(os.path.join(root, src)).read()
	                for h in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
	                    found = [c for c in (os.path.join(rel, h), "src/lib/" + h, "src/jit/" + h)
	                             if os.path.isfile(os.path.join(root, c))]
	                    if found and module(found[0]) != module(src):
	                        mine.add(module(found[0]))
	    return graph

	for kind, graph in (("includes", by_includes()), ("symbols", by_symbols())):
	    for c in sorted(circles(graph)):
	        print(kind + ": " + c)
	EOF
}

# check_circles ROOT BUILD LIST: prints each circle not on LIST (its lines)
# and each line of LIST whose circle is gone; fails when any.
check_circles() {
	local found
	found=$(find_circles "$1" "$2") || return 1
	comm -23 <(lines "$found") <(lines "$3") | sed 's/^/a circle not on the list: /'
	comm -13 <(lines "$found") <(lines "$3") | sed 's/^/a listed circle no longer exists: /'
	[ "$(lines "$found")" = "$(lines "$3")" ]
}

# lines TEXT: its lines that are not empty, sorted.
lines() { echo "$1" | grep . | sort; }

testNoCirclesBeyondTheList() {
	local out
	out=$(check_circles "$CJC_SOURCE_DIR" "$CJC_BUILD_DIR" "$CIRCLES_LEFT")
	assertTrue "the check passes" $?
	assertEquals "circles, against the list of those left" "" "$out"
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
	echo '#include "run_cmd.h"' >>copy/src/shim/hello.c
	echo '#include "jit_internal.h"' >>copy/src/shim/shim.c
	out=$(check_tree copy)
	assertFalse "the check fails" $?
	assertContains "$out" "base/fs.c: includes compile/config.h, of a higher layer (compile above base)"
	assertContains "$out" "keys/key.c: includes \"util.h\" by its bare name (it is src/lib/base/util.h)"
	assertContains "$out" "jit/jit.c: includes \"audit.h\" by its bare name (it is src/tool/audit.h)"
	assertContains "$out" "jit/nvrtc.c: includes \"shim.h\" by its bare name (it is src/shim/shim.h)"
	assertContains "$out" "shim/hello.c: includes \"run_cmd.h\" by its bare name (it is src/tool/run_cmd.h)"
	assertContains "$out" "shim/shim.c: includes \"jit_internal.h\", the JIT library's own (the shim's is program.h)"
	assertEquals "six breaks, nothing else" 6 "$(echo "$out" | wc -l)"
}

# The circle check itself: in a copy of the sources and the build's objects,
# a made-up circle of includes, one of symbols (two objects that call each
# other), and a listed circle that is not there are each caught.
testTheCheckCatchesEachCircle() {
	local out list
	mkdir -p copy/src copy/build
	cp -r "$CJC_SOURCE_DIR/src/lib" "$CJC_SOURCE_DIR/src/tool" "$CJC_SOURCE_DIR/src/jit" \
		"$CJC_SOURCE_DIR/src/shim" copy/src/
	cp -rs "$(cd "$CJC_BUILD_DIR" && pwd)/src" copy/build/
	echo '#include "keys/depfile.h"' >>copy/src/lib/keys/place.c
	echo '#include "keys/place.h"' >>copy/src/lib/keys/depfile.c
	echo 'int made_b(int); int made_a(int n) { return n ? made_b(n - 1) : 0; }' >copy/src/tool/made_a.c
	echo 'int made_a(int); int made_b(int n) { return n ? made_a(n - 1) : 1; }' >copy/src/tool/made_b.c
	for f in made_a made_b; do
		${CC:-cc} -c -o copy/build/src/tool/CMakeFiles/cjc_tool.dir/$f.c.o copy/src/tool/$f.c ||
			fail "compiling $f.c"
	done
	list="$CIRCLES_LEFT
symbols: src/tool/gone_a.c src/tool/gone_b.c"
	out=$(check_circles copy copy/build "$list")
	assertFalse "the check fails" $?
	assertContains "$out" "a circle not on the list: includes: keys/depfile keys/place"
	assertContains "$out" "a circle not on the list: symbols: src/tool/made_a.c src/tool/made_b.c"
	assertContains "$out" "a listed circle no longer exists: symbols: src/tool/gone_a.c src/tool/gone_b.c"
	assertEquals "three breaks, nothing else" 3 "$(echo "$out" | wc -l)"
}

# The habits' check (scripts/check-format, HACKING.md "Formatting and
# commits") in a repository of its own: old.c, badly formatted before the
# rule came, then the rule (this project's .clang-format).
format_repo() {
	mkdir repo
	printf 'int  old(void) { return 0; }\n' >repo/old.c
	commit_all "Old code, before the rule"
	cp "$CJC_SOURCE_DIR/.clang-format" repo/
	commit_all "Add the rule"
}

# in_repo CMD...: runs CMD in ./repo, with git's user settings left out.
in_repo() {
	(cd repo && GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=test \
		GIT_AUTHOR_EMAIL=test@example.com GIT_COMMITTER_NAME=test \
		GIT_COMMITTER_EMAIL=test@example.com "$@")
}

# commit_all SUBJECT: commits every file of ./repo (the first call makes it).
commit_all() {
	[ -d repo/.git ] || in_repo git init -q -b main
	in_repo git add -A && in_repo git commit -q -m "$1"
}

check_format() { in_repo "$CJC_SOURCE_DIR/scripts/check-format" "$@"; }

# A formatted change under a subject of 72 characters (one of them not
# ASCII) passes, though old.c, untouched, is still badly formatted.
testTheFormatCheckPassesACleanChange() {
	local out subject
	format_repo
	printf 'int new_one(void)\n{\n\treturn 1;\n}\n' >repo/new.c
	subject="A clean change → $(printf '%*s' 55 '' | tr ' ' x)"
	assertEquals "the subject's characters" 72 "$(LC_ALL=C.UTF-8 && echo ${#subject})"
	commit_all "$subject"
	out=$(check_format 2>&1)
	assertTrue "the check passes: $out" $?
	assertNotContains "$out" "check-format:"
}

# A badly formatted line and a subject of 73 characters are each caught,
# and old.c's first line, in a file the change touched, is not.
testTheFormatCheckCatchesABadChange() {
	local out
	format_repo
	printf 'int  bad(int x){return x;}\n' >repo/new.c
	printf 'int added;\n' >>repo/old.c
	commit_all "A bad change $(printf '%*s' 60 '' | tr ' ' x)"
	out=$(check_format 2>&1)
	assertFalse "the check fails" $?
	assertContains "$out" "clang-format would change lines changed since"
	assertContains "$out" "-int  bad(int x){return x;}"
	assertNotContains "the untouched line" "$out" "int  old(void)"
	assertContains "$out" "subjects longer than 72 characters:"
	assertContains "$out" "(73 characters): A bad change xxx"
}

# The base is where the rule entered main's first-parent history: a branch
# merged before the rule is not checked, one merged after it is.
testTheFormatCheckStartsWhereTheRuleCameIn() {
	local out
	mkdir repo
	printf 'int a;\n' >repo/a.c
	commit_all "One"
	in_repo git checkout -q -b before
	printf 'int  before;\n' >repo/before.c
	commit_all "Before the rule"
	in_repo git checkout -q -b after main
	printf 'int  after;\n' >repo/after.c
	commit_all "After the rule"
	in_repo git checkout -q -b rule main
	cp "$CJC_SOURCE_DIR/.clang-format" repo/
	commit_all "Add the rule"
	in_repo git checkout -q main
	in_repo git merge -q --no-ff -m "Merge before" before
	in_repo git merge -q --no-ff -m "Merge rule" rule
	out=$(check_format 2>&1)
	assertTrue "the check passes with the rule merged: $out" $?
	in_repo git merge -q --no-ff -m "Merge after" after
	out=$(check_format 2>&1)
	assertFalse "the check fails with a later merge" $?
	assertContains "$out" "-int  after;"
	assertNotContains "$out" "before"
}

. "$SHUNIT2"
