#include "stats_report.hpp"
#include "insight/json_text.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "hooks/call_counters.hpp"
#include "driver/capture_tracker.hpp"
#include "driver/log.hpp"
#include "hooks/process_state.hpp"
#include "hooks/report/oom_report.hpp"
#include "driver/real_library.hpp"
#include "trace/files.hpp"
#include "trace/recorder.hpp"

namespace streampool::interpose {

namespace {

const char* kind_name(core::PoolKind kind) {
  switch (kind) {
    case core::PoolKind::device:
      return "device";
    case core::PoolKind::pinned_host:
      return "pinned_host";
    case core::PoolKind::managed:
      return "managed";
  }
  return "unknown";
}


void append_field(std::string& out, const char* name, std::uint64_t value, bool comma = true) {
  char text[96];
  std::snprintf(text, sizeof text, "\"%s\":%" PRIu64 "%s", name, value, comma ? "," : "");
  out += text;
}

void append_pool(std::string& out, core::Engine& engine, PoolDirectory& directory, core::Pool* pool) {
  const core::PoolProps& props = engine.props(pool);
  core::PoolStats stats = engine.stats(pool);
  std::uint64_t threshold = 0;
  engine.get_attribute(pool, core::PoolAttribute::release_threshold, &threshold);
  char head[160];
  std::snprintf(head, sizeof head, "{\"handle\":\"%p\",\"kind\":\"%s\",\"default\":%s,",
                static_cast<void*>(pool), kind_name(props.kind), directory.is_default(pool) ? "true" : "false");
  out += head;
  append_field(out, "allocation_type", static_cast<std::uint64_t>(props.allocation_type));
  append_field(out, "location_type", static_cast<std::uint64_t>(props.location_type));
  char location_id[48];
  std::snprintf(location_id, sizeof location_id, "\"location_id\":%d,", props.location_id);
  out += location_id;
  append_field(out, "max_size", props.max_size);
  append_field(out, "release_threshold", threshold);
  append_field(out, "reserved_current", stats.reserved_current);
  append_field(out, "reserved_high", stats.reserved_high);
  append_field(out, "used_current", stats.used_current);
  append_field(out, "used_high", stats.used_high, false);
  out += '}';
}

// Each device's share of the process cap (STREAMPOOL_LIMIT): the limit (null: none), what it
// applies to and what holds it. estimated_uncounted is an estimate, named so in the report.
void append_devices(std::string& out) {
  bool first = true;
  const int devices = control_hooks::reported_devices();
  for (int device = 0; device < devices; ++device) {
    control_hooks::DeviceFigures figures;
    if (!control_hooks::device_figures(device, &figures)) continue;
    if (!first) out += ',';
    first = false;
    char head[64];
    std::snprintf(head, sizeof head, "{\"device\":%d,\"limit\":", device);
    out += head;
    out += figures.limit == streampool::control::kNoLimit ? "null" : std::to_string(figures.limit);
    out += ',';
    append_field(out, "charged", figures.pools_bytes + figures.forwarded_bytes + figures.arrays_bytes + figures.graph_bytes);
    append_field(out, "peak", figures.peak_bytes);
    append_field(out, "pools_in_use", figures.in_use_bytes);
    append_field(out, "pools_cached", figures.cached_bytes);
    append_field(out, "forwarded", figures.forwarded_bytes);
    append_field(out, "estimated_uncounted", figures.estimated_other_bytes);
    append_field(out, "served_malloc", figures.served_malloc_bytes);
    append_field(out, "arrays", figures.arrays_bytes);
    append_field(out, "graph", figures.graph_bytes, false);
    out += '}';
  }
}

// Writes all of `text` to `path` (created or truncated; a regular file only, opened without
// blocking: a FIFO with no reader must not hold the program at exit). False with *why set when
// any step fails, the final close included: a full disk often shows only there.
bool write_file(const std::string& path, const std::string& text, const char** why) {
  const int fd = trace::open_output_file(path.c_str(), false, why);
  if (fd < 0) return false;
  const char* cursor = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, cursor, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      *why = std::strerror(written < 0 ? errno : ENOSPC);
      ::close(fd);
      return false;
    }
    cursor += written;
    left -= static_cast<std::size_t>(written);
  }
  if (::close(fd) != 0) {
    *why = std::strerror(errno);
    return false;
  }
  return true;
}

std::atomic<bool> report_registered{false};
std::atomic<pid_t> report_owner{0};  // the process that registered the report

void write_report_at_exit() {
  const char* setting = std::getenv("STREAMPOOL_STATS");
  if (setting == nullptr || setting[0] == '\0') return;
  try {
    const pid_t self = getpid();
    if (self != report_owner.load(std::memory_order_relaxed) && !trace::names_each_process(setting)) {
      // A child forked after the report was registered inherited the handler: the path names the
      // parent's report, which the child must not overwrite.
      STREAMPOOL_LOG_INFO("forked child %d leaves the STREAMPOOL_STATS report to its parent (use %%p in the path "
                          "for one report per process)",
                          static_cast<int>(self));
      return;
    }
    const std::string path = trace::expand_path(setting, self);
    const std::string report = stats_json() + '\n';
    // A report asked for and not written is said at any log level but off; the exit status stays.
    if (const char* why = ""; !write_file(path, report, &why)) {
      log::notice(log::Level::warn, "cannot write the STREAMPOOL_STATS report to %s: %s", path.c_str(), why);
    }
  } catch (...) {
    log::notice(log::Level::warn, "cannot write the STREAMPOOL_STATS report to %s: out of memory", setting);
  }
}

}  // namespace

std::string stats_json() {
  std::string out;
  out.reserve(4096);
  out += "{\"streampool\":{\"version\":\"0.1.0\",\"disabled\":";
  out += driver::passthrough_requested() ? "true" : "false";
  out += ",\"real_driver\":\"";
  if (const driver::RealLibrary* library = driver::real_library(); library != nullptr) {
    insight::append_json_escaped(out, library->path);
  }
  out += "\",";
  append_field(out, "captures_in_progress", static_cast<std::uint64_t>(driver::captures_in_progress()), false);
  out += "},\"pools\":[";
  core::PoolStats totals;
  if (ProcessState* current = existing_state(); current != nullptr) {
    HookScope scope;
    // In the visit: a pool destroyed meanwhile on another thread is not reclaimed under it.
    bool first = true;
    current->engine.for_each_pool([&](core::Pool* pool) {
      if (!first) out += ',';
      first = false;
      append_pool(out, current->engine, current->pools, pool);
      core::PoolStats stats = current->engine.stats(pool);
      totals.reserved_current += stats.reserved_current;
      totals.reserved_high += stats.reserved_high;
      totals.used_current += stats.used_current;
      totals.used_high += stats.used_high;
    });
  }
  out += "],\"totals\":{";
  append_field(out, "reserved_current", totals.reserved_current);
  append_field(out, "reserved_high", totals.reserved_high);
  append_field(out, "used_current", totals.used_current);
  append_field(out, "used_high", totals.used_high, false);
  out += "},\"devices\":[";
  append_devices(out);
  out += "],\"calls\":{";
  std::array<std::uint64_t, kHookCount> calls = call_totals();
  bool first = true;
  for (unsigned i = 0; i < kHookCount; ++i) {
    if (calls[i] == 0) continue;
    if (!first) out += ',';
    first = false;
    out += '"';
    out += hook_name(static_cast<Hook>(i));
    out += "\":";
    out += std::to_string(calls[i]);
  }
  // What the allocator served, and the time it took (measured with STREAMPOOL_TIMING=1).
  out += "},\"served\":{";
  const auto sum = [&calls](std::initializer_list<Hook> hooks) {
    std::uint64_t total = 0;
    for (Hook hook : hooks) total += calls[static_cast<unsigned>(hook)];
    return total;
  };
  append_field(out, "allocations", sum({Hook::cuMemAllocAsync, Hook::cuMemAllocAsync_ptsz, Hook::cuMemAllocFromPoolAsync,
                                        Hook::cuMemAllocFromPoolAsync_ptsz}));
  append_field(out, "frees", sum({Hook::cuMemFreeAsync, Hook::cuMemFreeAsync_ptsz}));
  append_field(out, "out_of_memory", oom_failures());  // allocations that failed (streampool_oom_report)
  append_field(out, "timed_calls", trace::timed_calls());
  append_field(out, "time_in_allocator_ns", trace::timed_ns());
  out += "\"trace\":\"";
  insight::append_json_escaped(out, trace::current_path());
  out += "\"}}";
  return out;
}


void register_stats_report_at_exit() noexcept {
  const char* path = std::getenv("STREAMPOOL_STATS");
  if (path == nullptr || path[0] == '\0') return;
  bool expected = false;
  if (report_registered.compare_exchange_strong(expected, true)) {
    report_owner.store(getpid(), std::memory_order_relaxed);
    std::atexit(&write_report_at_exit);
  }
}

}  // namespace streampool::interpose
