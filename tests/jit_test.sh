#!/bin/bash
# jit_test.sh - the JIT library (docs/jit.md) through its drivers
# tests/jit/jit_cli.c and jit_threads_test.c: a hit returns the bytes
# `nvcc --cubin` makes without compiling, every option and setting is in the
# key, damaged entries are recompiled and left alone, the store's races
# (8 processes, a killed writer, 16 threads, fork) hold, the settings
# resolve DeepJIT's way, and a miss works in a private directory that no
# other user can reach (docs/trust.md), as a second user tries.  A store
# that cannot be used never fails a compile; opening a handle touches
# nothing; DeepJIT's diagnostics settings; the arch of the calling thread's
# device, through a driver that stands in for a GPU (tests/jit/fake_cuda.c).

. "$(dirname "$0")/helpers.sh"
: "${CJC_JIT_CLI:?set CJC_JIT_CLI to build/tests/jit_cli}"
: "${CJC_JIT_THREADS:?set CJC_JIT_THREADS to build/tests/jit_threads_test}"
REF_DIR=$(mktemp -d "${TMPDIR:-/tmp}/cjc-jitref.XXXXXX") || exit 1
oneTimeTearDown() { rm -rf "$REF_DIR"; }

write_kernel() {
	cat >kernel.cu <<'SRC'
#include "tile.h"
extern "C" __global__ void scale(float *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] = a[i] * FACTOR;
}
SRC
	mkdir -p inc
	echo '#define FACTOR 2.0f' >inc/tile.h
}

# A kernel without includes, which NVRTC caches too.
write_plain() {
	cat >plain.cu <<'SRC'
extern "C" __global__ void twice(float *a) { a[threadIdx.x] *= 2.0f; }
SRC
}

# The path of nvcc's own cubin of plain.cu, made once a suite run.
reference_cubin() {
	[ -s "$REF_DIR/plain.cubin" ] || (cd "$REF_DIR" && write_plain &&
		"$REAL_NVCC" --cubin -arch=$ARCH plain.cu -o plain.cubin) || fail "nvcc"
	echo "$REF_DIR/plain.cubin"
}

# make_member: the user cjc-member2, of the group cjc-team, made once.
make_member() {
	getent group cjc-team >/dev/null || groupadd cjc-team || getent group cjc-team >/dev/null ||
		fail "group"
	id -u cjc-member2 >/dev/null 2>&1 || useradd -M -N -s /usr/sbin/nologin -g cjc-team cjc-member2 ||
		id -u cjc-member2 >/dev/null 2>&1 || fail "user"
}

# expect_uncached WHY [JIT-ARGS...]: with the store as the caller's variables
# leave it, nvcc and NVRTC compile plain.cu uncached (each returns its cubin
# and no key), and the log says WHY in one line for each.
expect_uncached() {
	local why=$1 said
	shift
	write_plain
	said=$(jit "$@" --out a.cubin plain.cu) || fail "nvcc failed"
	assertEquals "nvcc, uncached" "miss -" "$said"
	assertTrue "nvcc's cubin" "cmp -s a.cubin '$(reference_cubin)'"
	said=$(CJC_JIT_COMPILER=nvrtc jit "$@" --out b.cubin plain.cu) || fail "NVRTC failed"
	assertEquals "NVRTC, uncached" "miss -" "$said"
	assertEquals "NVRTC's cubin" "$(printf '\177ELF')" "$(head -c 4 b.cubin)"
	assertEquals "a line each in the log: $(cat "$CJC_LOG")" 2 "$(grep -c "kernel.cu: .*$why" "$CJC_LOG")"
	assertEquals "and no other" 2 "$(wc -l <"$CJC_LOG")"
}

entry_dir() {
	echo "$CJC_DIR"/v1/*/entries/"${1:0:2}"/"$1"
}

# make_spy_nvcc: $TEST_DIR/bin/nvcc-spy, an nvcc that writes to
# $TEST_DIR/spy, for each compile, the mode, owner and path of its TMPDIR,
# and the sources it was given.
make_spy_nvcc() {
	cat >"$TEST_DIR/bin/nvcc-spy" <<WRAP
#!/bin/sh
case " \$* " in *" --version "*) ;; *)
	stat -c '%a %u %n' "\$TMPDIR" >>"$TEST_DIR/spy"
	for a; do case \$a in *.cu) echo "source \$a" >>"$TEST_DIR/spy" ;; esac; done ;;
esac
exec "$NVCC" "\$@"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-spy"
}

# The miss works in a directory of its own under TMPDIR (0700, the caller's,
# gone when the call returns), not in the store; where that was is in no
# key, so a copy of the store hits, and so does one moved (a CI cache
# restored at another path) and one reached through a symbolic link.
testAHitSkipsTheCompileAndReturnsNvccsCubin() {
	write_kernel
	make_spy_nvcc
	mkdir "$TEST_DIR/tmp"
	local spy=$TEST_DIR/bin/nvcc-spy first second copied moved linked mode owner private source
	first=$(JIT_NVCC=$spy TMPDIR=$TEST_DIR/tmp jit --out a.cubin kernel.cu -I"$PWD/inc") || fail "miss"
	second=$(JIT_NVCC=$spy jit --out b.cubin kernel.cu -I"$PWD/inc") || fail "hit"
	cp -a "$CJC_DIR" "$TEST_DIR/copy"
	copied=$(JIT_NVCC=$spy CJC_DIR=$TEST_DIR/copy jit --out c.cubin kernel.cu -I"$PWD/inc") ||
		fail "copy"
	mv "$TEST_DIR/copy" "$TEST_DIR/moved" && ln -s "$TEST_DIR/moved" "$TEST_DIR/link"
	moved=$(JIT_NVCC=$spy CJC_DIR=$TEST_DIR/moved jit kernel.cu -I"$PWD/inc") || fail "moved"
	linked=$(JIT_NVCC=$spy CJC_DIR=$TEST_DIR/link jit kernel.cu -I"$PWD/inc") || fail "linked"
	assertEquals "miss ${first#miss }" "$first"
	assertEquals "hit ${first#miss }" "$second"
	assertEquals "a copy of the store hits" "hit ${first#miss }" "$copied"
	assertEquals "so does the copy moved" "hit ${first#miss }" "$moved"
	assertEquals "and through a link" "hit ${first#miss }" "$linked"
	expect_nvcc_runs 1
	read -r mode owner private <"$TEST_DIR/spy"
	source=$(sed -n 's/^source //p' "$TEST_DIR/spy")
	assertEquals "the private directory's mode" 700 "$mode"
	assertEquals "and owner" "$(id -u)" "$owner"
	assertEquals "in TMPDIR" "$(readlink -f "$TEST_DIR/tmp")" "$(dirname "$private")"
	assertEquals "the source is in it" "$private/" "${source%"${source#"$private/"}"}"
	assertFalse "it is gone after the call" "[ -e '$private' ]"
	assertEquals "and nothing is left in TMPDIR" "" "$(ls -A "$TEST_DIR/tmp")"
	assertFalse "nothing in the store but the store" "[ -e '$CJC_DIR/jit-sources' ]"
	"$REAL_NVCC" --cubin -arch=$ARCH -I"$PWD/inc" kernel.cu -o nvcc.cubin || fail "nvcc"
	assertTrue "the miss returns nvcc's bytes" "cmp -s a.cubin nvcc.cubin"
	assertTrue "the hit returns nvcc's bytes" "cmp -s b.cubin nvcc.cubin"
	assertTrue "and the copy's" "cmp -s c.cubin nvcc.cubin"
	expect_stat hits 1
	expect_stat misses 1
}

# A member of a group store (2775, umask 002) plants jit-sources in its root,
# a link to a directory of hers with a tile.h where the old layout put the
# source (the first place #include "tile.h" looks), and root's TMPDIR is
# that directory too.  Root's compile returns what nvcc makes of root's code
# and writes nothing there: nothing is created or removed in any directory
# of hers (their mtimes and ctimes hold).
testAMemberCannotReachAJitCompile() {
	local member=cjc-member2 group=cjc-team
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v useradd >/dev/null; then
		startSkipping
		return
	fi
	make_member
	write_kernel
	chmod 755 "$TEST_DIR"
	mkdir -p "$CJC_DIR" "$TEST_DIR/hers" && chgrp $group "$CJC_DIR" && chmod 2775 "$CJC_DIR" &&
		chown $member "$TEST_DIR/hers" || fail "the store"
	local h
	h=$({ printf 'kernel.cu\0'; cat kernel.cu; printf '\0'; } | sha256sum | cut -c1-64)
	setpriv --reuid=$member --regid="$(id -g $member)" --init-groups sh -c '
		mkdir -p "$1/$2" && echo "#define FACTOR 666.0f" >"$1/$2/tile.h" &&
		chmod -R a+rwx "$1" && ln -s "$1" "$3/jit-sources"' sh "$TEST_DIR/hers" "${h:0:2}/$h" \
		"$CJC_DIR" || fail "the member cannot plant"
	local before
	before=$(find "$TEST_DIR/hers" -printf '%p %T@ %C@\n')
	(umask 002 && CJC_UMASK=002 TMPDIR=$TEST_DIR/hers jit --out a.cubin kernel.cu -I"$PWD/inc") \
		>/dev/null || fail "the compile"
	"$REAL_NVCC" --cubin -arch=$ARCH -I"$PWD/inc" kernel.cu -o nvcc.cubin || fail "nvcc"
	assertTrue "root gets nvcc's cubin of root's code" "cmp -s a.cubin nvcc.cubin"
	assertEquals "nothing written in her directory" "$before" \
		"$(find "$TEST_DIR/hers" -printf '%p %T@ %C@\n')"
}

testTheEntryIsAnOrdinaryEntry() {
	write_kernel
	local key
	key=$(jit kernel.cu -I"$PWD/inc" | cut -d' ' -f2)
	assertEquals "cjc ls lists it" 1 "$(entry_count)"
	"$CJC" ls | grep -q "$key.*cubin.*jit" || fail "ls shows kind and target"
	assertEquals "cjc show --json" "$key" "$("$CJC" show "$key" --json | jq -r .key)"
	"$CJC" show "$key" --json | jq -e '.inputs | map(.path) | any(endswith("inc/tile.h"))' >/dev/null ||
		fail "metadata lists the header nvcc read"
	"$CJC" verify >/dev/null || fail "cjc verify"
	"$CJC" gc --max-size 1B >/dev/null || fail "cjc gc"
	assertEquals "gc evicted it" 0 "$(entry_count)"
	assertEquals "and the next compile misses" miss "$(jit kernel.cu -I"$PWD/inc" | cut -d' ' -f1)"
}

testAHeaderChangeOrAShadowingHeaderMisses() {
	write_kernel
	local dirs=(-I"$PWD/inc0" -I"$PWD/inc" -I"$PWD/inc2")
	jit kernel.cu "${dirs[@]}" >/dev/null || fail
	echo '#define FACTOR 3.0f' >inc/tile.h
	assertEquals "a changed header" miss "$(jit kernel.cu "${dirs[@]}" | cut -d' ' -f1)"
	assertEquals "unchanged" hit "$(jit kernel.cu "${dirs[@]}" | cut -d' ' -f1)"
	mkdir -p inc2 inc0 && echo '#define FACTOR 4.0f' >inc2/tile.h
	assertEquals "a new header searched later is harmless" hit "$(jit kernel.cu "${dirs[@]}" | cut -d' ' -f1)"
	echo '#define FACTOR 5.0f' >inc0/tile.h
	assertEquals "a new header searched earlier misses" miss "$(jit kernel.cu "${dirs[@]}" | cut -d' ' -f1)"
	expect_nvcc_runs 3
}

# A record a process found unchanged is noted (src/jit/deps.c): the next
# process's first request stats the files and directories the note names
# instead of reading every hash and listing every candidate's directory.
# Three records, noted once their files settled, each then changed the way
# only a stamp can tell: a header rewritten with its size and mtime kept (its
# ctime moved), a header planted where a candidate's directory was missing,
# and one planted in a candidate's directory that was empty.
testARecordsNoteHoldsOnlyWhileItsStampsDo() {
	write_kernel
	mkdir -p a/inc b/inc c/inc c/inc0
	local k
	for k in a b c; do
		cp kernel.cu $k/ && cp inc/tile.h $k/inc/
	done
	local -A dirs=([a]="-I$PWD/a/inc" [b]="-I$PWD/b/none -I$PWD/b/inc"
		[c]="-I$PWD/c/inc0 -I$PWD/c/inc")
	for k in a b c; do
		jit $k/kernel.cu ${dirs[$k]} >/dev/null || fail "$k"
	done
	sleep 2.1 # stamp.h's racy-clean margin: a note holds only what had settled
	for k in a b c; do
		assertEquals "$k checked in full" hit "$(jit $k/kernel.cu ${dirs[$k]} | cut -d' ' -f1)"
	done
	assertEquals "a note each" 3 "$(ls "$CJC_DIR"/v1/*/hashes/*/*.jit | wc -l)"
	for k in a b c; do
		assertEquals "$k by its note" hit "$(jit $k/kernel.cu ${dirs[$k]} | cut -d' ' -f1)"
	done
	touch -r a/inc/tile.h ref && echo '#define FACTOR 7.0f' >a/inc/tile.h && touch -r ref a/inc/tile.h
	mkdir b/none && echo '#define FACTOR 8.0f' >b/none/tile.h
	echo '#define FACTOR 9.0f' >c/inc0/tile.h
	assertEquals "a header rewritten, its size and mtime kept" miss \
		"$(jit a/kernel.cu ${dirs[a]} | cut -d' ' -f1)"
	assertEquals "a header where a candidate's directory was missing" miss \
		"$(jit b/kernel.cu ${dirs[b]} | cut -d' ' -f1)"
	assertEquals "a header in a candidate's empty directory" miss \
		"$(jit c/kernel.cu ${dirs[c]} | cut -d' ' -f1)"
	expect_nvcc_runs 6
}

# One handle remembers headers' hashes and directory listings: a change
# made between two compiles of one handle must still be seen.
testOneHandleSeesAChangeBetweenCompiles() {
	write_kernel
	local dirs=(-I"$PWD/inc0" -I"$PWD/inc" -I"$PWD/inc2")
	mkdir -p inc0 inc2
	jit kernel.cu "${dirs[@]}" >/dev/null || fail
	local said
	said=$(jit --between "echo '#define FACTOR 5.0f' >inc0/tile.h" kernel.cu "${dirs[@]}" | cut -d' ' -f1)
	assertEquals "a header planted earlier in the search path" "hit miss" "$(echo $said)"
	said=$(jit --between "rm inc0/tile.h" kernel.cu "${dirs[@]}" | cut -d' ' -f1)
	# its first compile misses when the header planted above was written in
	# the clock tick that nvcc started in, which kept that miss from publishing
	local unpublished=0
	[ "$(echo $said | cut -d' ' -f1)" = miss ] && unpublished=1
	assertEquals "and taken away again" hit "$(echo $said | cut -d' ' -f2)"
	said=$(jit --between "echo '#define FACTOR 6.0f' >inc/tile.h" kernel.cu "${dirs[@]}" | cut -d' ' -f1)
	assertEquals "a header changed in place" "hit miss" "$(echo $said)"
	expect_nvcc_runs $((3 + unpublished))
}

# Between two requests of one handle, what the kernel's change signal
# (src/jit/changes.c) must report: an include directory that is a link
# switched to another, a header written through a hard link in another
# directory, an nvcc that appears earlier on PATH, and one written in place.
testOneHandleSeesLinksAndPathChange() {
	write_kernel
	mkdir -p v1 v2 early elsewhere
	echo '#define FACTOR 2.0f' >v1/tile.h
	echo '#define FACTOR 3.0f' >v2/tile.h
	ln -s v1 cur
	ln v2/tile.h elsewhere/tile.h
	jit kernel.cu -I"$PWD/cur" >/dev/null || fail
	# a store hit, a memory hit its files checked, one the kernel vouches
	# for; then the change, and the next request must compile
	local said
	said=$(jit --warm 2 --between "ln -sfn v2 cur" kernel.cu -I"$PWD/cur" | cut -d' ' -f1)
	assertEquals "an include directory switched by its link" "hit hit hit miss" "$(echo $said)"
	said=$(jit --warm 2 --between "echo '#define FACTOR 4.0f' >elsewhere/tile.h" kernel.cu \
		-I"$PWD/cur" | cut -d' ' -f1)
	assertEquals "a header written through a hard link elsewhere" "hit hit hit miss" "$(echo $said)"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$NVCC" >wrapper
	chmod +x wrapper
	# nvcc by name: the counting one (its directory on PATH), then early/'s
	said=$(PATH="$PWD/early:$(dirname "$NVCC"):$PATH" JIT_NVCC=nvcc \
		jit --warm 2 --between "cp wrapper early/nvcc" kernel.cu -I"$PWD/cur" | cut -d' ' -f1)
	assertEquals "an nvcc that appears earlier on PATH" "hit hit hit miss" "$(echo $said)"
	said=$(PATH="$PWD/early:$(dirname "$NVCC"):$PATH" JIT_NVCC=nvcc \
		jit --warm 2 --between "echo >>early/nvcc" kernel.cu -I"$PWD/cur" | cut -d' ' -f1)
	assertEquals "and one written in place" "hit hit hit miss" "$(echo $said)"
}

# A link in the middle of a chain of links (/usr/bin/c++ ->
# /etc/alternatives/c++ -> ...) switched: where the path leads is another
# directory, though neither the first link nor the old target changed.
testOneHandleSeesTheMiddleLinkOfAChainSwitched() {
	write_kernel
	mkdir -p v1 v2
	echo '#define FACTOR 2.0f' >v1/tile.h
	echo '#define FACTOR 3.0f' >v2/tile.h
	ln -s v1 mid
	ln -s mid cur
	jit kernel.cu -I"$PWD/cur" >/dev/null || fail
	local said
	said=$(jit --warm 2 --between "ln -sfn v2 mid" kernel.cu -I"$PWD/cur" | cut -d' ' -f1)
	assertEquals "the middle link switched" "hit hit hit miss" "$(echo $said)"
}

# jit_phases CMD... -- SOURCE OPTION...: one handle (the Python package)
# compiles SOURCE three times, then after each CMD three times more; prints
# hit or miss for each, and "|" for each CMD.
jit_phases() {
	local env=()
	[ -z "$SANITIZED" ] || env=("LD_PRELOAD=$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
		ASAN_OPTIONS=detect_leaks=0)
	env "${env[@]}" PYTHONPATH="$CJC_SOURCE_DIR/python" PYTHONDONTWRITEBYTECODE=1 \
		CJC_JIT_LIBRARY="$CJC_BUILD_DIR/src/jit/libcudajitcache.so" CJC_JIT_NVCC="$NVCC" \
		/usr/bin/python3 - "$@" <<'PY'
import os, subprocess, sys
from cudajitcache import Jit
cut = sys.argv.index("--")
cmds, source, options = sys.argv[1:cut], sys.argv[cut + 1], sys.argv[cut + 2:]
jit = Jit()
os.environ.pop("LD_PRELOAD", None)
code = open(source).read()
said = []
for cmd in [None] + cmds:
    if cmd:
        subprocess.run(cmd, shell=True, check=True)
        said.append("|")
    for _ in range(3):
        said.append("hit" if jit.compile(code, arch=os.environ["ARCH"], options=options).hit else "miss")
print(" ".join(said))
PY
}

# The watches follow where a path leads now: an include directory moved
# aside and another put in its place (the old one still there) is watched
# once the handle has found the new one, so a write in it is seen.
testOneHandleWatchesTheDirectoryPutInAnothersPlace() {
	write_kernel
	local said
	# written a while before nvcc starts: every miss publishes (miss.c)
	said=$(ARCH=$ARCH jit_phases \
		"mv inc inc.old && mkdir inc && echo '#define FACTOR 3.0f' >inc/tile.h && touch -d -2sec inc/tile.h" \
		"echo '#define FACTOR 4.0f' >inc/tile.h && touch -d -2sec inc/tile.h" -- kernel.cu -I"$PWD/inc")
	assertEquals "written in the directory put in the old one's place" \
		"miss hit hit | miss hit hit | miss hit hit" "$said"
}

# A mount over an include directory raises no inotify event: the mount
# table's own signal must be seen (root, in a mount namespace of its own).
testOneHandleSeesAMountOverAnIncludeDirectory() {
	[ "$(id -u)" = 0 ] || startSkipping
	write_kernel
	mkdir -p other
	echo '#define FACTOR 7.0f' >other/tile.h
	jit kernel.cu -I"$PWD/inc" >/dev/null || fail
	local said
	said=$(CJC_JIT_NVCC=$NVCC unshare -m --propagation private "$CJC_JIT_CLI" --arch "$ARCH" \
		--warm 2 --between "mount --bind '$PWD/other' '$PWD/inc'" kernel.cu -I"$PWD/inc" |
		cut -d' ' -f1)
	assertEquals "a directory mounted over the include directory" "hit hit hit miss" "$(echo $said)"
}

# The memory tier (src/jit/memory.c): a request the handle served is served
# again from memory, with the store emptied in between; its hits are
# counted when the handle closes.  (A header changed between two requests
# is still a miss: testOneHandleSeesAChangeBetweenCompiles.)
testARepeatedRequestIsServedFromMemory() {
	local said compiler
	printf 'extern "C" __global__ void one(float *a) { a[threadIdx.x] = 1.0f; }\n' >one.cu
	for compiler in nvcc nvrtc; do
		said=$(CJC_JIT_COMPILER=$compiler jit --between "'$CJC' clean >/dev/null" one.cu |
			cut -d' ' -f1)
		assertEquals "$compiler: compiled, then served with the store emptied" "miss hit" "$(echo $said)"
	done
	expect_nvcc_runs 1
	"$CJC" stats --zero >/dev/null
	CJC_JIT_COMPILER=nvrtc jit --repeat 5 one.cu >/dev/null || fail
	expect_stat hits 4
	expect_stat misses 1
}

# A JIT process killed during a miss leaves its private directory in
# TMPDIR; the next process's first miss removes it (this host's, its pid
# gone, yours), and leaves a live process's and another host's.
testAKilledProcesssPrivateDirectoryIsReclaimed() {
	local host dead
	host=$(cjc_host)
	sh -c 'exit 0' &
	dead=$!
	wait $dead
	mkdir -p "$TEST_DIR/tmp/cjc-jit.$host.$dead.0badf00d/src" "$TEST_DIR/tmp/cjc-jit.$host.$$.0badf00d" \
		"$TEST_DIR/tmp/cjc-jit.otherhost.$dead.0badf00d"
	printf 'extern "C" __global__ void one(float *a) { a[threadIdx.x] = 1.0f; }\n' >one.cu
	TMPDIR=$TEST_DIR/tmp jit one.cu >/dev/null || fail
	assertFalse "the killed process's directory is gone" "[ -e '$TEST_DIR/tmp/cjc-jit.$host.$dead.0badf00d' ]"
	assertTrue "a live process's stays" "[ -d '$TEST_DIR/tmp/cjc-jit.$host.$$.0badf00d' ]"
	assertTrue "another host's stays" "[ -d '$TEST_DIR/tmp/cjc-jit.otherhost.$dead.0badf00d' ]"
}

testEveryOptionAndSettingIsANewEntry() {
	write_kernel
	local i
	jit kernel.cu -I"$PWD/inc" >/dev/null || fail
	jit kernel.cu -I"$PWD/inc" -DEXTRA=1 >/dev/null || fail
	jit kernel.cu -I"$PWD/inc" -O1 >/dev/null || fail
	jit --format ptx kernel.cu -I"$PWD/inc" >/dev/null || fail
	jit --format fatbin kernel.cu -I"$PWD/inc" >/dev/null || fail
	jit --arch sm_90 kernel.cu -I"$PWD/inc" >/dev/null || fail
	for i in WITH_LINEINFO DEBUG PTXAS_VERBOSE CHECK_NO_SPILLS DUMP_PTX; do
		env "JITT_JIT_$i=1" CJC_JIT_NVCC="$NVCC" "$CJC_JIT_CLI" --prefix JITT --arch $ARCH \
			kernel.cu -I"$PWD/inc" >/dev/null 2>&1 || fail "$i"
	done
	JITT_JIT_CPP_STANDARD=17 CJC_JIT_NVCC="$NVCC" "$CJC_JIT_CLI" --prefix JITT --arch $ARCH \
		kernel.cu -I"$PWD/inc" >/dev/null || fail "CPP_STANDARD"
	assertEquals "12 compiles, 12 entries" 12 "$(entry_count)"
	expect_nvcc_runs 12
	"$CJC" ls --json | jq -e 'all(.[]; .target == "jit")' >/dev/null || fail "all labelled jit"
}

# names_compile SOURCE [OPTION...]: compiles SOURCE as a.cu, b.cu and b.cu
# again (to a.cubin, b.cubin), and prints what each said, in one line.
names_compile() {
	local a b again src=$1
	shift
	a=$(jit --name a.cu --out a.cubin "$src" "$@" 2>/dev/null) || fail "a.cu"
	b=$(jit --name b.cu --out b.cubin "$src" "$@" 2>/dev/null) || fail "b.cu"
	again=$(jit --name b.cu "$src" "$@" 2>/dev/null) || fail "b.cu again"
	echo "$a $b $again"
}

# The request's name (nvcc sees <private directory>/src/<name>) is keyed
# only where it can reach the output (docs/jit.md): the same code and
# options under two names compile once, even where a header writes
# __FILE__ for itself, or defines a macro that does under a condition that
# does not hold (as GCC 13's libstdc++ does for __glibcxx_assert, under
# _GLIBCXX_ASSERTIONS); with -lineinfo, __FILE__ through a header's macro,
# that condition holding, assert(), or __builtin_FILE() (which the
# preprocessor leaves to the compiler), each name compiles its own entry,
# which names it.
testTheNameIsKeyedOnlyWhereItReachesTheOutput() {
	local said kernel
	mkdir -p inc
	echo '__device__ const char *header_file = __FILE__;' >inc/own.h
	echo '#define WHERE __FILE__' >inc/where.h
	printf '#ifdef GUARD_ON\n#define WHERE_IF_ON __FILE__\n#else\n#define WHERE_IF_ON "off"\n#endif\n' >inc/guarded.h
	printf '#include "guarded.h"\nextern "C" __global__ void one(const char **p) { *p = WHERE_IF_ON; }\n' >guarded.cu
	printf '#include "own.h"\nextern "C" __global__ void one(const char **p) { *p = header_file; }\n' >own.cu
	printf '#include "where.h"\nextern "C" __global__ void one(const char **p) { *p = WHERE; }\n' >where.cu
	printf '#include <cassert>\nextern "C" __global__ void one(int *p) { assert(p); *p = 1; }\n' >assert.cu
	printf 'extern "C" __global__ void one(const char **p) { *p = __builtin_FILE(); }\n' >builtin.cu
	printf '#define CAT(a, b) a##b\nextern "C" __global__ void one(const char **p) { *p = CAT(__FI, LE__); }\n' >pasted.cu
	printf 'extern "C" __global__ void one(float *a) { a[threadIdx.x] = 1.0f; }\n' >one.cu
	for kernel in one.cu guarded.cu own.cu; do
		said=($(names_compile $kernel -I"$PWD/inc"))
		assertEquals "$kernel: one compile for both names" "miss hit hit" "${said[0]} ${said[2]} ${said[4]}"
		assertEquals "$kernel: one entry" "${said[1]}" "${said[3]}"
		assertTrue "$kernel: the same bytes" "cmp -s a.cubin b.cubin"
	done
	assertTrue "own.h names itself" "strings a.cubin | grep -q 'inc/own.h'"
	expect_nvcc_runs 3
	assertEquals "guarded.cu's macro was asked of the preprocessor" 1 "$(nvcc_preprocesses)"
	for kernel in "where.cu -I$PWD/inc" assert.cu "one.cu -lineinfo" "guarded.cu -I$PWD/inc -DGUARD_ON" \
		builtin.cu pasted.cu; do
		said=($(names_compile $kernel))
		assertEquals "$kernel: a compile for each name" "miss miss hit" "${said[0]} ${said[2]} ${said[4]}"
		assertNotEquals "$kernel: two entries" "${said[1]}" "${said[3]}"
		assertEquals "$kernel: and the second's again" "${said[3]}" "${said[5]}"
		assertTrue "$kernel: a.cu's names a.cu" "strings a.cubin | grep -q '\\<a\\.cu'"
		assertTrue "$kernel: b.cu's names b.cu" "strings b.cubin | grep -q '\\<b\\.cu'"
		assertFalse "$kernel: and not a.cu" "strings b.cubin | grep -q '\\<a\\.cu'"
	done
	expect_nvcc_runs 15
}

# compression_level (docs/settings.md) holds for the JIT library's entries
# too, and `cjc ls` shows what the store holds for them: level 0 stores the
# cubin as it is, the default compresses it.
testCompressionLevelIsHonoured() {
	write_kernel
	local key
	key=$(CJC_COMPRESSION_LEVEL=0 jit kernel.cu -I"$PWD/inc" | cut -d' ' -f2)
	assertEquals "level 0: stored as it is" false \
		"$("$CJC" show "$key" --json | jq '[.files[] | has("zstd")] | any')"
	assertEquals "ls: as many bytes stored" true \
		"$("$CJC" ls --json | jq '.[0].stored_size == .[0].size')"
	"$CJC" clean >/dev/null || fail "cjc clean"
	key=$(jit kernel.cu -I"$PWD/inc" | cut -d' ' -f2)
	assertEquals "the default: compressed" true \
		"$("$CJC" show "$key" --json | jq '[.files[] | has("zstd")] | all')"
	assertEquals "ls: fewer bytes stored" true \
		"$("$CJC" ls --json | jq '.[0].stored_size < .[0].size')"
	assertEquals "ls's text shows the stored bytes" \
		"$("$CJC" ls --json | jq '.[0].stored_size')" "$("$CJC" ls | awk '{print $4}')"
}

# damage HOW: in a copy of a store that holds the kernel's entry (compiled
# once a suite run, in REF_DIR, through a counting nvcc there, whose path is
# in the key: one compile proves one thing), damages the
# entry's metadata or artifact HOW, and checks that the next compile
# recompiles with the right bytes and leaves the entry as it was.
damage() {
	local key dir before src=$REF_DIR/damage
	local JIT_NVCC=$src/nvcc
	if [ ! -s "$src/key" ]; then
		mkdir -p "$src" && make_nvcc_wrapper "$JIT_NVCC" && (cd "$src" && write_kernel &&
			CJC_DIR=$src/store jit --out good.cubin kernel.cu -I"$src/inc" | cut -d' ' -f2 >key) ||
			fail "the template"
		: >"$NVCC_LOG"
	fi
	key=$(cat "$src/key")
	rm -rf "$CJC_DIR" && cp -a "$src/store" "$CJC_DIR" && cp "$src/kernel.cu" "$src/good.cubin" . || fail "copy"
	dir=$(entry_dir "$key")
	chmod u+w "$dir" "$dir"/*
	case $1 in
	missing) rm "$dir/metadata.json" ;;
	empty) : >"$dir/metadata.json" ;;
	not-json) echo 'not json {' >"$dir/metadata.json" ;;
	format) meta_doc "$dir/metadata.json" | jq '.format = "cudajitcache.entry.v0"' >m && cat m >"$dir/metadata.json" ;;
	size-bool) meta_doc "$dir/metadata.json" | jq '.files["output.cubin"].size = true' >m && cat m >"$dir/metadata.json" ;;
	size-string) meta_doc "$dir/metadata.json" | jq '.files["output.cubin"].size |= tostring' >m && cat m >"$dir/metadata.json" ;;
	bad-sha) meta_doc "$dir/metadata.json" | jq '.files["output.cubin"].sha256 = "ABC"' >m && cat m >"$dir/metadata.json" ;;
	truncated) head -c 100 "$dir/output.cubin" >t && cat t >"$dir/output.cubin" ;;
	esac
	before=$(cd "$dir" && ls -l --time-style=+%s.%N && cat ./* 2>/dev/null | sha256sum)
	assertEquals "$1: recompiled" "miss $key" "$(jit --out again.cubin kernel.cu -I"$src/inc")"
	assertTrue "$1: the right bytes" "cmp -s good.cubin again.cubin"
	assertEquals "$1: the entry is untouched" "$before" \
		"$(cd "$dir" && ls -l --time-style=+%s.%N && cat ./* 2>/dev/null | sha256sum)"
	expect_nvcc_runs 1
	expect_stat damaged 1
}

testMissingMetadataIsRecompiled() { damage missing; }
testEmptyMetadataIsRecompiled() { damage empty; }
testMetadataThatIsNotJsonIsRecompiled() { damage not-json; }
testAWrongFormatIsRecompiled() { damage format; }
testASizeThatIsABooleanIsRecompiled() { damage size-bool; }
testASizeThatIsAStringIsRecompiled() { damage size-string; }
testABadSha256IsRecompiled() { damage bad-sha; }
testATruncatedArtifactIsRecompiled() { damage truncated; }

testAnEmptyArtifactIsNeverPublished() {
	write_kernel
	cat >"$TEST_DIR/bin/nvcc-empty" <<WRAP
#!/bin/bash
"$NVCC" "\$@" || exit
out=; prev=
for a in "\$@"; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
[ -n "\$out" ] && : >"\$out"
exit 0
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-empty"
	JIT_NVCC=$TEST_DIR/bin/nvcc-empty jit kernel.cu -I"$PWD/inc" 2>err && fail "an empty output is an error"
	assertContains "$(cat err)" "made no output"
	assertEquals "nothing published" 0 "$(entry_count)"
}

testEightProcessesCompilingOneKeyLeaveOneEntry() {
	local -x CJC_LEASE_WAIT=0 # no leases: all eight compile, one entry wins
	write_kernel
	make_barrier_nvcc 8
	local i pids=()
	for i in $(seq 8); do
		JIT_NVCC=$TEST_DIR/bin/nvcc-barrier jit --out out$i.cubin kernel.cu -I"$PWD/inc" >said$i &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "a compile failed"; done
	expect_nvcc_runs 8
	assertEquals "one entry" 1 "$(entry_count)"
	assertEquals "no staging left" 0 "$(find "$CJC_DIR"/v1/*/staging -mindepth 1 | wc -l)"
	assertEquals "all name the same key" 1 "$(cat said* | sort -u | wc -l)"
	for i in $(seq 2 8); do assertTrue "out$i" "cmp -s out1.cubin out$i.cubin"; done
	assertEquals "7 lost the race" 7 "$(grep -c 'already published' "$CJC_LOG")"
	"$CJC" verify >/dev/null || fail "verify"
}

# Leases (lease.h), as for cjc: eight processes JIT one kernel at start-up
# and nvcc runs once; the first holds its nvcc until the others wait.
testEightProcessesOfOneKernelRunNvccOnce() {
	write_kernel
	make_held_nvcc
	JIT_NVCC=$TEST_DIR/bin/nvcc-held jit --out out0.cubin kernel.cu -I"$PWD/inc" >said0 &
	local i first=$! pids=()
	wait_for_file "$TEST_DIR/held" || fail "the first never ran nvcc"
	for i in $(seq 7); do
		JIT_NVCC=$TEST_DIR/bin/nvcc-held jit --out out$i.cubin kernel.cu -I"$PWD/inc" >said$i &
		pids+=($!)
	done
	wait_for_lines 7 'waiting for its entry' "$CJC_LOG" || fail "the others did not wait"
	touch "$TEST_DIR/go"
	wait $first || fail "the first failed"
	for i in "${pids[@]}"; do wait "$i" || fail "a compile failed"; done
	expect_nvcc_runs 1
	assertEquals "seven hits" 7 "$(cat said[1-7] | grep -c '^hit ')"
	for i in $(seq 7); do assertTrue "out$i" "cmp -s out0.cubin out$i.cubin"; done
	expect_stat lease_waits 7
}

testAWriterKilledMidCompileLeavesNothingVisible() {
	write_kernel
	cat >"$TEST_DIR/bin/nvcc-hold" <<WRAP
#!/bin/sh
case " \$* " in *" --version "*) exec "$NVCC" "\$@" ;; esac
"$NVCC" "\$@" || exit
echo \$\$ >"$TEST_DIR/held.tmp" && mv "$TEST_DIR/held.tmp" "$TEST_DIR/held"
while [ ! -e "$TEST_DIR/never" ]; do sleep 0.05; done
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-hold"
	JIT_NVCC=$TEST_DIR/bin/nvcc-hold jit kernel.cu -I"$PWD/inc" >/dev/null 2>&1 &
	local pid=$!
	while [ ! -e "$TEST_DIR/held" ]; do sleep 0.05; done
	kill -KILL $pid
	wait $pid 2>/dev/null
	kill -KILL "$(cat "$TEST_DIR/held")" 2>/dev/null # the wrapper, left waiting
	assertEquals "no entry" 0 "$(entry_count)"
	assertEquals "the next compile misses and publishes" miss "$(jit kernel.cu -I"$PWD/inc" | cut -d' ' -f1)"
	assertEquals "one entry" 1 "$(entry_count)"
}

testSixteenThreadsOverFourKeys() {
	CJC_JIT_NVCC=$NVCC "$CJC_JIT_THREADS" threads || fail "threads"
	assertEquals "four entries" 4 "$(entry_count)"
	# all 16 start together, so each may compile; the second round only hits
	assertTrue "at most 16 compiles" "[ $(nvcc_compiles) -ge 4 ] && [ $(nvcc_compiles) -le 16 ]"
}

testAHitIsNotHeldUpByAnotherThreadsCompile() {
	cat >"$TEST_DIR/bin/nvcc-block" <<WRAP
#!/bin/sh
case " \$* " in
*" -DJIT_BLOCK "*)
	touch "$TEST_DIR/blocked"
	while [ ! -e "$TEST_DIR/release" ]; do sleep 0.05; done ;;
esac
exec "$NVCC" "\$@"
WRAP
	chmod +x "$TEST_DIR/bin/nvcc-block"
	CJC_JIT_NVCC=$TEST_DIR/bin/nvcc-block "$CJC_JIT_THREADS" nonblocking "$TEST_DIR/blocked" \
		"$TEST_DIR/release" || fail "nonblocking"
}

testAForkedChildCompilesAndHits() {
	CJC_JIT_NVCC=$NVCC "$CJC_JIT_THREADS" fork || fail "fork"
	expect_nvcc_runs 2
}

testPrintCompilerCommandAndPtxasVerboseOnAMissOnly() {
	write_kernel
	export JITT_JIT_PRINT_COMPILER_COMMAND=1 JITT_JIT_PTXAS_VERBOSE=1
	jit --prefix JITT kernel.cu -I"$PWD/inc" >/dev/null 2>miss.err || fail
	jit --prefix JITT kernel.cu -I"$PWD/inc" >/dev/null 2>hit.err || fail
	unset JITT_JIT_PRINT_COMPILER_COMMAND JITT_JIT_PTXAS_VERBOSE
	assertContains "$(cat miss.err)" "Running command: $NVCC --cubin"
	assertContains "$(grep -v '^ptxas info' miss.err | head -0; cat miss.err)" "ptxas info"
	assertNotContains "$(grep -v '^ptxas' hit.err)" "Running command"
}

testSettingsResolveDeepJitsWay() {
	local v
	v=$(CJC_JIT_DEBUG=1 "$CJC_JIT_CLI" --prefix LIB --setting DEBUG)
	assertEquals "the global variable" 1 "$v"
	v=$(CJC_JIT_DEBUG=1 LIB_JIT_DEBUG=0 "$CJC_JIT_CLI" --prefix LIB --setting DEBUG)
	assertEquals "the library's 0 beats a global 1" 0 "$v"
	v=$(JIT_DEBUG=1 "$CJC_JIT_CLI" --prefix LIB --setting DEBUG)
	assertEquals "unprefixed JIT_* is ignored" 0 "$v"
	v=$(CJC_PRINT_COMMANDS=1 "$CJC_JIT_CLI" --prefix LIB --setting PRINT_COMPILER_COMMAND)
	assertEquals "the cjc setting below both" 1 "$v"
	v=$("$CJC_JIT_CLI" --prefix LIB --setting CACHE_DIR)
	assertEquals "CACHE_DIR defaults to the cjc store" "$CJC_DIR" "$v"
	v=$(LIB_JIT_CACHE_DIR=/x CJC_JIT_CACHE_DIR=/y "$CJC_JIT_CLI" --prefix LIB --setting CACHE_DIR)
	assertEquals "PREFIX_JIT_* first" /x "$v"
	v=$(LIB_JIT_CPP_STANDARD=20 "$CJC_JIT_CLI" --prefix LIB --setting CPP_STANDARD)
	assertEquals "a C++ standard" c++20 "$v"
	v=$(CUDA_HOME=/nowhere PATH=/usr/bin:/bin "$CJC_JIT_CLI" --setting NVCC_COMPILER)
	assertEquals "nvcc when nothing names it" /usr/local/cuda/bin/nvcc "$v"
	v=$(CJC_JIT_NVCC=/opt/nvcc LIB_JIT_NVCC_COMPILER=/p/nvcc "$CJC_JIT_CLI" --prefix LIB --setting NVCC_COMPILER)
	assertEquals "PREFIX_JIT_NVCC_COMPILER, then CJC_JIT_NVCC" /p/nvcc "$v"
	LIB_JIT_DEBUG=maybe "$CJC_JIT_CLI" --prefix LIB --setting DEBUG 2>err && fail "a bad value fails open"
	assertContains "$(cat err)" "LIB_JIT_DEBUG=maybe: expected 1 or 0"
	LIB_JIT_COMPILER=clang "$CJC_JIT_CLI" --prefix LIB --setting DEBUG 2>err && fail "a bad compiler"
	assertContains "$(cat err)" "LIB_JIT_COMPILER=clang: expected nvcc or nvrtc"
}

# A value with a control character is refused, as cjc refuses it in any
# setting: the JIT never fails the program over it, so it is ignored (the
# next source decides) and said, escaped, on stderr and in the log.
testAControlCharacterInASettingIsIgnoredAndSaid() {
	local v
	v=$(LIB_JIT_CACHE_DIR=$'/x\e[31m' CJC_JIT_CACHE_DIR=/y "$CJC_JIT_CLI" --prefix LIB \
		--setting CACHE_DIR 2>err) || fail "the open failed: $(cat err)"
	assertEquals "the next source decides" /y "$v"
	assertContains "$(cat err)" "LIB_JIT_CACHE_DIR='/x\x1b[31m' is ignored"
	assertFalse "nothing raw on stderr" "grep -q $'\e' err"
	v=$(CJC_JIT_DEBUG=$'1\n' "$CJC_JIT_CLI" --setting DEBUG 2>err) || fail "the open failed"
	assertEquals "the default decides" 0 "$v"
	assertTrue "said in the log" "grep -qF \"CJC_JIT_DEBUG='1\\\\x0a' is ignored\" '$CJC_LOG'"
}

testNvrtcCachesCodeWithoutIncludes() {
	have_nvrtc || startSkipping
	cat >plain.cu <<'SRC'
extern "C" __global__ void twice(float *a) { a[threadIdx.x] *= 2.0f; }
SRC
	local first second
	first=$(CJC_JIT_COMPILER=nvrtc jit --out a.cubin plain.cu) || fail "nvrtc miss"
	second=$(CJC_JIT_COMPILER=nvrtc jit --out b.cubin plain.cu) || fail "nvrtc hit"
	assertEquals "miss ${first#miss }" "$first"
	assertEquals "hit ${first#miss }" "$second"
	assertTrue "the same cubin" "cmp -s a.cubin b.cubin"
	assertEquals "another arch, another entry" miss \
		"$(CJC_JIT_COMPILER=nvrtc jit --arch sm_90 plain.cu | cut -d' ' -f1)"
	assertEquals "ptx" miss "$(CJC_JIT_COMPILER=nvrtc jit --format ptx plain.cu | cut -d' ' -f1)"
	# NVRTC runs no assembler: where PATH finds `as` is not in its key
	mkdir -p early && printf '#!/bin/sh\nexec /usr/bin/as "$@"\n' >early/as && chmod +x early/as
	assertEquals "another as on PATH" "$second" \
		"$(PATH="$PWD/early:$PATH" CJC_JIT_COMPILER=nvrtc jit plain.cu)"
	"$CJC" verify >/dev/null || fail "verify"
	"$CJC" show "${first#miss }" --json | jq -e '.compiler.version | startswith("NVRTC")' >/dev/null ||
		fail "metadata names NVRTC"
	expect_nvcc_runs 0
}

# nvrtc ARGS...: the JIT library's NVRTC path (its answer: "hit|miss KEY").
nvrtc() {
	CJC_JIT_COMPILER=nvrtc jit "$@"
}

# plain_nvrtc OUT ARGS...: NVRTC's own cubin for the request, uncached.
plain_nvrtc() {
	local out=$1
	shift
	CJC_DISABLE=1 CJC_JIT_COMPILER=nvrtc jit --out "$out" "$@" >/dev/null
}

# NVRTC's reads are observed (compile/watch.h): a header found through -I
# is keyed by its content, so code that includes one is cached, and an
# edit is a miss that compiles what NVRTC compiles now.
testNvrtcCachesWhatItIncludesByContent() {
	have_nvrtc || startSkipping
	write_kernel
	local first second
	first=$(nvrtc --out a.cubin kernel.cu -I"$PWD/inc") || fail "miss"
	second=$(nvrtc --out b.cubin kernel.cu -I"$PWD/inc") || fail "hit"
	assertEquals "miss ${first#miss }" "$first"
	assertEquals "a hit" "hit ${first#miss }" "$second"
	assertTrue "the same cubin" "cmp -s a.cubin b.cubin"
	"$CJC" show "${first#miss }" --json | jq -e --arg h "$PWD/inc/tile.h" \
		'[.inputs[].path] | index($h)' >/dev/null || fail "the entry names the header it read"
	echo '#define FACTOR 3.0f' >inc/tile.h
	local third
	third=$(nvrtc --out c.cubin kernel.cu -I"$PWD/inc") || fail "after the edit"
	assertEquals "the edited header: a miss" miss "${third%% *}"
	assertNotEquals "another entry" "${first#miss }" "${third#miss }"
	plain_nvrtc ref.cubin kernel.cu -I"$PWD/inc" || fail "plain NVRTC"
	assertTrue "what NVRTC compiles now" "cmp -s c.cubin ref.cubin"
	assertFalse "not the old cubin" "cmp -s c.cubin a.cubin"
	assertEquals "then a hit" "hit ${third#miss }" "$(nvrtc kernel.cu -I"$PWD/inc")"
	# one handle: the store, its memory, then an edit between two requests
	assertEquals "the handle's memory checks the header" "hit hit miss " \
		"$(nvrtc --between "echo '#define FACTOR 4.0f' >inc/tile.h" --warm 1 kernel.cu \
			-I"$PWD/inc" | cut -d' ' -f1 | tr '\n' ' ')"
	expect_nvcc_runs 0
}

# An include candidate NVRTC looked for and did not find is keyed as absent:
# a header created there, earlier on the path, is a miss; one removed is
# NVRTC's error, never the old output.
testNvrtcKeysIncludeCandidatesItDidNotFind() {
	have_nvrtc || startSkipping
	write_kernel
	mkdir -p early
	local first
	first=$(nvrtc kernel.cu -I"$PWD/early" -I"$PWD/inc") || fail "miss"
	assertEquals "a hit" "hit ${first#miss }" "$(nvrtc kernel.cu -I"$PWD/early" -I"$PWD/inc")"
	echo '#define FACTOR 5.0f' >early/tile.h
	local shadowed
	shadowed=$(nvrtc --out s.cubin kernel.cu -I"$PWD/early" -I"$PWD/inc") || fail "shadowed"
	assertEquals "a header that shadows: a miss" miss "${shadowed%% *}"
	plain_nvrtc ref.cubin kernel.cu -I"$PWD/early" -I"$PWD/inc" || fail "plain NVRTC"
	assertTrue "what NVRTC compiles now" "cmp -s s.cubin ref.cubin"
	rm early/tile.h inc/tile.h
	nvrtc kernel.cu -I"$PWD/early" -I"$PWD/inc" >out 2>err && fail "served without its header: $(cat out)"
	plain_nvrtc ref2.cubin kernel.cu -I"$PWD/early" -I"$PWD/inc" 2>/dev/null && fail "NVRTC compiled it"
	assertContains "NVRTC's error" "$(cat err)" "tile.h"
}

# A relative include directory is the working directory's: the same
# request from another directory with another header is not served the
# first one's output.
testNvrtcRelativeIncludeDirectoryIsTheWorkingDirectorys() {
	have_nvrtc || startSkipping
	write_kernel
	mkdir -p a b && cp -r kernel.cu inc a/ && cp -r kernel.cu inc b/
	echo '#define FACTOR 7.0f' >b/inc/tile.h
	local first second
	first=$(cd a && nvrtc kernel.cu -Iinc) || fail "a"
	second=$(cd b && nvrtc --out b.cubin kernel.cu -Iinc) || fail "b"
	assertEquals "another header: a miss" miss "${second%% *}"
	(cd b && plain_nvrtc ref.cubin kernel.cu -Iinc) || fail "plain NVRTC"
	assertTrue "b's own output" "cmp -s b/b.cubin b/ref.cubin"
	assertEquals "a again: a hit" "hit ${first#miss }" "$(cd a && nvrtc kernel.cu -Iinc)"
}

# An NVRTC whose imports the library cannot rebind (one that holds open's
# address in its data): its reads cannot be observed, so nothing is cached,
# include or not, and the compile is NVRTC's.
testNvrtcWhoseReadsCannotBeObservedIsNotCached() {
	have_nvrtc || startSkipping
	local real
	real=$(dirname "$(dirname "$(readlink -f "$REAL_NVCC")")")/lib64/libnvrtc.so
	[ -e "$real" ] || startSkipping
	write_kernel
	export CJC_JIT_NVRTC_LIBRARY=$CJC_FAKE_NVRTC FAKE_NVRTC_REAL=$real
	assertEquals "not cached" "miss -" "$(nvrtc --out a.cubin kernel.cu -I"$PWD/inc")"
	assertEquals "still not cached" "miss -" "$(nvrtc kernel.cu -I"$PWD/inc")"
	unset CJC_JIT_NVRTC_LIBRARY
	plain_nvrtc ref.cubin kernel.cu -I"$PWD/inc" || fail "plain NVRTC"
	assertTrue "NVRTC's cubin" "cmp -s a.cubin ref.cubin"
	assertEquals "no entry" 0 "$(entry_count)"
	grep -q "not cached: the files NVRTC reads cannot be observed: .*a relocation of open of type" \
		"$CJC_LOG" || fail "the log says why: $(cat "$CJC_LOG")"
}

# NVRTC ignores SOURCE_DATE_EPOCH: code that names a time macro (line
# splices joined), a header it includes that does, or an option that does
# is compiled every time, never served.  Whatever spelling of #include the
# preprocessor takes, the header is observed and keyed.
testNvrtcDoesNotCacheTheClockAndKeysEveryInclude() {
	have_nvrtc || startSkipping
	local form i first
	mkdir -p forms
	echo '#define V 1' >forms/v.h
	for form in '#define W __TIME__' '#define W __TI\
ME__' '#include "t.h"'; do
		i=$((${i:-0} + 1))
		printf '#define T __TIME__\n' >forms/t.h
		printf '%s\nextern "C" __global__ void k(int *p) { *p = 1; }\n' "$form" >forms/k$i.cu
		assertEquals "form $i: not cached" "miss -" "$(cd forms && nvrtc k$i.cu)"
		assertEquals "form $i: still not cached" "miss -" "$(cd forms && nvrtc k$i.cu)"
	done
	grep -q 'not published: __TIME__ in t.h' "$CJC_LOG" || fail "the log names the header: $(cat "$CJC_LOG")"
	for form in '/* c */ #include "v.h"' '%:include "v.h"' '#inc\
lude "v.h"' $'\f#include "v.h"'; do
		i=$((i + 1))
		echo '#define V 1' >forms/v.h
		printf '%s\nextern "C" __global__ void k(int *p) { *p = V; }\n' "$form" >forms/k$i.cu
		first=$(cd forms && nvrtc k$i.cu) || fail "form $i"
		assertEquals "form $i: a hit" "hit ${first#miss }" "$(cd forms && nvrtc k$i.cu)"
		echo '#define V 2' >forms/v.h
		assertEquals "form $i: the header edited, a miss" miss \
			"$(cd forms && nvrtc k$i.cu | cut -d' ' -f1)"
	done
	printf 'extern "C" __global__ void k(int *p) { *p = 1; }\n' >forms/plain.cu
	assertEquals "an option's time macro" "miss -" "$(cd forms && nvrtc plain.cu -DX=__TIME__)"
	echo -O3 >forms/popt
	assertEquals "a ptxas options file" "miss -" \
		"$(cd forms && nvrtc plain.cu --ptxas-options=--options-file=popt)"
}

testNoGpuAndNoArchIsAClearError() {
	nvidia-smi -L >/dev/null 2>&1 && startSkipping
	write_kernel
	"$CJC_JIT_CLI" --arch gpu kernel.cu 2>err && fail "no arch, no GPU"
	assertContains "$(cat err)" "give the request an arch"
}

testNullOptionsWithACountIsAClearError() {
	write_kernel
	jit --null-options 5 kernel.cu >out 2>err && fail "options = NULL with noptions = 5 succeeded"
	assertContains "a message, not a crash" "$(cat err)" "noptions = 5 but options = NULL"
	expect_nvcc_runs 0
}

testTheErrorDescribesTheLastCallOnly() {
	write_kernel
	# jit_cli fails when cjc_jit_error() is not empty after a success
	jit --fail-first 1 kernel.cu -I"$PWD/inc" >out 2>err || fail "$(cat err)"
	assertEquals "the compile after the failed call" miss "$(cut -d' ' -f1 out)"
}

testOptionsThatChooseTheOutputAreRefused() {
	write_kernel
	local opt
	for opt in --ptx -ptx --fatbin --cubin -c -dc -E -M -lib -ox.ptx --output-file=x.ptx \
		-odir=out -MF=x.d; do
		jit kernel.cu -I"$PWD/inc" "$opt" >out 2>err && fail "$opt was taken: $(cat out)"
		assertContains "$opt is named" "$(cat err)" "option $opt chooses the output kind"
	done
	expect_nvcc_runs 0
	assertEquals "nothing published" 0 "$(entry_count)"
	assertFalse "no output where -o said" "[ -e x.ptx ]"
}

# A store that cannot be used, or must not be, is no reason to fail: the
# compile runs uncached and returns its result, and the log says why.
testACacheDirThatCannotBeIsAnUncachedCompile() {
	CJC_DIR=/dev/null/x expect_uncached "cache directory /dev/null/x is unusable: Not a directory"
}

testACacheDirBelowAFileIsAnUncachedCompile() {
	: >"$TEST_DIR/file"
	CJC_DIR=$TEST_DIR/file/store expect_uncached "cache directory $TEST_DIR/file/store is unusable"
}

testDisableCompilesUncachedAndMakesNoStore() {
	CJC_DISABLE=1 expect_uncached "compiling without the cache: disable is set"
	assertFalse "no store made" "[ -e '$CJC_DIR' ]"
}

testReadonlyCompilesAndPublishesNothing() {
	CJC_READONLY=1 CJC_JIT_DUMP_PTX=1 expect_uncached "compiled, and not published: readonly is set" \
		2>err
	assertEquals "nothing published" 0 "$(entry_count)"
	assertContains "DUMP_PTX says why there is none" "$(cat err)" \
		"PTX of kernel.cu: not kept: readonly is set"
}

# Another user, in a store directory she cannot write (root would write it
# anyway): her compile runs uncached.
testACacheDirWithoutWritePermissionIsAnUncachedCompile() {
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v useradd >/dev/null; then
		startSkipping
		return
	fi
	make_member
	local others said
	others=$(mktemp -d /tmp/cjc-jit-others.XXXXXX) && chmod 755 "$others" &&
		cp "$CJC_JIT_CLI" "$CJC_BUILD_DIR/src/jit/libcudajitcache.so.0" "$others" &&
		chmod 755 "$others/jit_cli" "$others/libcudajitcache.so.0" && # a build made with umask 077
		mkdir -m 555 "$others/store" && mkdir -m 777 "$others/out" || fail "setup"
	(cd "$others/out" && write_plain && chmod 644 plain.cu)
	said=$(cd "$others/out" && setpriv --reuid=cjc-member2 --regid="$(id -g cjc-member2)" --init-groups \
		env LD_LIBRARY_PATH="$others" CJC_DIR="$others/store" CJC_LOG="$others/out/log" \
		CJC_JIT_NVCC="$REAL_NVCC" "$others/jit_cli" --arch $ARCH --out a.cubin plain.cu)
	assertEquals "her compile succeeds, uncached" "miss -" "$said"
	assertTrue "with nvcc's cubin" "cmp -s '$others/out/a.cubin' '$(reference_cubin)'"
	assertContains "the log says why" "$(cat "$others/out/log")" \
		"kernel.cu: compiling without the cache: cache directory $others/store is unusable: Permission denied"
	assertEquals "nothing in the store" "" "$(ls -A "$others/store")"
	rm -rf "$others"
}

# cjc_jit_open reads the settings and nothing else: no store, NVRTC or driver
# until the first compile.
testOpeningAHandleTouchesNothing() {
	have_nvrtc || startSkipping
	write_plain
	export CJC_DIR=$TEST_DIR/lazy CJC_JIT_COMPILER=nvrtc
	assertEquals "a setting is read" "$CJC_DIR" "$(LD_DEBUG=files "$CJC_JIT_CLI" --setting CACHE_DIR 2>ld)"
	assertFalse "no store" "[ -e '$CJC_DIR' ]"
	assertFalse "no NVRTC loaded" "grep -q 'file=libnvrtc' ld"
	assertFalse "no driver loaded" "grep -q 'file=libcuda\.so' ld"
	LD_DEBUG=files jit plain.cu >/dev/null 2>ld || fail "the compile"
	unset CJC_JIT_COMPILER
	assertTrue "the first compile makes the store" "[ -d '$CJC_DIR/v1' ]"
	assertTrue "and loads NVRTC" "grep -q 'file=libnvrtc' ld"
}

# DUMP_ASM is DUMP_PTX and DUMP_SASS; where cuobjdump is not installed the
# SASS comes from the toolkit's nvdisasm, here a stand-in beside nvcc that
# names the bytes it read.
testDumpAsmShowsThePtxAndTheSassThroughNvdisasm() {
	write_plain
	mkdir "$TEST_DIR/kit"
	make_nvcc_wrapper "$TEST_DIR/kit/nvcc"
	printf '#!/bin/sh\necho "nvdisasm of $(sha256sum <"$1" | cut -c1-64)"\n' >"$TEST_DIR/kit/nvdisasm"
	chmod +x "$TEST_DIR/kit/nvdisasm"
	assertEquals "DUMP_ASM sets DUMP_PTX" 1 "$(CJC_JIT_DUMP_ASM=1 "$CJC_JIT_CLI" --setting DUMP_PTX)"
	assertEquals "and DUMP_SASS" 1 "$(CJC_JIT_DUMP_ASM=1 "$CJC_JIT_CLI" --setting DUMP_SASS)"
	PATH=/usr/bin:/bin JIT_NVCC=$TEST_DIR/kit/nvcc CJC_JIT_DUMP_ASM=1 jit --out a.cubin plain.cu \
		>/dev/null 2>err || fail "$(cat err)"
	assertContains "the entry's PTX" "$(cat err)" "== PTX of kernel.cu ($CJC_DIR/"
	assertContains "for the arch" "$(cat err)" ".target $ARCH"
	assertContains "the SASS through nvdisasm" "$(cat err)" "== SASS of kernel.cu (nvdisasm)"
	assertContains "of the cubin returned" "$(cat err)" "nvdisasm of $(sha256sum <a.cubin | cut -c1-64)"
}

# NVRTC's PTX is the output of a ptx request; for a cubin, DUMP_PTX and
# DUMP_SASS say what happened, in a line each.
testDumpSettingsSayWhatHappenedUnderNvrtc() {
	have_nvrtc || startSkipping
	write_plain
	export CJC_JIT_COMPILER=nvrtc CJC_JIT_DUMP_PTX=1
	PATH=/usr/bin:/bin CJC_JIT_DUMP_SASS=1 jit plain.cu >/dev/null 2>err || fail "cubin"
	assertEquals "two lines: $(cat err)" 2 "$(wc -l <err)"
	assertContains "$(cat err)" "PTX of kernel.cu: not shown: NVRTC was asked for a cubin"
	assertContains "$(cat err)" \
		"SASS of kernel.cu: none: neither cuobjdump nor nvdisasm is installed (beside $(readlink -f "$NVCC"), or on PATH)"
	jit --format ptx --out a.ptx plain.cu >/dev/null 2>err || fail "ptx"
	unset CJC_JIT_COMPILER CJC_JIT_DUMP_PTX
	assertEquals "the heading" "== PTX of kernel.cu (NVRTC's output)" "$(head -1 err)"
	assertEquals "then the output" "$(cat a.ptx)" "$(tail -n +2 err)"
}

# A local array indexed at run time lives in local memory and spills nothing.
testCheckNoLocalMemoryIsApartFromCheckNoSpills() {
	cat >lmem.cu <<'SRC'
extern "C" __global__ void pick(float *a, int k)
{
	float t[256];
	for (int i = 0; i < 256; i++)
		t[i] = a[i];
	a[threadIdx.x] = t[k & 255];
}
SRC
	assertEquals "cjc's check_spills sets it" 1 \
		"$(CJC_CHECK_SPILLS=1 "$CJC_JIT_CLI" --setting CHECK_NO_LOCAL_MEMORY)"
	CJC_JIT_CHECK_NO_SPILLS=1 jit lmem.cu >/dev/null 2>err || fail "no spills: $(cat err)"
	CJC_JIT_CHECK_NO_LOCAL_MEMORY=1 jit lmem.cu >/dev/null 2>err && fail "local memory passed"
	assertContains "$(cat err)" "ptxas reported local memory use and CHECK_NO_LOCAL_MEMORY is set"
	CJC_JIT_CHECK_NO_LOCAL_MEMORY=1 jit lmem.cu >/dev/null 2>err && fail "a hit passed"
	assertContains "on a hit too" "$(cat err)" "CHECK_NO_LOCAL_MEMORY is set"
	expect_nvcc_runs 2
	expect_stat hits 1
	have_nvrtc || { fail "no NVRTC for the rest"; return; }
	export CJC_JIT_COMPILER=nvrtc
	CJC_JIT_CHECK_NO_SPILLS=1 jit lmem.cu >/dev/null 2>err || fail "NVRTC, no spills: $(cat err)"
	CJC_JIT_CHECK_NO_LOCAL_MEMORY=1 jit lmem.cu >/dev/null 2>err && fail "NVRTC: local memory passed"
	unset CJC_JIT_COMPILER
	assertContains "NVRTC's too" "$(cat err)" "CHECK_NO_LOCAL_MEMORY is set"
}

testAVariableThatIsNotASettingIsNamedOncePerHandle() {
	have_nvrtc || startSkipping
	write_plain
	LIB_JIT_DUMP_PXT=1 CJC_JIT_DEBUGG=1 CJC_JIT_LIBRARY=x LIB_JIT_DEBUG=0 \
		"$CJC_JIT_CLI" --prefix LIB --setting DEBUG >/dev/null 2>err || fail "$(cat err)"
	assertContains "$(cat err)" "cjc jit: warning: LIB_JIT_DUMP_PXT is not a setting of the JIT library, and is ignored (did you mean LIB_JIT_DUMP_PTX?)"
	assertContains "$(cat err)" "CJC_JIT_DEBUGG is not a setting of the JIT library, and is ignored (did you mean CJC_JIT_DEBUG?)"
	assertEquals "and nothing else: $(cat err)" 2 "$(wc -l <err)"
	assertEquals "in the log too" 2 "$(grep -c 'is not a setting' "$CJC_LOG")"
	LIB_JIT_DUMP_PXT=1 CJC_JIT_COMPILER=nvrtc jit --prefix LIB --repeat 3 plain.cu >/dev/null 2>err ||
		fail "$(cat err)"
	assertEquals "once for three compiles" 1 "$(grep -c 'LIB_JIT_DUMP_PXT is not a setting' err)"
}

# A broken setting in cjc's settings file is counted as for cjc (issue 39):
# once per handle, whatever the number of its compiles, and named.
testABrokenSettingIsCountedOncePerHandle() {
	write_plain
	mkdir -p "$CJC_DIR"
	printf 'max_sise = 1G\n' >"$CJC_DIR/cudajitcache.conf"
	jit --repeat 3 --out a.cubin plain.cu >/dev/null 2>err || fail "$(cat err)"
	jit --out b.cubin plain.cu >/dev/null 2>>err || fail "$(cat err)"
	assertTrue "the cubin" "cmp -s a.cubin b.cubin"
	assertEquals "two handles" 2 "$("$CJC" stats --json 2>/dev/null | jq '.bad_settings')"
	assertEquals "which" 2 "$("$CJC" stats --json 2>/dev/null | jq '.bad_settings_by_setting["max_sise (unknown)"]')"
}

# fake_cuda's device 0 is an sm_80, its device 1 an sm_90 (sm_90a, as
# JIT kernels use).  A forked child of a process that used the driver
# cannot use CUDA; it takes the arch its parent found for device 0.
testTheArchIsTheCurrentDevicesAskedOncePerDevice() {
	have_nvrtc || startSkipping
	[ -n "${CJC_FAKE_CUDA_DIR:-}" ] || fail "set CJC_FAKE_CUDA_DIR to build/tests/fake_cuda"
	write_plain
	local said key
	said=$(LD_LIBRARY_PATH=$CJC_FAKE_CUDA_DIR FAKE_CUDA_ARCHS=80,90 FAKE_CUDA_LOG=$TEST_DIR/cuda.log \
		"$CJC_JIT_CLI" --device-arch none --device-arch 1 --device-arch 0 --device-arch 1 \
		--device-arch fork) || fail "device arch"
	assertEquals "device 0 without a context, then each context's" \
		"none sm_80 1 sm_90a 0 sm_80 1 sm_90a fork sm_80" "$(echo $said)"
	assertEquals "device 0 asked once" 1 "$(grep -c '^device 0$' "$TEST_DIR/cuda.log")"
	assertEquals "device 1 asked once" 1 "$(grep -c '^device 1$' "$TEST_DIR/cuda.log")"
	assertEquals "the context asked each time, not by the child" 4 "$(grep -c '^current$' "$TEST_DIR/cuda.log")"
	key=$(LD_LIBRARY_PATH=$CJC_FAKE_CUDA_DIR FAKE_CUDA_ARCHS=80,90 CJC_JIT_COMPILER=nvrtc \
		"$CJC_JIT_CLI" --device-arch 1 --arch gpu plain.cu | sed -n 's/^miss //p')
	assertEquals "a request without an arch compiles for its device's" '["sm_90a"]' \
		"$("$CJC" show "$key" --json | jq -c .options.archs)"
	LD_LIBRARY_PATH=$CJC_FAKE_CUDA_DIR "$CJC_JIT_CLI" --arch gpu plain.cu 2>err && fail "no GPU"
	assertContains "no GPU is a clear error" "$(cat err)" "no usable GPU: cuInit failed with CUDA_ERROR_NO_DEVICE"
}

# The shared library exports the calls its header declares and nothing
# else: an internal function named cjc_jit_* once slipped through the
# version script's pattern (src/jit/exports.map).
testTheLibraryExportsItsHeaderAlone() {
	local header="$CJC_SOURCE_DIR/src/jit/include/cudajitcache/jit.h"
	nm -D --defined-only "$CJC_BUILD_DIR/src/jit/libcudajitcache.so" |
		awk '$2 ~ /^[TDBRW]$/ { sub(/@.*/, "", $3); print $3 }' | sort >exported
	grep -o 'cjc_jit_[a-z_]*(' "$header" | tr -d '(' | sort -u >declared
	assertEquals "exported but not declared" "" "$(comm -23 exported declared)"
	assertEquals "declared but not exported" "" "$(comm -13 exported declared)"
	assertTrue "cjc_jit_open among them" "grep -qx cjc_jit_open exported"
}

. "$SHUNIT2"
