# A toolchain that builds for an older glibc than the build machine's: zig's
# clang (PyPI's ziglang, through dev/zig/) links against the symbol versions
# of the glibc that CCSHIM_ZIG_TARGET names, so the result runs on every
# glibc from that one on.  The wheel's build (dev/wheel.py) uses it:
#
#   cmake -S . -B build-wheel-x86_64 --toolchain cmake/zig-toolchain.cmake \
#         -DCCSHIM_ZIG_TARGET=x86_64-linux-gnu.2.27
#
# A target of another architecture (aarch64-linux-gnu.2.27) is a cross
# build; its tests run under qemu-user where that is installed.
if(NOT CCSHIM_ZIG_TARGET)
  message(FATAL_ERROR "zig-toolchain.cmake: set CCSHIM_ZIG_TARGET, e.g. x86_64-linux-gnu.2.27")
endif()
if(NOT CCSHIM_ZIG_TARGET MATCHES "^(x86_64|aarch64)-linux-gnu\\.2\\.[0-9]+$")
  message(FATAL_ERROR "zig-toolchain.cmake: CCSHIM_ZIG_TARGET is ARCH-linux-gnu.2.N with ARCH "
                      "x86_64 or aarch64, got '${CCSHIM_ZIG_TARGET}'")
endif()
set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CCSHIM_ZIG_TARGET)
string(REGEX REPLACE "-.*" "" ccshim_zig_arch "${CCSHIM_ZIG_TARGET}")

set(ccshim_zig_dir ${CMAKE_CURRENT_LIST_DIR}/../dev/zig)
get_filename_component(ccshim_zig_dir ${ccshim_zig_dir} ABSOLUTE)
set(CMAKE_C_COMPILER ${ccshim_zig_dir}/cc)
set(CMAKE_CXX_COMPILER ${ccshim_zig_dir}/c++)
set(CMAKE_AR ${ccshim_zig_dir}/ar CACHE FILEPATH "zig's ar")
set(CMAKE_RANLIB ${ccshim_zig_dir}/ranlib CACHE FILEPATH "zig's ranlib")
set(CMAKE_C_COMPILER_TARGET ${CCSHIM_ZIG_TARGET})
set(CMAKE_CXX_COMPILER_TARGET ${CCSHIM_ZIG_TARGET})

# ccache (where the Makefile set it as the launcher) keys objects on zig's
# version, not on the date of the wrapper it runs (dev/zig/cc): a new zig
# compiles anew.
foreach(lang C CXX)
  if(DEFINED ENV{CMAKE_${lang}_COMPILER_LAUNCHER})
    if(NOT ccshim_zig_version)
      execute_process(COMMAND ${ccshim_zig_dir}/zig version OUTPUT_VARIABLE ccshim_zig_version
                      OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
    endif()
    set(CMAKE_${lang}_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env
        CCACHE_COMPILERCHECK=string:zig-${ccshim_zig_version} $ENV{CMAKE_${lang}_COMPILER_LAUNCHER})
  endif()
endforeach()

cmake_host_system_information(RESULT ccshim_host_arch QUERY OS_PLATFORM)
if(NOT ccshim_zig_arch STREQUAL ccshim_host_arch)
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR ${ccshim_zig_arch})
  # Nothing of the build machine's own libraries is searched: zig brings the
  # target's libc, and libffi is named by path (CCSHIM_LIBFFI_STATIC).
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
  # ctest runs the target's programs under qemu-user (Debian's qemu-user),
  # which finds the target's loader and libc where Debian's multiarch
  # packages put them (libc6:arm64).
  find_program(CCSHIM_QEMU qemu-${ccshim_zig_arch})
  if(CCSHIM_QEMU)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${CCSHIM_QEMU})
  endif()
endif()
