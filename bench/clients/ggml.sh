#!/bin/bash
# bench/clients/ggml.sh TARBALL - ggml (../shared/clients/ggml-*.tar.gz) as
# its users build it, through cjc by the zero-edit include with GGML_CCACHE
# left on: a cold build of one checkout, then a second checkout elsewhere,
# each with base_dir at its own checkout (docs/recipes.md); then plain nvcc
# with the second checkout's own commands, and each object's device code
# (.nv_fatbin) compared with plain nvcc's.  Needs nvcc, cmake, ninja,
# python3; cjc and its CMake package under PREFIX (cmake --install).
#
#     PREFIX=/opt/cjc bench/clients/ggml.sh ../shared/clients/ggml-d99724f.tar.gz
#
# OBJECTS="src/ggml-cuda/CMakeFiles/ggml-cuda.dir/acc.cu.o ..." builds those
# alone (ninja's targets) and compares them.
#
# Benchmarks are not tests: nothing here asserts a time.
set -uo pipefail
TARBALL=$(realpath "${1:?usage: ggml.sh TARBALL}")
: "${PREFIX:?set PREFIX to the prefix cjc is installed in}"
export PATH=$PREFIX/bin:$PATH
W=${WORK:-$(mktemp -d)}
A=$W/a/ggml B=$W/x/ggml
export CJC_DIR=$W/store
secs() { awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $1 }"; }
# build CHECKOUT: configure and build it, base_dir at the checkout.
build() {
	mkdir -p "$1" && tar xzf "$TARBALL" -C "$1" || return 1
	cmake -S "$1" -B "$1/build" -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
		-DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
		-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$PREFIX/lib/cmake/CudaJitCache/EnableCudaJitCache.cmake" \
		>"$1.configure.log" 2>&1 || { tail "$1.configure.log"; return 1; }
	local t0=$EPOCHREALTIME
	# shellcheck disable=SC2086 # OBJECTS are words
	CJC_BASE_DIR=$1 CJC_LOG=$1.cjc.log ninja -C "$1/build" ${OBJECTS:-} >"$1.build.log" 2>&1 || { tail "$1.build.log"; return 1; }
	echo "$1: $(secs "$t0") s, $(grep -c '\] hit ' "$1.cjc.log") hits, $(grep -c '\] miss for' "$1.cjc.log") misses"
}
build "$A" && build "$B" || exit 1
# plain nvcc with the second checkout's commands (the launcher's words off)
mkdir -p "$W/plain" && cd "$B/build" || exit 1
python3 -c "import json
for e in json.load(open('compile_commands.json')):
    if e['file'].endswith('.cu'): print(e['command'])" |
	grep -F -f <(for o in ${OBJECTS:-.cu.o}; do echo "$o"; done) |
	sed -E "s#^.*/cjc --target [^ ]+ ##; s# -o ([^ ]*)\$# -o $W/plain/\\1#" >"$W/plain.cmds"
sed -E 's#.* -o ([^ ]*)$#\1#' "$W/plain.cmds" | xargs -n1 dirname | sort -u | xargs mkdir -p
t0=$EPOCHREALTIME
xargs -P"$(nproc)" -d '\n' -I{} sh -c '{} >/dev/null 2>&1' <"$W/plain.cmds"
echo "plain nvcc, second checkout: $(secs "$t0") s"
same=0 differ=0
for p in $(cd "$W/plain" && find . -name '*.o'); do
	objcopy -O binary --only-section=.nv_fatbin "$W/plain/$p" "$W/p.fb" || continue
	objcopy -O binary --only-section=.nv_fatbin "$p" "$W/o.fb" || continue
	if cmp -s "$W/p.fb" "$W/o.fb"; then same=$((same + 1)); else differ=$((differ + 1)) && echo "device code differs: $p"; fi
done
echo "device code against plain nvcc's: $same same, $differ differ"
