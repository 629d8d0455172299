#include "oom_report.hpp"
#include "hooks/insight/leak_hooks.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "hooks/control/process_limit.hpp"
#include "driver/capture_tracker.hpp"
#include "driver/log.hpp"
#include "driver/stream_registry.hpp"
#include "insight/oom_report.hpp"
#include "hooks/process_state.hpp"
#include "trace/recorder.hpp"

namespace streampool::interpose {

namespace {

constexpr std::size_t kLargestLive = 5;

constinit thread_local int retry_depth __attribute__((tls_model("initial-exec"))) = 0;

// The stream as the program names it (the trace's convention): 0 the legacy default stream,
// CU_STREAM_PER_THREAD the per-thread one.
std::uint64_t program_stream(core::StreamKey key) noexcept {
  if (driver::is_legacy_key(key)) return 0;
  if (driver::is_per_thread_key(key)) return reinterpret_cast<std::uintptr_t>(CU_STREAM_PER_THREAD);
  return key;
}

// The stderr report: at STREAMPOOL_LOG=warn and above, and when STREAMPOOL_LOG is not set at all.
bool stderr_wanted() noexcept {
  const char* setting = std::getenv("STREAMPOOL_LOG");
  if (setting == nullptr || setting[0] == '\0') return true;
  return log::enabled(log::Level::warn);
}

// All of `text` in one write where it fits (a pipe takes up to PIPE_BUF at once): several
// threads' lines do not interleave with it.
void write_stderr(const char* text, std::size_t size) noexcept {
  const int saved_errno = errno;
  const char* cursor = text;
  std::size_t left = size;
  while (left > 0) {
    const ssize_t written = ::write(STDERR_FILENO, cursor, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) break;
    cursor += written;
    left -= static_cast<std::size_t>(written);
  }
  errno = saved_errno;
}

void count_line_at_exit() {
  ProcessState* current = existing_state();
  if (current == nullptr) return;
  const std::uint64_t failures = current->oom.failures.load(std::memory_order_acquire);
  if (failures < 2 || !stderr_wanted()) return;
  char line[160];
  std::snprintf(line, sizeof line, "streampool: %llu more out-of-memory failure%s, see streampool_oom_report\n",
                static_cast<unsigned long long>(failures - 1), failures == 2 ? "" : "s");
  write_stderr(line, std::strlen(line));
}

// Registered once per address space: a forked child inherits the handler, which reads the child's
// own state, so registering again there would write the line twice.
std::atomic<bool> exit_line_registered{false};

// Without is_default: the location pools' lock is taken before the pool table's when a pool is
// created, so it is not asked for inside a visit of the table (see gather).
insight::OomPool pool_figures(core::Engine& engine, core::Pool* pool) {
  insight::OomPool out;
  const core::PoolProps& props = engine.props(pool);
  const core::PoolStats stats = engine.stats(pool);
  const core::FreeFigures free = engine.free_figures(pool);
  out.handle = reinterpret_cast<std::uintptr_t>(pool);
  out.device = control_hooks::charged_device(props);
  out.reserved = stats.reserved_current;
  out.used = stats.used_current;
  out.free_bytes = free.free_bytes;
  out.largest_free = free.largest_free;
  for (const core::PendingFrees& pending : free.pending) {
    out.pending.push_back(insight::OomPendingStream{program_stream(pending.stream), pending.bytes,
                                                    pending.largest_range, pending.waits_for_tick,
                                                    pending.completed_tick, pending.stream_ended});
  }
  return out;
}

// The real driver's free and total memory of `device`, where asking is safe: no capture in
// progress anywhere (a global capture may not survive calls from other threads), and the calling
// thread's current context on that device (cuMemGetInfo answers for the current context).
bool driver_memory(int device, std::uint64_t* free_bytes, std::uint64_t* total_bytes) noexcept {
  if (device < 0 || driver::captures_possible()) return false;
  const driver::DriverTable& table = driver::real();
  if (table.cuCtxGetDevice == nullptr || table.cuMemGetInfo_v2 == nullptr) return false;
  CUdevice current = -1;
  if (table.cuCtxGetDevice(&current) != CUDA_SUCCESS || current != device) return false;
  std::size_t free_now = 0;
  std::size_t total = 0;
  if (table.cuMemGetInfo_v2(&free_now, &total) != CUDA_SUCCESS) return false;
  *free_bytes = free_now;
  *total_bytes = total;
  return true;
}

// `pool` null: a driver request on `driver_device` (gathered the same, with no failing pool).
insight::OomFigures gather(ProcessState& state, core::Pool* pool, int driver_device, std::size_t bytes, CUstream stream,
                           bool per_thread, std::uint64_t failures) {
  core::Engine& engine = state.engine;
  insight::OomFigures figures;
  figures.bytes = bytes;
  figures.pool = reinterpret_cast<std::uintptr_t>(pool);
  figures.stream = per_thread && stream == nullptr ? reinterpret_cast<std::uintptr_t>(CU_STREAM_PER_THREAD)
                                                   : reinterpret_cast<std::uintptr_t>(stream);
  figures.failures = failures;
  timespec now{};
  if (clock_gettime(CLOCK_MONOTONIC, &now) == 0) {
    figures.time_ns = static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(now.tv_nsec);
  }
  figures.driver_request = pool == nullptr;
  int charged_device = driver_device;
  figures.device = driver_device;
  if (pool != nullptr) {
    const core::PoolProps& props = engine.props(pool);
    figures.device = props.location_type == CU_MEM_LOCATION_TYPE_DEVICE ? props.location_id : -1;
    charged_device = control_hooks::charged_device(props);
  }
  if (control_hooks::DeviceFigures cap; charged_device >= 0 && control_hooks::device_figures(charged_device, &cap)) {
    figures.limit = cap.limit;
    figures.charged = cap.pools_bytes + cap.forwarded_bytes + cap.arrays_bytes + cap.graph_bytes;
    figures.forwarded = cap.forwarded_bytes + cap.arrays_bytes + cap.graph_bytes;
    figures.estimated_other = cap.estimated_other_bytes;
  }
  figures.driver_known = driver_memory(charged_device, &figures.driver_free, &figures.driver_total);
  if (pool != nullptr) figures.pools.push_back(pool_figures(engine, pool));
  // The device's other pools: what else holds its memory. In the visit: none is reclaimed under it.
  engine.for_each_pool([&](core::Pool* other) {
    if (other == pool) return;
    if (charged_device < 0 || control_hooks::charged_device(engine.props(other)) != charged_device) return;
    figures.pools.push_back(pool_figures(engine, other));
  });
  for (insight::OomPool& figured : figures.pools) {  // handles compared, never dereferenced
    const auto* handle = reinterpret_cast<const core::Pool*>(figured.handle);
    figured.is_default = state.pools.is_default(handle) || state.location_pools.is_default(handle);
  }
  for (const core::BlockInfo& block : engine.largest_live(nullptr, kLargestLive)) {
    // Call sites where they are recorded (STREAMPOOL_LEAKS=1), else none.
    figures.largest_live.push_back(insight::OomLiveBlock{block.base, block.requested_bytes,
                                                         reinterpret_cast<std::uintptr_t>(block.pool),
                                                         insight_hooks::call_site_of(block.base)});
  }
  return figures;
}

// What the device could still give this process, as PyTorch's snapshot calls it: the driver's
// free memory, within the cap's headroom where a cap is set (0 when neither is known).
std::uint64_t device_free(const insight::OomFigures& figures) noexcept {
  std::uint64_t free_bytes = figures.driver_known ? figures.driver_free : UINT64_MAX;
  if (figures.limit != insight::kNoLimit) {
    const std::uint64_t room = figures.limit > figures.charged ? figures.limit - figures.charged : 0;
    if (room < free_bytes) free_bytes = room;
  }
  return free_bytes == UINT64_MAX ? 0 : free_bytes;
}

// The trace numbers the causes from 1, in the insight layer's order.
std::uint16_t trace_cause(insight::OomCause cause) noexcept {
  return static_cast<std::uint16_t>(static_cast<int>(cause) + 1);
}
static_assert(static_cast<int>(insight::OomCause::pending_frees) + 1 == static_cast<int>(trace::OomCause::pending_frees));
static_assert(static_cast<int>(insight::OomCause::pool_limit) + 1 == static_cast<int>(trace::OomCause::pool_limit));

void report(ProcessState& state, core::Pool* pool, int driver_device, std::size_t bytes, CUstream stream,
            bool per_thread) noexcept {
  OomReports& reports = state.oom;
  const std::uint64_t failures = reports.failures.fetch_add(1, std::memory_order_acq_rel) + 1;
  try {
    const insight::OomFigures figures = gather(state, pool, driver_device, bytes, stream, per_thread, failures);
    const insight::OomExplanation explanation = insight::explain_oom(figures);
    std::string json = insight::oom_json(figures, explanation);
    {
      std::lock_guard lock(reports.mutex);
      reports.last_json.swap(json);
    }
    if (trace::active()) {
      trace::record(trace::Op::out_of_memory, trace_cause(explanation.cause),
                    static_cast<std::int32_t>(CUDA_ERROR_OUT_OF_MEMORY), figures.stream, figures.pool, bytes,
                    device_free(figures), trace::now());
    }
    if (failures == 1) {
      bool expected = false;
      if (exit_line_registered.compare_exchange_strong(expected, true)) std::atexit(&count_line_at_exit);
      if (stderr_wanted()) {
        const std::string text = insight::oom_text(figures, explanation);
        write_stderr(text.data(), text.size());
      }
    }
  } catch (...) {
    // Out of host memory as well: the count stands, the report is the previous one.
  }
}

}  // namespace

void report_out_of_memory(core::Pool* pool, std::size_t bytes, CUstream stream, bool per_thread) noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr || retry_depth > 0 || !current->engine.is_pool(pool)) return;
  report(*current, pool, -1, bytes, stream, per_thread);
}

void report_driver_out_of_memory(int device, std::size_t bytes) noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr || retry_depth > 0) return;
  report(*current, nullptr, device, bytes, nullptr, false);
}

OomRetryScope::OomRetryScope() noexcept { ++retry_depth; }
OomRetryScope::~OomRetryScope() { --retry_depth; }

std::string last_oom_report_json() {
  ProcessState* current = existing_state();
  if (current == nullptr) return {};
  std::lock_guard lock(current->oom.mutex);
  return current->oom.last_json;
}

std::uint64_t oom_failures() noexcept {
  ProcessState* current = existing_state();
  return current == nullptr ? 0 : current->oom.failures.load(std::memory_order_acquire);
}

}  // namespace streampool::interpose
