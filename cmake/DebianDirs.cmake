# DebianDirs.cmake - run by CPack (CPACK_PRE_BUILD_SCRIPTS) on the staged
# files before they are packed: every directory 0755, as Debian's are.  The
# staging directories take the umask of whoever runs cpack, whatever
# CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS says (CMake 3.25), and a
# package made under umask 077 made /usr/lib/.../cmake/CudaJitCache
# unreadable to every user but root.
if(NOT IS_DIRECTORY "${CPACK_TEMPORARY_DIRECTORY}")
  message(FATAL_ERROR "DebianDirs.cmake: no staging directory (CPACK_TEMPORARY_DIRECTORY)")
endif()
file(CHMOD_RECURSE "${CPACK_TEMPORARY_DIRECTORY}" DIRECTORY_PERMISSIONS
  OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
