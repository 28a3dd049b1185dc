# Distributed under the terms of the project's license.
#[=======================================================================[.rst:
CudaJitCache
------------

Routes a project's CUDA compiles through ``cjc``, the CudaJitCache
launcher, and builds fatbins, cubins and ptx ahead of time through it.
``find_package(CudaJitCache)`` includes this module; ``include(CudaJitCache)``
after it does nothing more.  Works with CMake 3.25 and newer.

Two lines turn the cache on::

  find_package(CudaJitCache REQUIRED)
  cudajitcache_enable()

Result variables
^^^^^^^^^^^^^^^^

``CudaJitCache_EXECUTABLE``
  The ``cjc`` program (also the imported target ``CudaJitCache::cjc``).
``CudaJitCache_NVCC``
  The nvcc that :command:`cudajitcache_add_fatbin` runs: ``CMAKE_CUDA_COMPILER``
  when the CUDA language is enabled, else ``nvcc`` found on ``PATH`` or in
  ``/usr/local/cuda/bin``.

Commands
^^^^^^^^

.. command:: cudajitcache_enable

  Sets each target's ``CUDA_COMPILER_LAUNCHER`` to ``cjc --target <name>``, so
  entries are labelled with their target::

    cudajitcache_enable([TARGETS <target>...])

  It prints one line at configure time: the ``cjc`` it put in front of nvcc,
  which targets, and the store (``CJC_DIR`` when set then).

  Without ``TARGETS``, every target of the current directory and the
  directories below it, including targets created after the call (the work
  is deferred to the end of the directory).  With ``TARGETS``, just those.
  A launcher the target already had (``ccache``, say) is kept: ``cjc`` runs
  it in front of nvcc whenever nvcc really runs (``cjc --wrap``).  CMake's own
  fatbin, cubin and ptx compile rules (``CUDA_FATBIN_COMPILATION`` and the
  like, in the CMake versions that have them) go through the launcher too.

.. command:: cudajitcache_add_fatbin

  Builds one fatbin (or cubin, or ptx) per source ahead of time, through the
  cache::

    cudajitcache_add_fatbin(<name> SOURCES <src>...
                            [ARCHITECTURES <arch>...]
                            [OPTIONS <flag>...]
                            [INCLUDE_DIRECTORIES <dir>...]
                            [CUBIN | PTX])

  Creates the target ``<name>`` (built by default) whose outputs are
  ``${CMAKE_CURRENT_BINARY_DIR}/<name>/<stem>.fatbin`` (``.cubin``, ``.ptx``),
  listed in its ``CUDAJITCACHE_OUTPUTS`` property.  Each output has a
  dependency file, so editing a header rebuilds what includes it.

  ``ARCHITECTURES`` are numbers such as ``80 90`` (default: the numbers of
  ``CMAKE_CUDA_ARCHITECTURES``, else ``80``).  A fatbin holds SASS for each
  and PTX for the highest, so newer GPUs can JIT it.  ``CUBIN`` and ``PTX``
  take exactly one architecture.  ``OPTIONS`` go to nvcc as they are.
#]=======================================================================]

include_guard(GLOBAL)
cmake_policy(PUSH)
cmake_policy(VERSION 3.25)

if(NOT CudaJitCache_EXECUTABLE)
  find_program(CudaJitCache_EXECUTABLE cjc REQUIRED)
endif()
if(NOT CudaJitCache_NVCC)
  if(CMAKE_CUDA_COMPILER)
    set(CudaJitCache_NVCC "${CMAKE_CUDA_COMPILER}")
  else()
    find_program(CudaJitCache_NVCC nvcc HINTS ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES bin)
  endif()
endif()

# Puts cjc in front of one target's CUDA compiles, keeping its launcher.
function(_cudajitcache_route target)
  get_target_property(type ${target} TYPE)
  get_target_property(imported ${target} IMPORTED)
  if(imported OR type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
    return()
  endif()
  get_target_property(old ${target} CUDA_COMPILER_LAUNCHER)
  if(old AND "${CudaJitCache_EXECUTABLE}" IN_LIST old)
    return()
  endif()
  set(launcher "${CudaJitCache_EXECUTABLE}" --target ${target})
  if(old)
    foreach(word IN LISTS old)
      list(APPEND launcher --wrap "${word}")
    endforeach()
  endif()
  set_property(TARGET ${target} PROPERTY CUDA_COMPILER_LAUNCHER "${launcher}")
endfunction()

# Routes every target of a directory and of the directories below it.
function(_cudajitcache_route_directory dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    _cudajitcache_route(${target})
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _cudajitcache_route_directory("${sub}")
  endforeach()
endfunction()

function(cudajitcache_enable)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "TARGETS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "cudajitcache_enable: unexpected arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(arg_TARGETS)
    foreach(target IN LISTS arg_TARGETS)
      if(NOT TARGET ${target})
        message(FATAL_ERROR "cudajitcache_enable: ${target} is not a target")
      endif()
      _cudajitcache_route(${target})
    endforeach()
    set(what "targets ${arg_TARGETS}")
  else()
    cmake_language(DEFER DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
      CALL _cudajitcache_route_directory "${CMAKE_CURRENT_SOURCE_DIR}")
    file(RELATIVE_PATH dir "${CMAKE_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
    if(dir STREQUAL "")
      set(dir ".")
    endif()
    set(what "every target in ${dir} and below")
  endif()
  if(DEFINED ENV{CJC_DIR} AND NOT "$ENV{CJC_DIR}" STREQUAL "")
    set(store "store $ENV{CJC_DIR} (CJC_DIR now)")
  else()
    set(store "store from cjc's settings (cjc config)")
  endif()
  message(STATUS "CudaJitCache: ${CudaJitCache_EXECUTABLE} compiles CUDA for ${what}; ${store}")
endfunction()

# The architectures of cudajitcache_add_fatbin: numbers only.
function(_cudajitcache_archs out)
  set(archs ${ARGN})
  if(NOT archs AND CMAKE_CUDA_ARCHITECTURES)
    foreach(a IN LISTS CMAKE_CUDA_ARCHITECTURES)
      string(REGEX MATCH "^[0-9]+[af]?" number "${a}")
      if(number)
        list(APPEND archs ${number})
      endif()
    endforeach()
  endif()
  if(NOT archs)
    set(archs 80)
  endif()
  list(REMOVE_DUPLICATES archs)
  foreach(a IN LISTS archs)
    if(NOT a MATCHES "^[0-9]+[af]?$")
      message(FATAL_ERROR "cudajitcache_add_fatbin: '${a}' is not an architecture number such as 80 or 90")
    endif()
  endforeach()
  set(${out} ${archs} PARENT_SCOPE)
endfunction()

function(cudajitcache_add_fatbin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "CUBIN;PTX" ""
    "SOURCES;ARCHITECTURES;OPTIONS;INCLUDE_DIRECTORIES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "cudajitcache_add_fatbin: unexpected arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "cudajitcache_add_fatbin(${name}): SOURCES is required")
  endif()
  if(arg_CUBIN AND arg_PTX)
    message(FATAL_ERROR "cudajitcache_add_fatbin(${name}): CUBIN or PTX, not both")
  endif()
  if(NOT CudaJitCache_NVCC)
    message(FATAL_ERROR "cudajitcache_add_fatbin(${name}): nvcc not found: set CudaJitCache_NVCC")
  endif()
  _cudajitcache_archs(archs ${arg_ARCHITECTURES})
  list(LENGTH archs narchs)
  if((arg_CUBIN OR arg_PTX) AND NOT narchs EQUAL 1)
    message(FATAL_ERROR "cudajitcache_add_fatbin(${name}): CUBIN and PTX take one architecture, got ${archs}")
  endif()
  if(arg_CUBIN)
    set(ext cubin)
    set(flags --cubin -arch=sm_${archs})
  elseif(arg_PTX)
    set(ext ptx)
    set(flags --ptx -arch=compute_${archs})
  else()
    set(ext fatbin)
    set(flags --fatbin)
    foreach(a IN LISTS archs)
      list(APPEND flags "-gencode=arch=compute_${a},code=sm_${a}")
    endforeach()
    list(GET archs -1 newest)
    list(APPEND flags "-gencode=arch=compute_${newest},code=compute_${newest}")
  endif()
  foreach(dir IN LISTS arg_INCLUDE_DIRECTORIES)
    cmake_path(ABSOLUTE_PATH dir BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND flags "-I${dir}")
  endforeach()
  set(outputs)
  foreach(src IN LISTS arg_SOURCES)
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
    cmake_path(GET src STEM stem)
    set(out "${CMAKE_CURRENT_BINARY_DIR}/${name}/${stem}.${ext}")
    add_custom_command(OUTPUT "${out}"
      COMMAND "${CudaJitCache_EXECUTABLE}" --target ${name} "${CudaJitCache_NVCC}"
              ${flags} ${arg_OPTIONS} -o "${out}" -MD -MF "${out}.d" "${src}"
      DEPENDS "${src}"
      DEPFILE "${out}.d"
      COMMENT "Building ${ext} ${name}/${stem}.${ext} through the cache"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND outputs "${out}")
  endforeach()
  file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/${name}")
  add_custom_target(${name} ALL DEPENDS ${outputs})
  set_property(TARGET ${name} PROPERTY CUDAJITCACHE_OUTPUTS ${outputs})
endfunction()

cmake_policy(POP)
