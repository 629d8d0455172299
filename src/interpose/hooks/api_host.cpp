// The public C interface's view of libstreampool.so (src/api/api_host.hpp): the one process state
// of the hooks and their call counters.
#include "insight/leak_hooks.hpp"
#include "api/api_host.hpp"

#include "call_counters.hpp"
#include "process_state.hpp"
#include "report/oom_report.hpp"
#include "report/stats_report.hpp"

namespace streampool::api {

bool host_active() noexcept { return !driver::passthrough_requested(); }

int host_stats(streampool_stats* totals, streampool_pool_stats* pools, size_t capacity) {
  using interpose::Hook;
  int count = 0;
  if (interpose::ProcessState* current = interpose::existing_state(); current != nullptr) {
    interpose::HookScope scope;
    current->engine.for_each_pool([&](core::Pool* pool) {
      const core::PoolStats stats = current->engine.stats(pool);
      totals->reserved_current += stats.reserved_current;
      totals->reserved_high += stats.reserved_high;
      totals->used_current += stats.used_current;
      totals->used_high += stats.used_high;
      if (static_cast<std::size_t>(count) < capacity) {
        const core::PoolProps& props = current->engine.props(pool);
        streampool_pool_stats& entry = pools[count];
        entry = streampool_pool_stats{};
        entry.handle = reinterpret_cast<std::uintptr_t>(pool);
        entry.kind = static_cast<std::int32_t>(props.kind);
        entry.location_type = props.location_type;
        entry.location_id = props.location_id;
        entry.is_default = current->pools.is_default(pool) ? 1 : 0;
        current->engine.get_attribute(pool, core::PoolAttribute::release_threshold, &entry.release_threshold);
        entry.reserved_current = stats.reserved_current;
        entry.reserved_high = stats.reserved_high;
        entry.used_current = stats.used_current;
        entry.used_high = stats.used_high;
      }
      ++count;
    });
  }
  const std::array<std::uint64_t, interpose::kHookCount> calls = interpose::call_totals();
  const auto at = [&calls](Hook hook) { return calls[static_cast<unsigned>(hook)]; };
  totals->pool_count = static_cast<std::uint32_t>(count);
  totals->allocation_calls = at(Hook::cuMemAllocAsync) + at(Hook::cuMemAllocAsync_ptsz) +
                             at(Hook::cuMemAllocFromPoolAsync) + at(Hook::cuMemAllocFromPoolAsync_ptsz);
  totals->free_calls = at(Hook::cuMemFreeAsync) + at(Hook::cuMemFreeAsync_ptsz);
  return count;
}

bool host_limit_info(int device, streampool_device_limit* info) noexcept {
  interpose::control_hooks::DeviceFigures figures;
  if (!interpose::control_hooks::device_figures(device, &figures)) return false;
  info->limit = figures.limit;
  info->charged = figures.pools_bytes + figures.forwarded_bytes + figures.arrays_bytes + figures.graph_bytes;
  info->pools_in_use = figures.in_use_bytes;
  info->pools_cached = figures.cached_bytes;
  info->forwarded = figures.forwarded_bytes;
  info->peak = figures.peak_bytes;
  info->estimated_uncounted = figures.estimated_other_bytes;
  info->served_malloc = figures.served_malloc_bytes;
  info->arrays = figures.arrays_bytes;
  info->graph = figures.graph_bytes;
  return true;
}

std::string host_stats_json() { return interpose::stats_json(); }

std::string host_oom_report_json() { return interpose::last_oom_report_json(); }
std::string host_leak_report_json() { return interpose::insight_hooks::leak_report_json(); }

}  // namespace streampool::api
