// ModelOrdering: a core::Ordering whose markers live in the GpuModel, so that the model check
// knows every edge the engine adds.
//
// record   an op at the end of the stream's live instance (the marker stands for it);
// query    success exactly when the GpuModel has completed that op;
// wait     an op on the waiter ordered after the marker's op: an edge from the marker's
//          stream position to the waiter's next work, logged;
// recycle  the marker may not be used again.
// Calls that break the contract (a marker used after recycling, a record or wait on a key no
// live stream has) are counted in contract_errors() and described in last_error().
// ScriptedOrdering is not used here because its markers complete as soon as their own stream
// has run, even when that stream waited for another stream's unfinished work; this model
// keeps such a marker pending, as a real event would.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/ordering.hpp"
#include "model/gpu_model.hpp"

namespace streampool::testing::model {

struct InsertedWait {
  int waiter = -1;     // instance
  OpRef marker;        // the op the waiter's next work now follows
  OpRef wait;          // the wait op itself
};

class ModelOrdering final : public core::Ordering {
 public:
  explicit ModelOrdering(GpuModel& gpu) : gpu_(gpu) {}

  core::StreamKind stream_kind(core::StreamKey stream) override;
  core::Status record(core::StreamKey stream, core::Marker* marker) override;
  core::Status query(core::Marker marker) override;
  core::Status wait(core::StreamKey waiter, core::Marker marker) override;
  void recycle(core::Marker marker) override;

  std::size_t contract_errors() const { return errors_; }
  const std::string& last_error() const { return last_error_; }
  std::size_t records() const { return markers_.size(); }
  std::size_t live_markers() const;
  const std::vector<InsertedWait>& waits() const { return waits_; }

 private:
  struct MarkerOp {
    OpRef op;
    bool live = true;
  };
  const MarkerOp* find(core::Marker marker, const char* call);
  void fail(std::string what);

  GpuModel& gpu_;
  std::vector<MarkerOp> markers_;  // marker value = index + 1
  std::vector<InsertedWait> waits_;
  std::size_t errors_ = 0;
  std::string last_error_;
};

}  // namespace streampool::testing::model
