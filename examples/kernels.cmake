# The examples' legacy CPU kernels, which the tests use too: included by
# examples/CMakeLists.txt, or by tests/CMakeLists.txt when the examples are
# not built (CCSHIM_BUILD_EXAMPLES=OFF).
#
# An object library, so that their registration constructors are always
# linked in; and a shared library of legacy code for the tools, the Python
# tests and `ccshim conform`.
add_library(ccshim_example_kernels OBJECT
  ${PROJECT_SOURCE_DIR}/examples/legacy/add_cpu.cc
  ${PROJECT_SOURCE_DIR}/examples/legacy/tuple_tmp.c)
target_link_libraries(ccshim_example_kernels PRIVATE ccshim ccshim_warnings)
# Legacy code exports its kernels, as it would built anywhere else.
set_target_properties(ccshim_example_kernels PROPERTIES CXX_STANDARD 17
  C_VISIBILITY_PRESET default CXX_VISIBILITY_PRESET default)
add_library(ccshim_examples SHARED $<TARGET_OBJECTS:ccshim_example_kernels>)
target_link_libraries(ccshim_examples PRIVATE ccshim)
