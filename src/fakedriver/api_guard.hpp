// Every exported entry point runs its body through guarded(): no C++ exception may cross the C ABI,
// so an allocation failure becomes CUDA_ERROR_OUT_OF_MEMORY and anything else CUDA_ERROR_UNKNOWN.
#pragma once

#include <cuda.h>

#include <new>

#include "call_counters.hpp"
#include "entry_delay.hpp"
#include "fault_injection.hpp"
#include "trace.hpp"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace fake {

template <class Body>
CUresult guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace fake

// Counts the call, answers an injected failure if a test asked for one (fault_injection.hpp), else
// runs `impl_call` (an expression returning CUresult) under guarded(), between the entry point's
// test delays (entry_delay.hpp); the answer goes to the trace when one is asked for (trace.hpp).
#define FAKE_ENTRY(impl_call)                                                                       \
  FAKE_COUNT_CALL();                                                                                \
  if (const CUresult fake_injected_ = ::fake::injected_failure(__func__); fake_injected_ != CUDA_SUCCESS) { \
    if (::fake::trace_enabled()) ::fake::trace_call(__func__, fake_injected_);                      \
    return fake_injected_;                                                                          \
  }                                                                                                 \
  FAKE_DELAY_SCOPE();                                                                               \
  const CUresult fake_result_ = ::fake::guarded([&]() -> CUresult { return impl_call; });           \
  if (::fake::trace_enabled()) ::fake::trace_call(__func__, fake_result_);                          \
  return fake_result_
