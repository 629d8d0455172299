// Ordering: what the engine needs from the streams it tracks.
//
// Reuse across streams needs proof that a free is ordered before the allocation that reuses
// its memory. Most proof comes from what the program already does (events, waits, syncs),
// which the adapters report to the Engine. When that is not enough the engine asks for its
// own markers, through this interface:
//   record   place a marker at the current end of a stream (an event from a pool of events);
//   query    success once everything before the marker has run, not_ready before that;
//   wait     make a stream wait for a marker (an inserted dependency);
//   recycle  hand a marker back to the pool once the engine no longer needs it;
//   stream_kind  how a stream synchronises with the legacy default stream;
//   implicit_partners  whether a stream the legacy stream's implicit order binds to it may exist.
// Markers are rare: one covers every free a stream made before it, and none is recorded on
// the same-stream fast path. Implementations must be thread-safe.
#pragma once

#include <atomic>

#include "keys.hpp"
#include "status.hpp"

namespace streampool::core {

class Ordering {
 public:
  virtual ~Ordering() = default;

  virtual StreamKind stream_kind(StreamKey stream) = 0;
  // Streams synchronise implicitly with the legacy default stream of their own context only;
  // streams of one group (a context) share one legacy stream. 0 for a single group.
  virtual std::uintptr_t stream_group(StreamKey /*stream*/) { return 0; }
  // A flag that stays true once a blocking stream (created, or a per-thread default stream) has
  // been seen: until then the legacy stream's implicit order binds it to nothing, and its own
  // frees may be reused on it with no marker (HappensBefore::anchor_own_frees). nullptr: such a
  // stream may always exist. The flag outlives the Ordering's users.
  virtual const std::atomic<bool>* implicit_partners() { return nullptr; }
  virtual Status record(StreamKey stream, Marker* marker) = 0;
  virtual Status query(Marker marker) = 0;
  virtual Status wait(StreamKey waiter, Marker marker) = 0;
  virtual void recycle(Marker marker) = 0;
};

}  // namespace streampool::core
