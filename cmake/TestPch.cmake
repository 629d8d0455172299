# Google Test's header parsed once per build, not once per test file. Parsing and instantiating
# gtest.h is 2.5-3.5 s of every test file's compile (measured: a file with one TEST is 4.5 s at -O3,
# 2.6 s of it parsing alone), and the three builds CI makes (plain, ASan+UBSan, TSan) compile
# about 400 test files between them. One small host program precompiles the header; every
# executable that links Google Test reuses it.
#
# GCC only: GCC quietly parses the header itself where a reusing target's flags make the
# precompiled one invalid, so a mismatch costs time, never correctness; clang refuses such a
# header instead. Forcing gtest.h into a test file changes nothing a test can see: each includes
# it anyway. Off with -DSTREAMPOOL_TEST_PCH=OFF.
option(STREAMPOOL_TEST_PCH "Precompile Google Test's header for the test programs (GCC)" ON)

# streampool_reuse_gtest_pch(DIRECTORY...): every executable defined in those directories that
# links Google Test reuses the precompiled header.
function(streampool_reuse_gtest_pch)
  if(NOT STREAMPOOL_TEST_PCH OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  # An executable with the tests' warnings, as they are: GCC takes the header only where the
  # options it depends on match (-fPIE, and -Wpedantic, which undefines __cpp_runtime_arrays).
  add_executable(streampool_gtest_pch ${PROJECT_SOURCE_DIR}/tests/common/gtest_pch.cpp)
  target_link_libraries(streampool_gtest_pch PRIVATE GTest::gtest)
  streampool_warnings(streampool_gtest_pch)
  target_precompile_headers(streampool_gtest_pch PRIVATE <gtest/gtest.h>)
  # Under -fsanitize=thread at -O1, GCC 12 reports std::string's operator+ inlined from the
  # precompiled header as a memcpy out of bounds (-Warray-bounds, -Wstringop-overflow), false positives it keeps quiet
  # in system headers parsed without the precompiled header; the other builds keep the warning.
  set(quiet "")
  if(STREAMPOOL_SANITIZE STREQUAL "thread")
    set(quiet -Wno-array-bounds -Wno-stringop-overflow -Wno-restrict)
  endif()
  target_compile_options(streampool_gtest_pch PRIVATE ${quiet})
  foreach(dir IN LISTS ARGN)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      get_target_property(libraries ${target} LINK_LIBRARIES)
      if(type STREQUAL "EXECUTABLE" AND libraries MATCHES "GTest::")
        target_precompile_headers(${target} REUSE_FROM streampool_gtest_pch)
        target_compile_options(${target} PRIVATE ${quiet})
      endif()
    endforeach()
  endforeach()
endfunction()
