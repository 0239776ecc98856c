# Which libffi libccshim uses.
#
# By default the system's shared one, found with pkg-config (Debian's
# libffi-dev): what a distribution, `cmake --install` and `pip install .`
# want.  With CCSHIM_LIBFFI_STATIC, a static position-independent archive
# (Debian's libffi_pic.a) is linked into libccshim.so with its symbols
# hidden, so that the library needs nothing but glibc and cannot meet
# another libffi of the process (the portable wheel, docs/build.md).  Then
# only the shared library is installed: a static libccshim would hand
# libffi's objects to its users.
#
# Sets CCSHIM_LIBFFI_BUNDLED (ON/OFF), what the installed CMake package and
# pkg-config file say about libffi (CCSHIM_CONFIG_DEPENDENCIES,
# CCSHIM_PC_REQUIRES_PRIVATE), and defines ccshim_use_libffi(TARGET [LINK]):
# TARGET compiles against ffi.h and, with LINK, links libffi (a shared
# library keeping libffi's symbols inside).
set(CCSHIM_LIBFFI_STATIC "" CACHE FILEPATH
  "A static position-independent libffi (Debian's libffi_pic.a) to link into libccshim.so, symbols hidden; empty: the system's shared libffi")
set(CCSHIM_LIBFFI_INCLUDE "" CACHE PATH
  "ffi.h's folder for CCSHIM_LIBFFI_STATIC; empty: Debian's multiarch one beside it")

if(NOT CCSHIM_LIBFFI_STATIC)
  set(CCSHIM_LIBFFI_BUNDLED OFF)
  pkg_check_modules(LIBFFI REQUIRED IMPORTED_TARGET libffi)
  set(CCSHIM_CONFIG_DEPENDENCIES [[
find_dependency(Threads)
find_dependency(PkgConfig)
pkg_check_modules(LIBFFI REQUIRED IMPORTED_TARGET libffi)]])
  set(CCSHIM_PC_REQUIRES_PRIVATE "Requires.private: libffi\n")
  function(ccshim_use_libffi target)
    target_link_libraries(${target} PRIVATE PkgConfig::LIBFFI)
  endfunction()
  return()
endif()

set(CCSHIM_LIBFFI_BUNDLED ON)
set(CCSHIM_CONFIG_DEPENDENCIES
  "# Built with libffi inside libccshim.so (CCSHIM_LIBFFI_STATIC): nothing to find.")
set(CCSHIM_PC_REQUIRES_PRIVATE "")
if(NOT EXISTS "${CCSHIM_LIBFFI_STATIC}" OR IS_DIRECTORY "${CCSHIM_LIBFFI_STATIC}")
  message(FATAL_ERROR "CCSHIM_LIBFFI_STATIC: expected a static libffi such as Debian's "
                      "/usr/lib/x86_64-linux-gnu/libffi_pic.a, got '${CCSHIM_LIBFFI_STATIC}' "
                      "(no such file)")
endif()
set(ccshim_ffi_inc "${CCSHIM_LIBFFI_INCLUDE}")
if(NOT ccshim_ffi_inc)
  # Debian: /usr/lib/TRIPLET/libffi_pic.a has its headers in /usr/include/TRIPLET.
  get_filename_component(ccshim_ffi_triplet "${CCSHIM_LIBFFI_STATIC}" DIRECTORY)
  get_filename_component(ccshim_ffi_triplet "${ccshim_ffi_triplet}" NAME)
  set(ccshim_ffi_inc "/usr/include/${ccshim_ffi_triplet}")
endif()
foreach(header ffi.h ffitarget.h)
  if(NOT EXISTS "${ccshim_ffi_inc}/${header}")
    message(FATAL_ERROR "CCSHIM_LIBFFI_STATIC: expected ${header} of the same libffi in "
                        "'${ccshim_ffi_inc}' (set CCSHIM_LIBFFI_INCLUDE), found none")
  endif()
  # Only libffi's two headers are copied: the folder they live in also holds
  # the build machine's glibc headers, which must not shadow the target's.
  configure_file("${ccshim_ffi_inc}/${header}" "${PROJECT_BINARY_DIR}/libffi/include/${header}"
                 COPYONLY)
endforeach()

function(ccshim_use_libffi target)
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/libffi/include)
  if(NOT "LINK" IN_LIST ARGN)
    return()
  endif()
  target_link_libraries(${target} PRIVATE "${CCSHIM_LIBFFI_STATIC}")
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    # libffi's symbols stay inside the library: none exported, none bound to
    # another libffi loaded in the same process.  A version script rather
    # than --exclude-libs, which zig's linker does not take.
    set(map ${PROJECT_SOURCE_DIR}/cmake/bundled-exports.map)
    target_link_options(${target} PRIVATE "LINKER:--version-script=${map}")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${map})
  endif()
endfunction()
