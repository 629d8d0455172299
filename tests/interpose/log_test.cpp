// STREAMPOOL_LOG: silent unless asked; one "streampool:"-prefixed line per event when asked.
// Each case runs in a forked child (EXPECT_EXIT) whose stderr gtest matches.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "log.hpp"

namespace {

namespace log = streampool::log;

[[noreturn]] void log_each_level_with(const char* setting) {
  if (setting != nullptr) {
    setenv("STREAMPOOL_LOG", setting, 1);
  } else {
    unsetenv("STREAMPOOL_LOG");
  }
  log::reload_for_tests();
  STREAMPOOL_LOG_ERROR("e%d", 1);
  STREAMPOOL_LOG_WARN("w%d", 2);
  STREAMPOOL_LOG_INFO("i%d", 3);
  STREAMPOOL_LOG_DEBUG("d%d", 4);
  std::_Exit(0);
}

TEST(Log, UnsetWritesNothing) { EXPECT_EXIT(log_each_level_with(nullptr), ::testing::ExitedWithCode(0), "^$"); }

TEST(Log, ZeroWritesNothing) { EXPECT_EXIT(log_each_level_with("0"), ::testing::ExitedWithCode(0), "^$"); }

TEST(Log, WarnWritesErrorsAndWarningsOnePrefixedLineEach) {
  EXPECT_EXIT(log_each_level_with("warn"), ::testing::ExitedWithCode(0),
              "^streampool: error: e1\nstreampool: warn: w2\n$");
}

TEST(Log, NumericLevelFourWritesEverything) {
  EXPECT_EXIT(log_each_level_with("4"), ::testing::ExitedWithCode(0),
              "^streampool: error: e1\nstreampool: warn: w2\nstreampool: info: i3\nstreampool: debug: d4\n$");
}

TEST(Log, UnknownValueIsWarnedAboutAndLogsErrors) {
  EXPECT_EXIT(log_each_level_with("verbose"), ::testing::ExitedWithCode(0),
              "^streampool: warn: unknown STREAMPOOL_LOG value 'verbose' \\(expected off, error, warn, info, debug "
              "or 0-4\\): logging errors only\nstreampool: error: e1\n$");
}

TEST(Log, DisabledLevelDoesNotEvaluateArguments) {
  unsetenv("STREAMPOOL_LOG");
  log::reload_for_tests();
  int evaluations = 0;
  STREAMPOOL_LOG_DEBUG("%d", ++evaluations);
  EXPECT_EQ(evaluations, 0);
  EXPECT_FALSE(log::enabled(log::Level::error));
}

}  // namespace
