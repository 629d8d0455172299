// STREAMPOOL_RELEASE: `auto` asks for the self-tuning release policy, `threshold` or nothing for
// CUDA's rule; anything else is one line on stderr and CUDA's rule. Read once per process, so
// each case runs in a forked child (EXPECT_EXIT) that sets it before the first read.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "log.hpp"
#include "settings.hpp"

namespace {

[[noreturn]] void read_release_with(const char* setting) {
  unsetenv("STREAMPOOL_LOG");
  streampool::log::reload_for_tests();
  if (setting != nullptr) {
    setenv("STREAMPOOL_RELEASE", setting, 1);
  } else {
    unsetenv("STREAMPOOL_RELEASE");
  }
  const bool first = streampool::driver::auto_release_requested();
  const bool second = streampool::driver::auto_release_requested();
  std::_Exit(first == second ? (first ? 1 : 0) : 2);
}

TEST(ReleaseSetting, AutoAsksForTheSelfTuningPolicySilently) {
  EXPECT_EXIT(read_release_with("auto"), ::testing::ExitedWithCode(1), "^$");
}

TEST(ReleaseSetting, ThresholdAndUnsetKeepCudasRuleSilently) {
  EXPECT_EXIT(read_release_with("threshold"), ::testing::ExitedWithCode(0), "^$");
  EXPECT_EXIT(read_release_with(nullptr), ::testing::ExitedWithCode(0), "^$");
}

TEST(ReleaseSetting, AnUnknownValueIsOneLineOnStderrAndCudasRule) {
  EXPECT_EXIT(read_release_with("sometimes"), ::testing::ExitedWithCode(0),
              "^streampool: warn: unknown STREAMPOOL_RELEASE value 'sometimes' \\(expected auto or threshold\\): "
              "using threshold\n$");
}

}  // namespace
