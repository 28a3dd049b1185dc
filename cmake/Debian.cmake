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
set(CPACK_PACKAGE_DESCRIPTION
  "cjc caches nvcc's outputs by a key of everything that decides them, locally and in remote stores; libcudajitcache and the cudajitcache Python package compile CUDA source at run time through the same store; the NVRTC shim puts it under programs that use NVRTC.")
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
# shlibs and the ldconfig trigger for libcudajitcache.so.N
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Python writes __pycache__ into the package's directory when root imports it:
# removed with the package.
set(cjc_prerm ${PROJECT_BINARY_DIR}/debian/prerm)
file(WRITE ${cjc_prerm} "#!/bin/sh\nset -e\nrm -rf '${CMAKE_INSTALL_PREFIX}/${CJC_PYTHON_INSTALL_DIR}/cudajitcache/__pycache__'\n")
file(CHMOD ${cjc_prerm} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
  GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${cjc_prerm})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/DebianDirs.cmake) # directories 0755
set(CPACK_GENERATOR DEB)
include(CPack)
