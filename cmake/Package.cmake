# Package.cmake - what find_package(CudaJitCache) finds, installed and in
# the build tree, and the Make include.
#
#   <prefix>/lib/cmake/CudaJitCache/  CudaJitCacheConfig.cmake, ...ConfigVersion.cmake,
#                                     CudaJitCache.cmake (the module),
#                                     EnableCudaJitCache.cmake (for CMAKE_PROJECT_TOP_LEVEL_INCLUDES)
#   <prefix>/share/cudajitcache/      cudajitcache.mk
#   <prefix>/share/man/man1/          cjc.1
#   <prefix>/share/doc/cudajitcache/  README.md, CHANGELOG.md, docs/*.md (links between them kept)
#   <build>/                          CudaJitCacheConfig.cmake using the built cjc and modules/
include(CMakePackageConfigHelpers)

set(CONFIG_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/CudaJitCache)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/CudaJitCacheConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)

# Installed: paths relative to the prefix.
set(CONFIG_CJC_PATH ${CMAKE_INSTALL_BINDIR}/cjc)
set(CONFIG_MODULE_DIR ${CONFIG_INSTALL_DIR})
configure_package_config_file(cmake/CudaJitCacheConfig.cmake.in
  ${PROJECT_BINARY_DIR}/install/CudaJitCacheConfig.cmake
  INSTALL_DESTINATION ${CONFIG_INSTALL_DIR}
  PATH_VARS CONFIG_CJC_PATH CONFIG_MODULE_DIR)
configure_file(cmake/EnableCudaJitCache.cmake.in
  ${PROJECT_BINARY_DIR}/install/EnableCudaJitCache.cmake @ONLY)
install(FILES
  ${PROJECT_BINARY_DIR}/install/CudaJitCacheConfig.cmake
  ${PROJECT_BINARY_DIR}/CudaJitCacheConfigVersion.cmake
  ${PROJECT_BINARY_DIR}/install/EnableCudaJitCache.cmake
  modules/CudaJitCache.cmake
  DESTINATION ${CONFIG_INSTALL_DIR})
install(FILES modules/cudajitcache.mk DESTINATION ${CMAKE_INSTALL_DATADIR}/cudajitcache)

# The manual page and the documentation (not CMAKE_INSTALL_DOCDIR: its
# default is named after the project, CudaJitCache, and Debian's are lower case).
install(FILES docs/cjc.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
set(CJC_DOC_DIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/cudajitcache)
install(FILES README.md CHANGELOG.md DESTINATION ${CJC_DOC_DIR})
install(DIRECTORY docs/ DESTINATION ${CJC_DOC_DIR}/docs FILES_MATCHING PATTERN "*.md")

# The build tree: the cjc just built and the modules of the source tree.
set(CONFIG_CJC_PATH ${PROJECT_BINARY_DIR}/src/tool/cjc)
set(CONFIG_MODULE_DIR ${PROJECT_SOURCE_DIR}/modules)
configure_package_config_file(cmake/CudaJitCacheConfig.cmake.in
  ${PROJECT_BINARY_DIR}/CudaJitCacheConfig.cmake
  INSTALL_DESTINATION ${PROJECT_BINARY_DIR}
  INSTALL_PREFIX ${PROJECT_BINARY_DIR}
  PATH_VARS CONFIG_CJC_PATH CONFIG_MODULE_DIR)

# The JIT library (src/jit): CudaJitCache::jit, installed and in the build tree.
install(EXPORT CudaJitCacheJit NAMESPACE CudaJitCache:: FILE CudaJitCacheJitTargets.cmake
  DESTINATION ${CONFIG_INSTALL_DIR})
export(EXPORT CudaJitCacheJit NAMESPACE CudaJitCache::
  FILE ${PROJECT_BINARY_DIR}/CudaJitCacheJitTargets.cmake)
