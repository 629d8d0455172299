// Graph capture in progress, as cheaply as possible, and streampool's own calls kept out of it.
//
// Allocations and frees on a capturing stream must reach the real driver unchanged (they become
// graph memory nodes), and streampool's own markers must never be recorded into a capture. Asking
// the driver (cuStreamIsCapturing) on every allocation would cost a driver call on the hot path, so
// the capture hooks keep a process-wide count of captures begun and not yet ended, and the driver
// is only asked while that count is non-zero: a relaxed load otherwise.
//
// A capture may begin on any thread at any moment, also between streampool's "is it capturing?"
// and its record. So every operation of streampool's on a marker (record, query, wait) and every
// stream-status query it makes runs as a CaptureFence: it announces itself in flight (seq_cst) and
// then reads whether a begin is unsettled; a begin hook announces itself (the count of captures in
// progress raised, and a begin unsettled) before the real call, then waits until no fence is in
// flight, and settles after the real call returned (the count lowered again if it failed). Either
// the fence sees the begin and refuses, or the begin waits for the fence: no capture starts while
// a fence that saw none works, so its answer from the driver stays true until it ends. A fence
// that sees an unsettled begin backs out at once, and one only enters after a first look found no
// begin unsettled, so a begin waits at most for the fences already past that look (no starvation).
// The count of captures in progress is lowered only after a capture really ended.
//
// A library that serves allocations without seeing the program's capture calls (the pluggable
// allocator, src/pluggable) declares captures unseen: the count then never drops below one, so every
// allocation, free and marker operation asks the driver about its stream, and marker queries run in
// the relaxed capture mode of their thread (see EventOrdering::query).
#pragma once

#include <atomic>
#include <cstdint>

#include "cuda_compat.hpp"

namespace streampool::driver {

namespace detail {
extern std::atomic<long> captures_in_progress;
extern std::atomic<long> begins_unsettled;
// Fences in flight, sharded by thread so that fences on many threads share no cache line; a begin
// waits for every shard.
inline constexpr unsigned kFenceShards = 16;
struct alignas(64) FenceShard {
  std::atomic<long> in_flight{0};
};
extern FenceShard fence_shards[kFenceShards];
}  // namespace detail

inline bool captures_possible() noexcept {
  return detail::captures_in_progress.load(std::memory_order_relaxed) != 0;
}
// The begin hooks: announce before the real call (returns once no fence is in flight), settle
// after it returned, with whether the capture began.
void capture_begin_announce() noexcept;
void capture_begin_settle(bool began, CUstream stream, bool per_thread_variant) noexcept;
// The end hooks, once the capture really ended (never goes below zero).
void capture_ended(CUstream stream, bool per_thread_variant) noexcept;
// A child after fork: no capture of the parent's goes on there (captures unseen stay assumed).
void forget_captures() noexcept;
// Captures may begin and end where streampool cannot see them, from now on, for good.
void assume_unseen_captures() noexcept;
bool captures_unseen() noexcept;

// Diagnostics (STREAMPOOL_LOG=debug): with captures in progress, asks the driver about each
// capturing stream and logs, once per capture, the hook after which it became invalidated, so a
// capture that streampool breaks names the step that broke it. Nothing otherwise.
void check_captures_after(const char* hook) noexcept;
long captures_in_progress() noexcept;

// *capturing = whether the stream is capturing (active or invalidated). Without any capture in
// progress this is false at no cost. A driver error is returned as is. Outside a CaptureFence the
// answer may be stale by the time it is used (a capture may begin on another thread).
CUresult stream_capturing(CUstream stream, bool per_thread_variant, bool* capturing) noexcept;

// One operation of streampool's on a marker, or a query of a stream's status, while no capture can
// begin (see the top of this file). Short-lived: a begin on another thread waits for it.
class CaptureFence {
 public:
  CaptureFence() noexcept;
  ~CaptureFence();
  CaptureFence(const CaptureFence&) = delete;
  CaptureFence& operator=(const CaptureFence&) = delete;

  // False while a capture is beginning somewhere: the operation must refuse (a record or a wait:
  // not supported; a query: not ready).
  bool admitted() const noexcept { return shard_ != nullptr; }
  // Whether `stream` is, or may be, capturing: true when not admitted, the driver's answer while
  // captures are in progress (true on an error), false otherwise at no cost.
  bool stream_may_capture(CUstream stream, bool per_thread_variant) const noexcept;
  // Whether any capture may be in progress (or beginning): a query must not reach the driver then,
  // since any cuEventQuery invalidates a global-mode capture.
  bool any_capture() const noexcept;

 private:
  detail::FenceShard* shard_ = nullptr;
};

}  // namespace streampool::driver
