# DebianDirs.cmake - run by CPack (CPACK_PRE_BUILD_SCRIPTS) on the staged
# files before they are packed, what Debian asks of a package (lintian):
#
#   - the manual page compressed (gzip -9n: no name or time in it);
#   - changelog.gz, in Debian's format: one entry for the version, which
#     points to CHANGELOG.md beside it;
#   - lintian's overrides, for what the package does on purpose: cjc holds
#     zlib (static, src/lib/CMakeLists.txt: 0.7 ms a process), and the
#     loader's audit module links no library, not even the C library
#     (src/shim/CMakeLists.txt);
#   - every directory 0755, as Debian's are.  The staging directories take
#     the umask of whoever runs cpack, whatever
#     CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS says (CMake 3.25), and a
#     package made under umask 077 made /usr/lib/.../cmake/CudaJitCache
#     unreadable to every user but root.
if(NOT IS_DIRECTORY "${CPACK_TEMPORARY_DIRECTORY}")
  message(FATAL_ERROR "DebianDirs.cmake: no staging directory (CPACK_TEMPORARY_DIRECTORY)")
endif()
set(cjc_root "${CPACK_TEMPORARY_DIRECTORY}/${CPACK_PACKAGING_INSTALL_PREFIX}")
file(GLOB cjc_pages "${cjc_root}/${CPACK_CJC_MANDIR}/man1/*.1")
foreach(page IN LISTS cjc_pages)
  execute_process(COMMAND gzip -9n "${page}" RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "DebianDirs.cmake: gzip ${page}: ${rc}")
  endif()
endforeach()
string(TIMESTAMP cjc_date "%a, %d %b %Y %H:%M:%S +0000" UTC) # SOURCE_DATE_EPOCH if set
set(cjc_changelog "${cjc_root}/share/doc/${CPACK_PACKAGE_NAME}/changelog")
file(WRITE "${cjc_changelog}"
  "${CPACK_PACKAGE_NAME} (${CPACK_PACKAGE_VERSION}) unstable; urgency=medium\n\n"
  "  * Version ${CPACK_PACKAGE_VERSION}: CHANGELOG.md, beside this file, says what\n"
  "    each version changed.\n\n"
  " -- ${CPACK_PACKAGE_CONTACT}  ${cjc_date}\n")
execute_process(COMMAND gzip -9n "${cjc_changelog}" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "DebianDirs.cmake: gzip ${cjc_changelog}: ${rc}")
endif()
string(REGEX REPLACE "^/" "" cjc_prefix "${CPACK_PACKAGING_INSTALL_PREFIX}")
file(WRITE "${cjc_root}/share/lintian/overrides/${CPACK_PACKAGE_NAME}"
  "# static on purpose: one library fewer to load in every cjc process\n"
  "${CPACK_PACKAGE_NAME}: embedded-library zlib [${cjc_prefix}/bin/cjc]\n"
  "# the loader's audit module links nothing, not even the C library\n"
  "${CPACK_PACKAGE_NAME}: shared-library-lacks-prerequisites [${cjc_prefix}/${CPACK_CJC_LIBDIR}/cudajitcache/libcudajitcache-audit.so]\n")
file(CHMOD "${cjc_root}/share/lintian/overrides/${CPACK_PACKAGE_NAME}" PERMISSIONS
  OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

file(CHMOD_RECURSE "${CPACK_TEMPORARY_DIRECTORY}" DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
