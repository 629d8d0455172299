# The process cap: the limit parser, the per-device counters, and pools over a backing charged to
# the cap (the engine over in-memory doubles, against an oracle of the pools' own statistics). The
# hooks' use of it over the fake driver is tests/interpose/hooks_caps_test.cpp.
add_executable(control_caps_tests
  ${CMAKE_CURRENT_SOURCE_DIR}/limit_spec_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/process_cap_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/capped_pools_test.cpp
  ${PROJECT_SOURCE_DIR}/src/interpose/hooks/control/capped_backing.cpp)
target_include_directories(control_caps_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/interpose/hooks)
target_link_libraries(control_caps_tests PRIVATE streampool_control streampool_core_doubles GTest::gtest_main)
streampool_warnings(control_caps_tests)
gtest_discover_tests(control_caps_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60 LABELS control)
