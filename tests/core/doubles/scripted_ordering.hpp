// ScriptedOrdering: a core::Ordering whose streams run only when the test says so.
//
// Each stream has a count of work items enqueued and a count completed. A marker recorded on
// a stream completes once the stream has completed everything enqueued before it. A test
// models "a long kernel" with enqueue_work(stream) and lets it finish with complete(stream)
// (or complete_all()). wait() records the inserted dependency, so tests can see that one was
// made, and makes the waiter's later work depend on it. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/ordering.hpp"

namespace streampool::testing {

class ScriptedOrdering final : public core::Ordering {
 public:
  core::StreamKind stream_kind(core::StreamKey stream) override;
  std::uintptr_t stream_group(core::StreamKey stream) override;
  const std::atomic<bool>* implicit_partners() override { return &partners_; }
  core::Status record(core::StreamKey stream, core::Marker* marker) override;
  core::Status query(core::Marker marker) override;
  core::Status wait(core::StreamKey waiter, core::Marker marker) override;
  void recycle(core::Marker marker) override;

  // Script.
  void set_kind(core::StreamKey stream, core::StreamKind kind, std::uintptr_t group = 0);
  void enqueue_work(core::StreamKey stream);  // a kernel that runs until complete()
  void complete(core::StreamKey stream);      // everything enqueued on it so far has run
  void complete_all();
  bool idle(core::StreamKey stream) const;

  // Observations.
  std::size_t records() const;
  std::size_t queries() const;
  std::size_t waits() const;
  std::size_t waits_by(core::StreamKey waiter) const;
  std::size_t live_markers() const;  // recorded and not recycled
  void fail_records_on(core::StreamKey stream);  // record() answers not_supported there
  // Whether a blocking stream may exist as far as the engine can tell (the driver layer's
  // registry flag); true by default.
  void set_implicit_partners(bool possible) { partners_.store(possible); }

 private:
  struct StreamModel {
    std::uint64_t enqueued = 0;
    std::uint64_t completed = 0;
    core::StreamKind kind = core::StreamKind::blocking;
    std::uintptr_t group = 0;
    bool refuse_records = false;
  };
  struct MarkerModel {
    core::StreamKey stream = 0;
    std::uint64_t position = 0;
    bool live = false;
  };
  mutable std::mutex mutex_;
  std::map<core::StreamKey, StreamModel> streams_;
  std::vector<MarkerModel> markers_;  // index + 1 is the marker value
  std::map<core::StreamKey, std::size_t> waits_by_;
  std::size_t records_ = 0;
  std::size_t queries_ = 0;
  std::size_t waits_ = 0;
  std::atomic<bool> partners_{true};
};

}  // namespace streampool::testing
