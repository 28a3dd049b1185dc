# cmake_helpers.sh - for suites that build real CMake projects through an
# installed package: sourced after helpers.sh.  The package is installed once
# per suite into PREFIX; PACKAGE is its CMake directory.

: "${CJC_BUILD_DIR:?set CJC_BUILD_DIR to the build tree}"
command -v cmake >/dev/null && command -v ninja >/dev/null && command -v make >/dev/null || {
	echo "cmake, ninja and make are needed: skipping" >&2
	exit 125
}

oneTimeSetUp() {
	PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/cjc-prefix.XXXXXX")
	cmake --install "$CJC_BUILD_DIR" --prefix "$PREFIX" >/dev/null || exit 1
	PACKAGE=$PREFIX/lib/cmake/CudaJitCache
	make_platform || exit 1
}

oneTimeTearDown() { rm -rf "$PREFIX"; }

# example NAME: a copy of examples/NAME in the test directory (it gets edited).
example() {
	cp -r "$CJC_SOURCE_DIR/examples/$1" "$TEST_DIR/$1" && echo "$TEST_DIR/$1"
}

# The compilers' identification, made once a suite: CMake runs nvcc and the
# host compilers several times to identify them when it configures a new
# tree (none of it through the launcher), about 6 s of CPU a tree.  A first
# tree of an empty project (make_platform) keeps the results: the files of
# CMakeFiles/<version>/ in PLATFORM, and the cache entries that the
# identification found (the tools' paths, the default architectures) in
# PLATFORM_ARGS.  Each tree the suite configures gets both, and CMake loads
# them instead of testing again, as when a tree is configured a second time
# (CMAKE_PLATFORM_INFO_INITIALIZED).  The make program is the generator's
# own, so it is not carried.
make_platform() {
	local dir=$PREFIX/platform-project
	mkdir -p "$dir" && printf 'cmake_minimum_required(VERSION 3.25)\nproject(platform LANGUAGES C CXX CUDA)\n' >"$dir/CMakeLists.txt"
	cmake -S "$dir" -B "$dir/b" -DCMAKE_CUDA_COMPILER="$REAL_NVCC" >"$dir.log" 2>&1 || { cat "$dir.log"; return 1; }
	PLATFORM=$PREFIX/platform
	mkdir -p "$PLATFORM" && cp -r "$dir"/b/CMakeFiles/[0-9]* "$PLATFORM/" && rm -rf "$PLATFORM"/*/CompilerId* || return 1
	mapfile -t PLATFORM_ARGS < <(grep -E '^CMAKE_[A-Z0-9_]+:(FILEPATH|INTERNAL|STRING)=' "$dir/b/CMakeCache.txt" |
		grep -E '^CMAKE_([A-Z0-9_]+:FILEPATH|EXECUTABLE_FORMAT:INTERNAL|UNAME:INTERNAL|CUDA_ARCHITECTURES:STRING)=' |
		grep -v '^CMAKE_MAKE_PROGRAM:' | sed 's/^/-D/')
	PLATFORM_ARGS+=(-DCMAKE_PLATFORM_INFO_INITIALIZED:INTERNAL=1)
}

# configure_build SRC BUILD GENERATOR [CMAKE-ARG...]
configure_build() {
	local src=$1 build=$2 gen=$3
	shift 3
	[ -e "$build/CMakeCache.txt" ] || { mkdir -p "$build/CMakeFiles" && cp -r "$PLATFORM/." "$build/CMakeFiles/"; }
	cmake -S "$src" -B "$build" -G "$gen" -DCudaJitCache_DIR="$PACKAGE" \
		-DCMAKE_CUDA_COMPILER="$REAL_NVCC" "${PLATFORM_ARGS[@]}" "$@" >"$build.configure.log" 2>&1 ||
		{ cat "$build.configure.log"; return 1; }
	cmake --build "$build" -j4 >"$build.build.log" 2>&1 || { cat "$build.build.log"; return 1; }
}

rebuild() {
	cmake --build "$1" -j4 >"$1.rebuild.log" 2>&1 || { cat "$1.rebuild.log"; return 1; }
}

expect_counts() {
	assertEquals "$1: misses" "$2" "$(stat_value misses)"
	assertEquals "$1: hits" "$3" "$(stat_value hits)"
}

# The device code of every object of a build tree, in one stream.
tree_devcode() {
	local o
	find "$1" -name '*.o' | sort | while read -r o; do devcode "$o"; done | sha256sum
}
