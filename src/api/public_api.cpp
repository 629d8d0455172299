// The public C interface (include/streampool/streampool.h): one definition for every library that
// exports it. Nothing here throws across the C ABI.
#include <cerrno>
#include <cstring>
#include <exception>

#include "api_host.hpp"
#include "trace/recorder.hpp"

#ifndef STREAMPOOL_VERSION_STRING_BUILT
#error "STREAMPOOL_VERSION_STRING_BUILT must be defined by the build"
#endif

#define STREAMPOOL_API_EXPORT extern "C" __attribute__((visibility("default")))

STREAMPOOL_API_EXPORT const char* streampool_version(void) { return STREAMPOOL_VERSION_STRING_BUILT; }

STREAMPOOL_API_EXPORT int streampool_active(void) { return streampool::api::host_active() ? 1 : 0; }

STREAMPOOL_API_EXPORT int streampool_get_stats(streampool_stats* totals, streampool_pool_stats* pools,
                                               size_t capacity) {
  // The offset just past a field: how much of the struct the caller's header knows.
  constexpr std::size_t kFirstFields = offsetof(streampool_stats, reserved_current);
  if (totals != nullptr && totals->struct_size < kFirstFields) return -1;
  if (pools == nullptr) capacity = 0;
  try {
    streampool_stats full{};
    full.struct_size = sizeof full;
    const int count = streampool::api::host_stats(&full, pools, capacity);
    // Time is measured by the trace recorder, whichever library records.
    full.time_in_allocator_ns = streampool::trace::timed_ns();
    full.timed_calls = streampool::trace::timed_calls();
    if (totals != nullptr) {
      const std::size_t known = totals->struct_size < sizeof full ? totals->struct_size : sizeof full;
      const std::uint32_t caller_size = totals->struct_size;
      std::memcpy(totals, &full, known);
      totals->struct_size = caller_size;
    }
    return count;
  } catch (...) {
    return -1;
  }
}

namespace {

// snprintf's contract: as much as fits, NUL-terminated; the whole length returned.
int copy_report(const std::string& report, char* buffer, size_t size) noexcept {
  if (buffer != nullptr && size > 0) {
    const std::size_t copied = report.size() < size - 1 ? report.size() : size - 1;
    std::memcpy(buffer, report.data(), copied);
    buffer[copied] = '\0';
  }
  return static_cast<int>(report.size());
}

}  // namespace

STREAMPOOL_API_EXPORT int streampool_leak_report(char* buffer, size_t size) {
  try {
    return copy_report(streampool::api::host_leak_report_json(), buffer, size);
  } catch (...) {
    return -1;
  }
}

STREAMPOOL_API_EXPORT int streampool_stats_json(char* buffer, size_t size) {
  try {
    return copy_report(streampool::api::host_stats_json(), buffer, size);
  } catch (...) {
    return -1;
  }
}

STREAMPOOL_API_EXPORT int streampool_oom_report(char* buffer, size_t size) {
  try {
    return copy_report(streampool::api::host_oom_report_json(), buffer, size);
  } catch (...) {
    return -1;
  }
}

STREAMPOOL_API_EXPORT int streampool_limit_info(int device, streampool_device_limit* info) {
  if (info == nullptr || info->struct_size < offsetof(streampool_device_limit, charged)) return -1;
  streampool_device_limit full{};
  full.struct_size = sizeof full;
  full.device = device;
  if (!streampool::api::host_limit_info(device, &full)) return -1;
  const std::uint32_t caller_size = info->struct_size;
  std::memcpy(info, &full, caller_size < sizeof full ? caller_size : sizeof full);
  info->struct_size = caller_size;
  return 0;
}

STREAMPOOL_API_EXPORT int streampool_trace_start(const char* path) {
  if (path == nullptr || path[0] == '\0') return EINVAL;
  return streampool::trace::start(path);
}

STREAMPOOL_API_EXPORT int streampool_trace_flush(void) { return streampool::trace::flush(); }

STREAMPOOL_API_EXPORT int streampool_trace_stop(void) { return streampool::trace::stop(); }
