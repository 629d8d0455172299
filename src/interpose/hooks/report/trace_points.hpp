// Where the hooks report their events: to the trace recorder (src/trace/recorder.hpp) and, at
// STREAMPOOL_LOG=debug, as one log line each. Each wrapper runs the hook's work as `call` and, only
// while a trace, STREAMPOOL_TIMING or debug logging is on, times it and reports one event. Off, a
// wrapper costs two relaxed loads. Streams are reported as the program named them.
#pragma once

#include <cstdint>

#include "driver/cuda_compat.hpp"
#include "driver/log.hpp"
#include "driver/settings.hpp"
#include "trace/recorder.hpp"

namespace streampool::interpose {

namespace trace_detail {
inline std::uint16_t variant(bool per_thread) noexcept { return per_thread ? trace::kPerThreadVariant : 0; }
inline std::uint64_t value_of(const void* handle) noexcept { return reinterpret_cast<std::uintptr_t>(handle); }
// The pool the calling thread's last successful allocation came from (set by alloc_hooks.cpp: one
// thread-local store, cheaper than looking the address up afterwards).
extern constinit thread_local std::uintptr_t served_pool __attribute__((tls_model("initial-exec")));
// The debug log's line for one event.
void log_event(trace::Op op, std::uint16_t flags, CUresult result, std::uint64_t stream, std::uint64_t pool,
               std::uint64_t size, std::uint64_t address) noexcept;
}  // namespace trace_detail

// Who wants the event, read once per call (each read is an atomic load the compiler keeps).
struct Observers {
  bool trace = trace::active();
  bool debug = log::enabled(log::Level::debug);

  bool any() const noexcept { return (trace || debug) && !driver::passthrough_requested(); }
  std::uint64_t start() const noexcept { return trace ? trace::now() : 0; }
  void report(trace::Op op, std::uint16_t flags, CUresult result, std::uint64_t stream, std::uint64_t pool,
              std::uint64_t size, std::uint64_t address, std::uint64_t start_time) const noexcept {
    if (trace) trace::record(op, flags, static_cast<std::int32_t>(result), stream, pool, size, address, start_time);
    if (debug) [[unlikely]] trace_detail::log_event(op, flags, result, stream, pool, size, address);
  }
};

inline bool tracing() noexcept { return Observers{}.any(); }

// Any event whose fields are known before the call.
template <class Call>
[[gnu::always_inline]] inline CUresult traced(trace::Op op, std::uint16_t flags, const void* stream, std::uint64_t pool,
                                              std::uint64_t size, std::uint64_t address, Call&& call) noexcept {
  const Observers observers;
  if (!observers.any()) [[likely]] return call();
  const std::uint64_t start = observers.start();
  const CUresult result = call();
  observers.report(op, flags, result, trace_detail::value_of(stream), pool, size, address, start);
  return result;
}

// An allocation: the address is known after the call, the pool (for cuMemAllocAsync) from
// served_pool.
template <class Call>
[[gnu::always_inline]] inline CUresult traced_alloc(trace::Op op, bool per_thread, CUdeviceptr* dptr, std::size_t bytes,
                                                    CUmemoryPool pool, CUstream stream, Call&& call) noexcept {
  const Observers observers;
  if (!observers.any()) [[likely]] return call();
  const std::uint64_t start = observers.start();
  trace_detail::served_pool = 0;
  const CUresult result = call();
  const std::uint64_t address = result == CUDA_SUCCESS && dptr != nullptr ? static_cast<std::uint64_t>(*dptr) : 0;
  const std::uint64_t served_by = pool != nullptr ? trace_detail::value_of(pool) : trace_detail::served_pool;
  observers.report(op, trace_detail::variant(per_thread), result, trace_detail::value_of(stream), served_by, bytes,
                       address, start);
  return result;
}

// A free (stream-ordered, or cuMemFree of a pool block): the address alone; readers find the
// block's pool and size from its allocation.
template <class Call>
[[gnu::always_inline]] inline CUresult traced_free(trace::Op op, bool per_thread, CUdeviceptr dptr, CUstream stream,
                                                   Call&& call) noexcept {
  const Observers observers;
  if (!observers.any()) [[likely]] return call();
  const std::uint64_t start = observers.start();
  const CUresult result = call();
  observers.report(op, trace_detail::variant(per_thread), result, trace_detail::value_of(stream), 0, 0,
                       static_cast<std::uint64_t>(dptr), start);
  return result;
}

// A creation: the new handle (a stream, or a pool when `is_pool`) is known after the call.
template <class Handle, class Call>
[[gnu::always_inline]] inline CUresult traced_create(trace::Op op, std::uint16_t flags, bool is_pool, Handle* created,
                                                     std::uint64_t size, std::uint64_t address, Call&& call) noexcept {
  const Observers observers;
  if (!observers.any()) [[likely]] return call();
  const std::uint64_t start = observers.start();
  const CUresult result = call();
  const std::uint64_t handle =
      result == CUDA_SUCCESS && created != nullptr ? trace_detail::value_of(static_cast<const void*>(*created)) : 0;
  observers.report(op, flags, result, is_pool ? 0 : handle, is_pool ? handle : 0, size, address, start);
  return result;
}

}  // namespace streampool::interpose
