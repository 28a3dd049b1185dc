# Debian.cmake - `cpack -G DEB` in a build tree makes cudajitcache_<version>_<arch>.deb
# of everything `cmake --install` installs: cjc, libcudajitcache (shared,
# static, <cudajitcache/jit.h>), cudajitcache.pc, the CMake package, the Make
# include, the NVRTC shim and its audit module, and the Python package.
#
# The package installs at the prefix the tree was configured with, which
# should be /usr (CMakePresets.json's "deb" preset): paths are compiled in
# (the audit module's shim directory) and GNUInstallDirs picks Debian's
# multiarch libdir and lib/python3/dist-packages only for /usr.
set(CPACK_PACKAGE_NAME cudajitcache)
set(CPACK_PACKAGE_VENDOR CudaJitCache)
set(CPACK_PACKAGE_CONTACT "CudaJitCache developers <cudajitcache@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "SHA-256-keyed compile cache in front of nvcc")
# (lines under 80 characters: lintian's extended-description-line-too-long)
string(JOIN "\n" CPACK_PACKAGE_DESCRIPTION
  "cjc caches nvcc's outputs by a key of everything that decides them,"
  "locally and in remote stores; libcudajitcache and the cudajitcache"
  "Python package compile CUDA source at run time through the same store;"
  "the NVRTC shim puts it under programs that use NVRTC.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Depends: from the ELF files (dpkg-shlibdeps, from dpkg-dev) and python3.
# libcurl and hiredis are loaded with dlopen for the remote stores
# (remote.h), so they are recommended; nvcc is the CUDA Toolkit's, not Debian's.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/src/shim/stub)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libcurl4 (>= 7.85.0), libhiredis0.14")
set(CPACK_STRIP_FILES ON) # lintian's unstripped-binary-or-object
# The control files (CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA), made here:
#   shlibs    libcudajitcache alone.  CPack's GENERATE_SHLIBS lists every
#             shared object with a soname, and the NVRTC shims have
#             NVIDIA's (libnvrtc.so.12, .13): the package claimed to be
#             the provider of NVIDIA's library for every package built
#             against it.  The shims are private to the package
#             (<libdir>/cudajitcache, put in NVRTC's place by `cjc run`'s
#             audit module): no line.  scripts/ci-package checks it.
#   triggers  ldconfig, for libcudajitcache.so.N (Debian's way; CPack's
#             postinst and postrm call it too, as lintian's
#             maintscript-calls-ldconfig says: empty ones of our own in
#             their place would be its maintainer-script-empty).
#   prerm     Python writes __pycache__ into the package's directory when
#             root imports it: removed with the package.
set(cjc_control ${PROJECT_BINARY_DIR}/debian)
get_target_property(cjc_jit_name cudajitcache_jit OUTPUT_NAME)
get_target_property(cjc_jit_soversion cudajitcache_jit SOVERSION)
file(WRITE ${cjc_control}/shlibs
  "lib${cjc_jit_name} ${cjc_jit_soversion} ${CPACK_PACKAGE_NAME} (= ${CPACK_PACKAGE_VERSION})\n")
file(WRITE ${cjc_control}/triggers "activate-noawait ldconfig\n")
file(WRITE ${cjc_control}/prerm "#!/bin/sh\nset -e\nrm -rf '${CMAKE_INSTALL_PREFIX}/${CJC_PYTHON_INSTALL_DIR}/cudajitcache/__pycache__'\n")
file(CHMOD ${cjc_control}/prerm PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
  GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${cjc_control}/shlibs ${cjc_control}/triggers
  ${cjc_control}/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# directories 0755, the manual page compressed, a Debian changelog, lintian's overrides
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/DebianDirs.cmake)
set(CPACK_CJC_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(CPACK_CJC_MANDIR ${CMAKE_INSTALL_MANDIR})
set(CPACK_GENERATOR DEB)
include(CPack)
