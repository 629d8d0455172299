// HappensBefore: what the host knows about the order of work on its streams.
//
// Every stream has a tick. A free is tagged with its stream's tick at the moment of the call,
// and any act that "cuts" the stream (an event record, a sync ticket, a marker) takes the
// current tick and advances it, so that the cut covers exactly the frees made before it.
// Each stream also carries a vector clock: for every other stream, the highest tick it is
// known to be ordered after. Clocks flow as the program's own calls dictate:
//   event record on s     the event takes s's clock (and s's cut);
//   stream wait on event  the waiter's clock absorbs the event's;
//   legacy default stream it waits for, and is waited on by, every blocking stream of its
//                         group: work queued from now on is ordered after the partner's
//                         frees so far (used for reuse, never for what is already queued);
//   host synchronisation  everything the synchronised stream or event had seen is complete.
// Completion is kept apart from ordering: host_completed (the program observed it: any stream
// may reuse those frees, whatever the pool's flags) and gpu_completed (streampool's own markers
// observed it: reuse only where the pool allows opportunistic reuse).
// Thread-safe. The fast path only reads a stream's tick (one atomic load); everything else
// takes the tracker's mutex, and is reached from slow paths and from the program's event and
// synchronisation calls, which cost hundreds of nanoseconds in the driver anyway.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "keys.hpp"
#include "ordering.hpp"

namespace streampool::core {

using Clock = std::vector<std::uint64_t>;  // indexed by stream slot; missing entries are 0

void merge_into(Clock& into, const Clock& from);

struct alignas(64) StreamState {  // the tick is read by every free on the stream
  StreamKey key = 0;
  std::uint32_t slot = 0;
  StreamKind kind = StreamKind::blocking;
  std::uintptr_t group = 0;
  std::atomic<std::uint64_t> tick{1};  // frees made now carry this tick

  // Guarded by the tracker's mutex.
  bool dead = false;
  Clock clock;  // ticks of other streams this stream is ordered after
  struct PendingMarker {
    Marker marker;
    Clock covers;  // the stream's effective clock (own cut included) when it was recorded
  };
  std::optional<PendingMarker> marker;
};

class HappensBefore {
 public:
  explicit HappensBefore(Ordering& ordering);
  ~HappensBefore();

  // The live state of a stream, created on first sight.
  StreamState* stream(StreamKey key);
  std::uint64_t free_tick(const StreamState* stream) const {
    return stream->tick.load(std::memory_order_acquire);
  }

  void event_recorded(EventKey event, StreamKey stream);
  void stream_waited(StreamKey waiter, EventKey event);
  void event_destroyed(EventKey event);
  // The stream is about to be destroyed: mark its frees with a marker, forget its key.
  void stream_destroyed(StreamKey key);

  Clock ticket_for_stream(StreamKey key);
  Clock ticket_for_event(EventKey event);
  Clock ticket_for_group(std::optional<std::uintptr_t> group);  // nullopt: every stream
  void commit_host_completion(const Clock& completed);

  // The highest free tick of each slot that `stream` may reuse now. Own slot: unbounded.
  Clock reuse_bounds(StreamState* stream, bool follow_events, bool opportunistic);
  // Polls `stream`'s marker and, when its frees up to `needed_tick` are not covered by one,
  // records a new one (opportunistic reuse: the answer comes on a later call).
  void refresh_marker(StreamState* stream, std::uint64_t needed_tick);
  // Makes `waiter` wait for `freer`'s frees up to `needed_tick` (an inserted dependency).
  bool insert_dependency(StreamState* waiter, StreamState* freer, std::uint64_t needed_tick);

  // Changes whenever completion knowledge grows (host synchronisation, a marker seen complete).
  std::uint64_t completion_version() const noexcept { return completion_version_.load(std::memory_order_acquire); }
  // The stream that owns a slot (live or destroyed).
  StreamState* by_slot(std::uint32_t slot) const;
  // Per slot, the frees known complete (by the host, and by markers where opportunistic).
  Clock completed(bool opportunistic) const;

 private:
  StreamState* stream_locked(StreamKey key);
  std::uint64_t cut(StreamState* stream);
  Clock position_locked(StreamState* stream);
  Clock effective_clock_locked(StreamState* stream);
  void poll_marker_locked(StreamState* stream);
  bool record_marker_locked(StreamState* stream);
  static void raise(Clock& clock, std::uint32_t slot, std::uint64_t tick);
  static std::uint64_t at(const Clock& clock, std::uint32_t slot);

  Ordering& ordering_;
  mutable std::mutex mutex_;
  std::unordered_map<StreamKey, StreamState*> live_;
  std::vector<std::unique_ptr<StreamState>> all_;  // by slot; dead ones stay (their frees may wait)
  std::unordered_map<EventKey, Clock> events_;
  std::unordered_map<std::uintptr_t, StreamState*> legacy_by_group_;
  Clock host_completed_;
  Clock gpu_completed_;
  std::atomic<std::uint64_t> completion_version_{0};
};

// Bumped whenever a stream key may come to mean another stream (or an engine goes away):
// caches keyed by stream key check it.
inline std::atomic<std::uint64_t> g_stream_generation{1};
inline std::uint64_t stream_generation() noexcept { return g_stream_generation.load(std::memory_order_acquire); }
inline void advance_stream_generation() noexcept { g_stream_generation.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace streampool::core
