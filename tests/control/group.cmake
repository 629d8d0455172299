# The group budget (src/control/group_budget.*): one process, several processes charging together,
# members killed with SIGKILL at random instants and at every named point of an update, region files
# that must be refused. No driver is involved.
add_executable(control_group_tests
  ${CMAKE_CURRENT_SOURCE_DIR}/group_budget_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/group_processes_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/group_sigkill_test.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/group_region_test.cpp)
target_link_libraries(control_group_tests PRIVATE streampool_control GTest::gtest_main Threads::Threads)
streampool_warnings(control_group_tests)
gtest_discover_tests(control_group_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60 LABELS control)
