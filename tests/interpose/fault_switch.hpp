#pragma once
// The fake driver's failure switch, for the hooks' tests that make driver calls fail
// (src/fakedriver/fault_injection.cpp): looked up in the fake driver the test runs over.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "hooks_test_api.hpp"

namespace hooks_test {

// Calls nth .. nth+count-1 of `name`, counted from now, return `error` (count 0: every call).
inline void fail_calls(const char* name, unsigned long long nth, unsigned long long count, CUresult error) {
  using Fail = void (*)(const char*, unsigned long long, unsigned long long, int);
  auto fail = reinterpret_cast<Fail>(dlsym(fake_driver(), "streampool_fake_fail_calls"));
  ASSERT_NE(fail, nullptr);
  fail(name, nth, count, static_cast<int>(error));
}

inline void fail_call(const char* name, unsigned long long nth, CUresult error) { fail_calls(name, nth, 1, error); }

// The nth call of `name`, counted from now, first runs action(argument) on the thread that makes
// it, then runs as usual: another thread of the program acting at exactly that moment.
inline void on_call(const char* name, unsigned long long nth, void (*action)(void*), void* argument) {
  using OnCall = void (*)(const char*, unsigned long long, void (*)(void*), void*);
  auto on = reinterpret_cast<OnCall>(dlsym(fake_driver(), "streampool_fake_on_call"));
  ASSERT_NE(on, nullptr);
  on(name, nth, action, argument);
}

// The fake driver's delay before `entry_point` acts (src/fakedriver/entry_delay.hpp): a race window
// held open for as long as a test needs; 0 removes it.
inline void delay_before(const char* entry_point, unsigned microseconds) {
  auto set = reinterpret_cast<void (*)(const char*, unsigned)>(dlsym(fake_driver(), "streampool_fake_set_delay"));
  ASSERT_NE(set, nullptr);
  set(entry_point, microseconds);
}

inline void clear_failures() {
  using Clear = void (*)();
  if (auto clear = reinterpret_cast<Clear>(dlsym(fake_driver(), "streampool_fake_clear_failures"))) clear();
}

// How many calls of `name` the switch has failed.
inline unsigned long long injected(const char* name) {
  using Injected = unsigned long long (*)(const char*);
  auto count = reinterpret_cast<Injected>(dlsym(fake_driver(), "streampool_fake_failures_injected"));
  return count == nullptr ? 0 : count(name);
}

}  // namespace hooks_test
