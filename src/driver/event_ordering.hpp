// EventOrdering: the engine's Ordering over the real driver.
//
// A marker is a CU_EVENT_DISABLE_TIMING event from a per-context pool (events belong to the
// context they were created in, and may only be recorded on that context's streams); the Marker
// value handed to the engine is the address of a small record {event, context}. Events are reused,
// never destroyed while streampool lives, except with their context: when a context is destroyed
// its markers count as complete (destroying a context waits for its work) and their records are
// dropped once the engine recycles them.
//
// Stream keys are turned back into handles by the stream registry: the legacy default stream is
// recorded on as CU_STREAM_LEGACY with its context made current; a per-thread default stream only
// from its own thread (not_supported otherwise, and the engine copes). No marker is ever recorded on,
// or waited for by, a capturing stream: that would enter streampool's event into the program's graph.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda_compat.hpp"
#include "core/ordering.hpp"

namespace streampool::driver {

class EventOrdering final : public core::Ordering {
 public:
  EventOrdering() = default;
  ~EventOrdering() override;  // never run in the interposer (the engine is never destroyed)
  EventOrdering(const EventOrdering&) = delete;
  EventOrdering& operator=(const EventOrdering&) = delete;

  core::StreamKind stream_kind(core::StreamKey stream) override;
  std::uintptr_t stream_group(core::StreamKey stream) override;
  const std::atomic<bool>* implicit_partners() override;
  core::Status record(core::StreamKey stream, core::Marker* marker) override;
  core::Status query(core::Marker marker) override;
  core::Status wait(core::StreamKey waiter, core::Marker marker) override;
  void recycle(core::Marker marker) override;

  // The context is being destroyed (or its primary context reset): its markers are complete.
  void context_destroyed(CUcontext context);

  // Markers currently created (free or in use), for tests.
  std::size_t markers_created() const;

 private:
  struct MarkerRecord;
  static MarkerRecord* record_of(core::Marker marker) noexcept;
  struct ContextEvents {
    std::vector<MarkerRecord*> free;
    std::vector<MarkerRecord*> all;
  };
  core::Status take(CUcontext context, MarkerRecord** record);

  mutable std::mutex mutex_;
  std::unordered_map<CUcontext, ContextEvents> contexts_;
};

// Translates a driver result into the engine's terms.
core::Status status_from(CUresult result) noexcept;

}  // namespace streampool::driver
