// Failure injection, for tests that must show what a failing driver call leaves behind: the Nth
// call of a named entry point (its exact, versioned name) returns a chosen error instead of
// running. Every exported entry point asks through FAKE_ENTRY (api_guard.hpp) before its body.
//
// Set from the environment, read on the first call of any entry point (never at load):
//   STREAMPOOL_FAKE_FAIL="cuMemMap:3:CUDA_ERROR_OUT_OF_MEMORY,cuEventRecord:1:999:2"
// is a comma-separated list of name:nth:error[:count]: calls nth .. nth+count-1 of `name` fail
// with `error` (a CUresult name or number); count defaults to 1, and 0 means every call from the
// nth on. Or from a test, through the exported C functions (counting from the moment they are
// called):
//   streampool_fake_fail_call(name, nth, error)          the nth call from now fails, once
//   streampool_fake_fail_calls(name, nth, count, error)  calls nth .. nth+count-1 fail (0: all)
//   streampool_fake_clear_failures()                     forget every pending failure, zero the counts
//   streampool_fake_failures_injected(name)              failures returned since (name null: all)
//   streampool_fake_on_call(name, nth, action, argument) the nth call from now first runs
//                                                        action(argument) on its thread, then runs
//                                                        as usual (a test's stand-in for another
//                                                        thread of the program acting at that moment)
// With nothing pending, an entry point pays one relaxed atomic load.
#pragma once

#include <cuda.h>

#include <atomic>

namespace fake {

namespace detail {
// -1: STREAMPOOL_FAKE_FAIL not read yet; otherwise the number of rules still pending.
extern std::atomic<int> pending_failures;
CUresult injected_failure_slow(const char* entry_point) noexcept;
}  // namespace detail

// The error the call of `entry_point` being made now must return, or CUDA_SUCCESS to run it.
inline CUresult injected_failure(const char* entry_point) noexcept {
  if (detail::pending_failures.load(std::memory_order_relaxed) == 0) [[likely]] return CUDA_SUCCESS;
  return detail::injected_failure_slow(entry_point);
}

}  // namespace fake
