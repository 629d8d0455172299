// The trace recorder: STREAMPOOL_TRACE=<path> (or streampool_trace_start) writes every allocator
// and ordering event of the process in the format of format.hpp.
//
// Cost. When off, a hook pays one relaxed load (active()). When on, an event costs one read of
// the CPU's time-stamp counter (two with STREAMPOOL_TIMING) and a 56-byte store into the calling
// thread's own buffer, inline in the hook, with no call, no lock and no atomic read-modify-write.
// A full buffer (1024 records) is handed to a writer thread (started with the trace, signals
// blocked, named streampool-trace), which converts and writes it while the program's thread goes
// on with a fresh one; written buffers come back to program threads oldest first, from a rotation
// of 64 (3.5 MiB), so that a thread never writes into lines the writer's core has just read. A
// thread writes its chunk itself when the writer is more than 128 chunks (7 MiB) behind, and in a
// forked child (no writer there). Ticks are turned into nanoseconds and records encoded compactly
// (format.hpp) at write time, from a calibration made when the trace starts.
//
// No loss: at exit (atexit), at thread exit, before a fork, and on flush()/stop() every buffer's
// records go to the file. A forked child writes its own file: the path with %p expanded to its
// process id, or, for a path without %p, the path with ".<pid>" appended. Records a thread adds
// while another thread stops the trace may be dropped (the trace ended).
//
// STREAMPOOL_TIMING=1 measures the time spent in each call (a second time-stamp read per event):
// timed_ns() and, in a trace, each record's duration_ns (0 without it). `streampool run` sets it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "format.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace streampool::trace {

namespace detail {
// -1: environment not read yet; else bits: 1 timing (STREAMPOOL_TIMING), 2 recording; 0 off.
inline constexpr int kUnread = -1;
inline constexpr int kRecordingOnly = 2;  // recording without timing: record()'s inline case
extern std::atomic<int> state;
bool start_from_environment() noexcept;
std::uint64_t monotonic_ns() noexcept;

// What record() reads of the calling thread's buffer (the recorder's ThreadBuffer begins with it):
// records [0, committed) of `records` are complete; only the owning thread writes these fields.
inline constexpr std::uint32_t kBufferCapacity = 1024;  // records per buffer (56 KiB)
struct HotBuffer {
  std::atomic<std::uint32_t> committed{0};
  std::uint32_t thread = 0;
  Record* records = nullptr;
};
extern constinit thread_local HotBuffer* hot_buffer __attribute__((tls_model("initial-exec")));

// Fills record `index` of the buffer and publishes it (the owning thread only).
inline void write_record(HotBuffer& buffer, std::uint32_t index, Op op, std::uint16_t flags, std::int32_t result,
                         std::uint64_t stream, std::uint64_t pool, std::uint64_t size, std::uint64_t address,
                         std::uint64_t start, std::uint32_t duration) noexcept {
  Record& entry = buffer.records[index];
  entry.time_ns = start;  // ticks until written
  entry.duration_ns = duration;
  entry.thread = buffer.thread;
  entry.op = static_cast<std::uint16_t>(op);
  entry.flags = flags;
  entry.result = result;
  entry.stream = stream;
  entry.pool = pool;
  entry.size = size;
  entry.address = address;
  buffer.committed.store(index + 1, std::memory_order_release);
}

// Every other case of record(): the thread's first event, a full buffer, timing.
void record_slow(Op op, std::uint16_t flags, std::int32_t result, std::uint64_t stream, std::uint64_t pool,
                 std::uint64_t size, std::uint64_t address, std::uint64_t start) noexcept;
}  // namespace detail

// Whether events are measured (timing or recording). The first call reads the environment.
inline bool active() noexcept {
  const int current = detail::state.load(std::memory_order_relaxed);
  if (current == 0) [[likely]] return false;
  if (current > 0) return true;
  return detail::start_from_environment();
}

// A timestamp in the recorder's own unit (TSC ticks on x86, nanoseconds elsewhere).
inline std::uint64_t now() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return detail::monotonic_ns();
#endif
}

// One event whose call began at `start` (from now()) and has just returned. Never throws.
// Inline for the common case, recording without timing into a buffer with room: a few stores into
// the thread's own buffer, no call (an event costs about as much as the allocation it records).
inline void record(Op op, std::uint16_t flags, std::int32_t result, std::uint64_t stream, std::uint64_t pool,
                   std::uint64_t size, std::uint64_t address, std::uint64_t start) noexcept {
  detail::HotBuffer* buffer = detail::hot_buffer;
  if (detail::state.load(std::memory_order_relaxed) == detail::kRecordingOnly && buffer != nullptr) [[likely]] {
    const std::uint32_t index = buffer->committed.load(std::memory_order_relaxed);
    if (index != detail::kBufferCapacity) [[likely]] {
      detail::write_record(*buffer, index, op, flags, result, stream, pool, size, address, start, 0);
      return;
    }
  }
  detail::record_slow(op, flags, result, stream, pool, size, address, start);
}

// Starts recording into `path` (%p: the process id, %%: a percent sign). 0 on success, else an
// errno value (EBUSY: a trace is already recording).
int start(std::string_view path) noexcept;
// Writes every thread's buffered records. 0 on success, else an errno value (ENOENT: no trace).
int flush() noexcept;
// Flushes and closes the trace. 0 on success, else an errno value (ENOENT: no trace).
int stop() noexcept;
// The file being written, "" when not recording.
std::string current_path();
// Nanoseconds measured inside the allocator's own calls so far (allocations, frees, pool calls; not
// ordering calls such as synchronisations), all threads together (0 when never active).
std::uint64_t timed_ns() noexcept;
// The allocator calls measured so far, all threads together.
std::uint64_t timed_calls() noexcept;

// %p and %% expanded.
std::string expand_path(std::string_view setting, long pid);
bool names_each_process(std::string_view setting);

}  // namespace streampool::trace
