# Python.cmake - installs the Python package (python/cudajitcache) where the
# prefix's Python finds it, with a module _build.py that names the library
# it was installed with (relative to the package, so that a staged install,
# DESTDIR or CPack's, stays right).
#
#   prefix /usr        lib/python3/dist-packages (Debian's layout)
#   prefix /usr/local  lib/python3.X/dist-packages (Debian's python3 finds it)
#   any other prefix   the interpreter's own layout for it (lib/python3.X/
#                      site-packages): PYTHONPATH, or a venv at that prefix
#
# CJC_PYTHON is the interpreter asked (Debian's /usr/bin/python3 where it is);
# CJC_PYTHON_INSTALL_DIR, relative to the prefix, overrides the choice.
if(EXISTS /usr/bin/python3)
  set(cjc_default_python /usr/bin/python3)
else()
  find_program(cjc_default_python python3)
endif()
set(CJC_PYTHON "${cjc_default_python}" CACHE FILEPATH "The Python whose layout the package is installed in")

if(NOT CJC_PYTHON_INSTALL_DIR)
  set(cjc_python_dir "")
  if(CJC_PYTHON)
    # the shallowest of the interpreter's own package directories under the
    # prefix, else its scheme's purelib for the prefix
    execute_process(COMMAND ${CJC_PYTHON} -c [=[
import os, sys, sysconfig
prefix = os.path.normpath(sys.argv[1])
own = [os.path.relpath(p, prefix) for p in sys.path
       if p.startswith(prefix + "/") and p.endswith(("dist-packages", "site-packages"))]
# /usr: lib/python3/dist-packages, not local/lib/python3.X/dist-packages
own.sort(key=lambda p: p.count("/"))
print(own[0] if own else
      sysconfig.get_path("purelib", "posix_prefix", {"base": "/", "platbase": "/"}).lstrip("/"))
]=] ${CMAKE_INSTALL_PREFIX}
      OUTPUT_VARIABLE cjc_python_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      set(cjc_python_dir "")
    endif()
  endif()
  if(NOT cjc_python_dir)
    set(cjc_python_dir lib/python3/dist-packages)
  endif()
  set(CJC_PYTHON_INSTALL_DIR ${cjc_python_dir} CACHE STRING
    "Where the Python package goes, relative to the prefix")
endif()
message(STATUS "Python package: <prefix>/${CJC_PYTHON_INSTALL_DIR}/cudajitcache")

# _build.py: the version, and the library relative to the package directory.
set(cjc_python_pkg ${CMAKE_INSTALL_PREFIX}/${CJC_PYTHON_INSTALL_DIR}/cudajitcache)
file(RELATIVE_PATH CJC_PY_LIBRARY ${cjc_python_pkg}
  ${CMAKE_INSTALL_FULL_LIBDIR}/libcudajitcache.so.${PROJECT_VERSION_MAJOR})
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/python/_build.py @ONLY CONTENT [=[
"""Written by CudaJitCache's install (cmake/Python.cmake)."""
VERSION = "@PROJECT_VERSION@"
# the library installed with the package, relative to this directory
LIBRARY = "@CJC_PY_LIBRARY@"
]=])

install(DIRECTORY python/cudajitcache DESTINATION ${CJC_PYTHON_INSTALL_DIR}
  FILES_MATCHING PATTERN "*.py" PATTERN __pycache__ EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/python/_build.py DESTINATION ${CJC_PYTHON_INSTALL_DIR}/cudajitcache)
