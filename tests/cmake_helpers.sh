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
}

oneTimeTearDown() { rm -rf "$PREFIX"; }

# example NAME: a copy of examples/NAME in the test directory (it gets edited).
example() {
	cp -r "$CJC_SOURCE_DIR/examples/$1" "$TEST_DIR/$1" && echo "$TEST_DIR/$1"
}

# configure_build SRC BUILD GENERATOR [CMAKE-ARG...]
configure_build() {
	local src=$1 build=$2 gen=$3
	shift 3
	cmake -S "$src" -B "$build" -G "$gen" -DCudaJitCache_DIR="$PACKAGE" \
		-DCMAKE_CUDA_COMPILER="$REAL_NVCC" "$@" >"$build.configure.log" 2>&1 ||
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
