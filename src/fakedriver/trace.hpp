// A trace of the driver calls a program makes, for finding out what a runtime (NVIDIA's cudart,
// statically or dynamically linked, or streampool's) asks of the driver and which answer stops it.
// Off unless the environment asks, read on the first traced call (never at load):
//   STREAMPOOL_FAKE_TRACE=1   one line per entry point call on stderr: "fakecuda: <name> -> <CUresult>"
// cuGetProcAddress adds the name asked for, the version and the flags, cuGetExportTable the table's
// UUID (and its name where a public description names it), and
// the NOT_SUPPORTED stand-ins (gen_unsupported.py) report themselves too.
// Disabled, a call pays one relaxed atomic load.
#pragma once

#include <cuda.h>

#include <atomic>

namespace fake {

namespace detail {
// -1: STREAMPOOL_FAKE_TRACE not read yet; 0: off; 1: on.
extern std::atomic<int> trace_state;
bool trace_enabled_slow() noexcept;
}  // namespace detail

inline bool trace_enabled() noexcept {
  const int state = detail::trace_state.load(std::memory_order_relaxed);
  if (state >= 0) [[likely]] return state != 0;
  return detail::trace_enabled_slow();
}

// Writes "fakecuda: <entry_point> -> <result>", with the detail the call left (trace_detail), if
// any, in parentheses after the name. FAKE_ENTRY calls it once per entry point call.
void trace_call(const char* entry_point, CUresult result) noexcept;

// What the entry point being served on this thread asked for (a symbol, a UUID ...), printf-style;
// call it only when trace_enabled(). The next trace_call of this thread prints and forgets it.
void trace_detail(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace fake
