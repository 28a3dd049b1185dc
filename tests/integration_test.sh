#!/bin/bash
# integration_test.sh - README.md: find_package(CudaJitCache) from an install
# prefix and from the build tree, cudajitcache_enable, cudajitcache_add_fatbin,
# CMAKE_PROJECT_TOP_LEVEL_INCLUDES and the Make include, on the examples, with
# both CMake generators.  Compiles are counted by the cache's own counters
# (CMake's compiler checks run nvcc directly and are not compiles of the
# project) and, for Make, by the counting nvcc.

. "$(dirname "$0")/helpers.sh"
. "$(dirname "$0")/cmake_helpers.sh"

# check_cmake_app GENERATOR [CMAKE-ARG...]: the example app built cold, then
# in a new tree (hits), then after an edit of a header of the program and
# of the shared header.  COLD_PACKAGE, when set, is the package the cold
# tree finds (the warm tree takes the installed one); after_cold and
# after_warm, which a test may define, check more of the trees then.
check_cmake_app() {
	local gen=$1 src
	shift
	export CJC_DIR="$TEST_DIR/cache-${gen// /}"
	src=$(example cmake-app)
	PACKAGE=${COLD_PACKAGE:-$PACKAGE} configure_build "$src" "$TEST_DIR/cold" "$gen" "$@" ||
		fail "$gen: cold build"
	expect_counts "$gen cold" 2 0
	after_cold
	configure_build "$src" "$TEST_DIR/warm" "$gen" "$@" || fail "$gen: warm build"
	expect_counts "$gen new tree" 2 2
	after_warm
	assertEquals "$gen: hits give the same device code" "$(tree_devcode "$TEST_DIR/cold")" \
		"$(tree_devcode "$TEST_DIR/warm")"
	assertTrue "$gen: entries labelled by target" "\"$CJC\" ls | grep -q ' vecmath ' && \"$CJC\" ls | grep -q ' cmake_app '"
	echo '#define APP_EDITED 1' >>"$src/src/app_config.h"
	rebuild "$TEST_DIR/warm" || fail
	expect_counts "$gen: a header of the program only" 3 2
	echo '#define VECMATH_EDITED 1' >>"$src/include/vecmath.h"
	rebuild "$TEST_DIR/warm" || fail
	expect_counts "$gen: the shared header" 5 2
	rm -rf "$TEST_DIR/cold" "$TEST_DIR/warm" "$src"
	after_cold() { :; }
	after_warm() { :; }
}
after_cold() { :; }
after_warm() { :; }

# With Makefiles, the project has a compiler launcher of its own, which the
# module keeps (cjc runs it for nvcc): it runs for each miss and never for
# a hit.  (Where the launcher is set does not depend on the generator: a
# target property, CUDA_COMPILER_LAUNCHER.)  The two generators' app tests
# run in one of CI's builds each (half_here).
testCmakeAppWithMakefiles() {
	half_here sanitized || return 0
	cat >"$TEST_DIR/bin/launcher" <<EOF2
#!/bin/sh
echo "\$*" >>"$TEST_DIR/launcher.log"
exec "\$@"
EOF2
	chmod +x "$TEST_DIR/bin/launcher"
	after_cold() {
		assertEquals "the launcher ran nvcc for each miss" 2 "$(grep -c 'nvcc' "$TEST_DIR/launcher.log")"
	}
	after_warm() {
		assertEquals "hits run no launcher" 2 "$(grep -c 'nvcc' "$TEST_DIR/launcher.log")"
	}
	check_cmake_app "Unix Makefiles" -DCMAKE_CUDA_COMPILER_LAUNCHER="$TEST_DIR/bin/launcher"
}

# With Ninja, the cold tree finds the package in the build tree (the warm
# one the installed package): the built cjc is the launcher there.
testCmakeAppWithNinja() {
	half_here plain || return 0
	after_cold() {
		# (rules.ninja up to CMake 3.2x; the launcher moved to build.ninja
		# later; quoted there when its path has a space)
		assertTrue "the built cjc is the launcher" \
			"grep -rqsF --include='*.ninja' -e '$CJC_BUILD_DIR/src/tool/cjc --target' \
				-e '\"$CJC_BUILD_DIR/src/tool/cjc\" --target' '$TEST_DIR/cold'"
	}
	COLD_PACKAGE=$CJC_BUILD_DIR check_cmake_app Ninja
}

testVersionAndModule() {
	mkdir -p p && cat >p/CMakeLists.txt <<'EOF2'
cmake_minimum_required(VERSION 3.25)
project(p LANGUAGES NONE)
find_package(CudaJitCache 0.1 REQUIRED)
include(CudaJitCache)
get_target_property(where CudaJitCache::cjc IMPORTED_LOCATION)
message(STATUS "found ${CudaJitCache_VERSION} at ${where}")
find_package(CudaJitCache 9.0 QUIET)
message(STATUS "9.0 found: ${CudaJitCache_FOUND}")
EOF2
	cmake -S p -B p/b -DCudaJitCache_DIR="$PACKAGE" >out.txt 2>&1 || { cat out.txt; fail "configure"; }
	local version
	version=$("$CJC" --version)
	assertTrue "version and executable" "grep -q 'found ${version#cjc } at $PREFIX/bin/cjc' out.txt"
	assertTrue "a newer major version is not found" "grep -q '9.0 found: 0' out.txt"
	# the manual page and the documents are installed too (rendered where
	# man-db is installed: scripts/install-deps does not install it)
	assertTrue "cjc.1 installed" "grep -q '^\.TH CJC 1' '$PREFIX/share/man/man1/cjc.1'"
	if command -v man >/dev/null; then
		MANWIDTH=80 man -l "$PREFIX/share/man/man1/cjc.1" >man.txt 2>&1
		assertTrue "man -l cjc.1 renders: $(head -3 man.txt)" "grep -q 'cjc - a SHA-256-keyed compile cache' man.txt"
	fi
	assertTrue "README, CHANGELOG and docs/ installed" \
		"[ -s '$PREFIX/share/doc/cudajitcache/README.md' ] && [ -s '$PREFIX/share/doc/cudajitcache/CHANGELOG.md' ] && [ -s '$PREFIX/share/doc/cudajitcache/docs/team-cache.md' ]"
}

testTopLevelIncludesEnableAnUneditedProject() {
	mkdir -p tiny && mv k.cu k.h dev.h host.h tiny/ && cat >tiny/CMakeLists.txt <<'EOF2'
cmake_minimum_required(VERSION 3.25)
project(tiny LANGUAGES CUDA)
add_library(tiny STATIC k.cu)
set_target_properties(tiny PROPERTIES CUDA_ARCHITECTURES 80)
find_package(CudaJitCache CONFIG QUIET) # a project that links the JIT library too
if(TARGET CudaJitCache::jit)
  get_target_property(type CudaJitCache::jit TYPE)
  message(STATUS "tiny: the JIT library is a ${type}")
endif()
EOF2
	configure_build tiny "$TEST_DIR/b1" Ninja \
		-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$PACKAGE/EnableCudaJitCache.cmake" || fail
	# the include runs before any language is enabled: the library it
	# would import then comes out static, with CMake's warning
	assertFalse "no warning of static libraries: $(grep -A2 'ADD_LIBRARY' "$TEST_DIR/b1.configure.log")" \
		"grep -q 'ADD_LIBRARY called with SHARED' '$TEST_DIR/b1.configure.log'"
	assertTrue "the JIT library stays shared: $(grep 'tiny:' "$TEST_DIR/b1.configure.log")" \
		"grep -q 'tiny: the JIT library is a SHARED_LIBRARY' '$TEST_DIR/b1.configure.log'"
	configure_build tiny "$TEST_DIR/b2" "Unix Makefiles" \
		-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES="$PACKAGE/EnableCudaJitCache.cmake" || fail
	# No include directories: both generators give nvcc the same words.  (A
	# third tree, of Makefiles again, hit as the second does: one is enough.)
	expect_counts "one miss, then hits" 1 1
	assertTrue "labelled" "\"$CJC\" ls | grep -q ' tiny '"
	assertTrue "cudajitcache_enable says what it enabled: $(grep CudaJitCache: "$TEST_DIR/b1.configure.log")" \
		"grep -qF -- '-- CudaJitCache: $PREFIX/bin/cjc compiles CUDA for every target in . and below; store $CJC_DIR' '$TEST_DIR/b1.configure.log'"
	# README: the plain launcher, as a ccache user sets it, no package needed
	configure_build tiny "$TEST_DIR/b3" Ninja -DCMAKE_CUDA_COMPILER_LAUNCHER="$CJC" || fail
	expect_counts "CMAKE_CUDA_COMPILER_LAUNCHER=cjc hits too" 1 2
}

testAotFatbinsAcrossGenerators() {
	local src f
	src=$(example aot-fatbin)
	configure_build "$src" "$TEST_DIR/a1" Ninja || fail
	expect_counts "cold" 4 0
	configure_build "$src" "$TEST_DIR/a2" "Unix Makefiles" || fail
	expect_counts "the other generator's tree" 4 4
	for f in kernels/saxpy.fatbin kernels/reduce.fatbin kernels_cubin/saxpy.cubin kernels_ptx/saxpy.ptx; do
		assertTrue "$f built" "[ -s '$TEST_DIR/a1/$f' ]"
		assertTrue "$f from a hit is the same bytes" "cmp -s '$TEST_DIR/a1/$f' '$TEST_DIR/a2/$f'"
	done
	echo '// edited' >>"$src/kernels/reduce.cu"
	rebuild "$TEST_DIR/a1" || fail
	expect_counts "an edited source rebuilds its fatbin only" 5 4
	echo '#define AOT_EDITED 1' >>"$src/kernels/params.h"
	rebuild "$TEST_DIR/a2" || fail
	expect_counts "a header rebuilds its dependents" 9 4
	rebuild "$TEST_DIR/a2" || fail
	expect_counts "nothing left to do" 9 4
}

testAddFatbinRejectsBadArguments() {
	mkdir -p bad && cat >bad/CMakeLists.txt <<'EOF2'
cmake_minimum_required(VERSION 3.25)
project(bad LANGUAGES NONE)
find_package(CudaJitCache REQUIRED)
cudajitcache_add_fatbin(k SOURCES k.cu ARCHITECTURES 80 90 CUBIN)
EOF2
	cmake -S bad -B bad/b -DCudaJitCache_DIR="$PACKAGE" >out.txt 2>&1
	assertNotEquals "configure fails" 0 $?
	assertTrue "says why" "grep -q 'CUBIN and PTX take one architecture' out.txt"
}

# CMake 3.27 and newer have their own fatbin and cubin rules; they go
# through the launcher like any CUDA compile.  (CI runs this suite with
# Debian's CMake 3.25, where there is nothing to check, and again with
# bookworm-backports' 3.31.)
testCmakesOwnFatbinAndCubinRulesAreCached() {
	if ! cmake_at_least 3.27; then
		echo "CMake $CMAKE_VERSION has no CUDA_FATBIN_COMPILATION: nothing to check"
		return
	fi
	mkdir -p own && mv k.cu k.h dev.h host.h own/ && cat >own/CMakeLists.txt <<'EOF2'
cmake_minimum_required(VERSION 3.27)
project(own LANGUAGES CUDA)
find_package(CudaJitCache REQUIRED)
add_library(fat OBJECT k.cu)
set_target_properties(fat PROPERTIES CUDA_FATBIN_COMPILATION ON CUDA_ARCHITECTURES "80;90")
add_library(cub OBJECT k.cu)
set_target_properties(cub PROPERTIES CUDA_CUBIN_COMPILATION ON CUDA_ARCHITECTURES "90-real")
cudajitcache_enable()
EOF2
	local gen f
	for gen in Ninja "Unix Makefiles"; do
		export CJC_DIR="$TEST_DIR/cache-${gen// /}"
		configure_build own "$TEST_DIR/o1-${gen// /}" "$gen" || fail
		configure_build own "$TEST_DIR/o2-${gen// /}" "$gen" || fail
		expect_counts "CMake $CMAKE_VERSION, $gen" 2 2
		for f in fat.dir/k.fatbin cub.dir/k.cubin; do
			assertTrue "$gen: $f from a hit is the same bytes" \
				"cmp -s '$TEST_DIR/o1-${gen// /}/CMakeFiles/$f' '$TEST_DIR/o2-${gen// /}/CMakeFiles/$f'"
		done
	done
}

testMakeApp() {
	local src mk=$PREFIX/share/cudajitcache/cudajitcache.mk
	src=$(example make-app)
	cp -r "$src" "$TEST_DIR/make-app-2"
	# another checkout: its relative paths resolve elsewhere, so base_dir (docs/key.md, base_dir)
	export CJC_BASE_DIR=$TEST_DIR
	make -C "$src" -j4 CJC="$MAKE_CJC" NVCC="$NVCC" CJC_MK="$mk" >make1.log 2>&1 || { cat make1.log; fail "cold"; }
	expect_counts "cold" 3 0
	assertEquals "nvcc ran 3 compiles and the link" 4 "$(nvcc_compiles)"
	make -C "$TEST_DIR/make-app-2" -j4 CJC="$MAKE_CJC" NVCC="$NVCC" CJC_MK="$mk" >make2.log 2>&1 || { cat make2.log; fail "warm"; }
	expect_counts "a fresh copy" 3 3
	assertEquals "only the link ran nvcc" 5 "$(nvcc_compiles)"
	assertTrue "fatbin from a hit is the same bytes" "cmp -s '$src/stencil.fatbin' '$TEST_DIR/make-app-2/stencil.fatbin'"
	assert_same_devcode "$src/main.o" "$TEST_DIR/make-app-2/main.o"
	make -C "$src" CJC="$MAKE_CJC" NVCC="$NVCC" CJC_MK="$mk" >make3.log 2>&1
	assertTrue "the include leaves the default goal: $(cat make3.log)" "grep -q \"Nothing to be done for 'all'\" make3.log"
	echo '#define STENCIL_EDITED 1' >>"$src/stencil.h"
	make -C "$src" -j4 CJC="$MAKE_CJC" NVCC="$NVCC" CJC_MK="$mk" >make4.log 2>&1 || fail
	expect_counts "the header's dependents" 6 3
	echo 'int unused_by_anyone;' >"$src/other.h"
	make -C "$src" CJC="$MAKE_CJC" NVCC="$NVCC" CJC_MK="$mk" >make5.log 2>&1 || fail
	assertTrue "an unrelated header rebuilds nothing" "grep -q \"Nothing to be done for 'all'\" make5.log"
}

testMakeIncludeKindsAndPrefix() {
	local mk=$PREFIX/share/cudajitcache/cudajitcache.mk
	cat >Makefile <<EOF2
include $mk
all: k.cubin k.ptx k.fatbin own.o
own.o: k.cu
	\$(CJC_NVCC) -c k.cu -o \$@ -arch=sm_80
EOF2
	make -j4 CJC="$MAKE_CJC" NVCC="$NVCC" CUDA_ARCHS="80 90" >make.log 2>&1 || { cat make.log; fail; }
	expect_counts "four kinds through the cache" 4 0
	assertTrue "cubin for the first arch" "grep -q -- '--cubin -arch=sm_80' make.log"
	assertTrue "fatbin with both archs" "grep -q -- 'code=sm_90 -gencode=arch=compute_90,code=compute_90' make.log"
	assertTrue "dependency files" "[ -s k.cubin.d ] && [ -s k.ptx.d ] && [ -s k.fatbin.d ]"
}

# The include found by pkg-config; a source three directories down and
# outputs in an obj/ directory (from src/): a header edit rebuilds each.
testMakeIncludeDeepSourcesAndAnObjectDirectory() {
	local mk
	mk=$(PKG_CONFIG_PATH=$(dirname "$(find "$PREFIX" -name cudajitcache.pc)") pkg-config --variable=makeinclude cudajitcache)
	assertTrue "pkg-config --variable=makeinclude: '$mk'" "[ '$mk' -ef '$PREFIX/share/cudajitcache/cudajitcache.mk' ]"
	mkdir -p a/b/c src/d/e
	for f in a/b/c/k src/d/e/m; do
		echo '#define N 4' >"$f.h"
		printf '#include "%s.h"\n__global__ void k(float *x) { x[threadIdx.x] *= N; }\n' "${f##*/}" >"$f.cu"
	done
	printf 'CJC_OBJDIR = obj\nCJC_SRCDIR = src\ninclude %s\nall: a/b/c/k.cubin obj/d/e/m.ptx\n' "$mk" >Makefile
	make CJC="$MAKE_CJC" NVCC="$NVCC" >make1.log 2>&1 || { cat make1.log; fail "first build"; }
	expect_counts "a deep source and one into obj/" 2 0
	assertTrue "obj/d/e/m.ptx and its dependency file" "[ -s obj/d/e/m.ptx ] && [ -s obj/d/e/m.ptx.d ]"
	echo '#define EDITED 1' >>a/b/c/k.h
	echo '#define EDITED 1' >>src/d/e/m.h
	make CJC="$MAKE_CJC" NVCC="$NVCC" >make2.log 2>&1 || { cat make2.log; fail "after the edits"; }
	expect_counts "both headers' dependents rebuilt" 4 0
	make CJC="$MAKE_CJC" NVCC="$NVCC" >make3.log 2>&1
	assertTrue "then nothing to do: $(cat make3.log)" "grep -q \"Nothing to be done for 'all'\" make3.log"
}

. "$SHUNIT2"
