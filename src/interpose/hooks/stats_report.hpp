// streampool's report: per pool statistics (the four of CUDA, plus kind, location and release
// threshold), totals, and how often each hooked entry point was called.
//
// STREAMPOOL_STATS=<path> writes it as JSON at exit (the atexit handler is registered on the first
// hook call, after the real driver was loaded, so it runs before the driver's own teardown).
// streampool_stats_json() (exported, C) writes the same report into a caller's buffer.
#pragma once

#include <string>

namespace streampool::interpose {

std::string stats_json();
void register_stats_report_at_exit() noexcept;

}  // namespace streampool::interpose

// Writes the report, NUL-terminated and truncated to `size` bytes, into `buffer` (which may be null
// when size is 0). Returns the report's length in bytes without the NUL, as snprintf does, so a
// return value >= size means the buffer was too small; -1 on failure.
extern "C" __attribute__((visibility("default"))) int streampool_stats_json(char* buffer, size_t size);
