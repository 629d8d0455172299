// What the public C interface (include/streampool/streampool.h, implemented once in
// public_api.cpp) needs from the library that exports it. libstreampool.so defines these in
// src/interpose/hooks/api_host.cpp; another library that serves the pool family (the CUDA runtime
// library) links the streampool_api object library and defines them over its own state.
#pragma once

#include <string>

#include "streampool/streampool.h"

namespace streampool::api {

// streampool serves this process's allocations (not STREAMPOOL_DISABLE).
bool host_active() noexcept;
// Fills the live pools' statistics into `pools` (at most `capacity`) and the sums and call counts
// into *totals (every field after struct_size; time_in_allocator_ns is filled by the caller).
// Returns the number of live pools. May throw (the caller catches).
int host_stats(streampool_stats* totals, streampool_pool_stats* pools, size_t capacity);
// One device's figures of the process cap (every field after struct_size and device); false for a
// device not seen.
bool host_limit_info(int device, streampool_device_limit* info) noexcept;
// The JSON report. May throw.
std::string host_stats_json();
// The last out-of-memory report as JSON, empty when no allocation failed. May throw.
std::string host_oom_report_json();
// The leak report (STREAMPOOL_LEAKS) as JSON. May throw.
std::string host_leak_report_json();

}  // namespace streampool::api
