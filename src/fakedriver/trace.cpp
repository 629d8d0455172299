#include "trace.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fake {

namespace detail {
std::atomic<int> trace_state{-1};

bool trace_enabled_slow() noexcept {
  const char* setting = std::getenv("STREAMPOOL_FAKE_TRACE");
  const int state = setting != nullptr && setting[0] != '\0' && std::strcmp(setting, "0") != 0 ? 1 : 0;
  trace_state.store(state, std::memory_order_relaxed);
  return state != 0;
}
}  // namespace detail

namespace {
thread_local char pending_detail[192];
}  // namespace

void trace_detail(const char* format, ...) noexcept {
  va_list arguments;
  va_start(arguments, format);
  std::vsnprintf(pending_detail, sizeof pending_detail, format, arguments);
  va_end(arguments);
}

void trace_call(const char* entry_point, CUresult result) noexcept {
  if (!trace_enabled()) return;
  // One fprintf per line: stdio locks the stream, so lines of concurrent calls do not interleave.
  if (pending_detail[0] != '\0') {
    std::fprintf(stderr, "fakecuda: %s(%s) -> %d\n", entry_point, pending_detail, static_cast<int>(result));
    pending_detail[0] = '\0';
  } else {
    std::fprintf(stderr, "fakecuda: %s -> %d\n", entry_point, static_cast<int>(result));
  }
}

}  // namespace fake

// Called by the generated NOT_SUPPORTED stand-ins (C, gen_unsupported.py); not exported.
extern "C" __attribute__((visibility("hidden"))) void streampool_fake_trace_unsupported(const char* entry_point) {
  fake::trace_call(entry_point, CUDA_ERROR_NOT_SUPPORTED);
}
