// ModelOrdering: a core::Ordering whose markers live in the GpuModel, so that the model check
// knows every edge the engine adds.
//
// record   an op at the end of the stream's live instance (the marker stands for it);
// query    success exactly when the GpuModel has completed that op;
// wait     an op on the waiter ordered after the marker's op: an edge from the marker's
//          stream position to the waiter's next work, logged;
// recycle  the marker may not be used again;
// stream_group  the stream's context, as the GpuModel has it.
// The driver may refuse a record or a wait (fail_one_in): the call then puts nothing on the
// stream, and the engine must cope. A stream may be capturing (set_capturing): as EventOrdering
// does, a record or wait on it answers not_supported and puts nothing on the stream, and while any
// stream captures every query answers not_ready (the real query could invalidate a global capture). A key whose stream ended where the engine could not see it
// (forget_unseen) is answered as the driver answers a stale handle: an error, and no contract
// breach, since the engine had no way to know.
// Calls that break the contract (a marker used after recycling, a record or wait on a key no
// live stream has and the engine was told of) are counted in contract_errors() and described in
// last_error().
// ScriptedOrdering is not used here because its markers complete as soon as their own stream
// has run, even when that stream waited for another stream's unfinished work; this model
// keeps such a marker pending, as a real event would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
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
  std::uintptr_t stream_group(core::StreamKey stream) override;
  core::Status record(core::StreamKey stream, core::Marker* marker) override;
  core::Status query(core::Marker marker) override;
  core::Status wait(core::StreamKey waiter, core::Marker marker) override;
  void recycle(core::Marker marker) override;

  // Every `one_in`-th record or wait, picked by a hash of `seed` and the call's number, fails
  // (0: none does).
  void fail_one_in(std::uint64_t seed, std::uint64_t one_in) {
    fail_seed_ = seed;
    fail_one_in_ = one_in;
  }
  // The key's stream ended without the engine being told; stale calls on it are errors, not
  // contract breaches, until the key is opened again (remember).
  void forget_unseen(core::StreamKey key) { unseen_ended_.insert(key); }
  void remember(core::StreamKey key) { unseen_ended_.erase(key); }
  // The stream enters (true) or leaves a capture.
  void set_capturing(core::StreamKey key, bool capturing) {
    if (capturing) {
      capturing_.insert(key);
    } else {
      capturing_.erase(key);
    }
  }
  bool capturing(core::StreamKey key) const { return capturing_.count(key) != 0; }
  bool any_capture() const { return !capturing_.empty(); }
  void end_captures() { capturing_.clear(); }
  std::size_t capture_refusals() const { return capture_refusals_; }

  std::size_t contract_errors() const { return errors_; }
  const std::string& last_error() const { return last_error_; }
  std::size_t records() const { return markers_.size(); }
  std::size_t refused() const { return refused_; }
  std::size_t live_markers() const;
  const std::vector<InsertedWait>& waits() const { return waits_; }

 private:
  struct MarkerOp {
    OpRef op;
    bool live = true;
  };
  const MarkerOp* find(core::Marker marker, const char* call);
  // The live instance of a key for a record or wait; -1 with *status set when there is none.
  int live_instance(core::StreamKey key, const char* call, core::Status* status);
  bool refuse_this_call();
  void fail(std::string what);

  GpuModel& gpu_;
  std::vector<MarkerOp> markers_;  // marker value = index + 1
  std::vector<InsertedWait> waits_;
  std::set<core::StreamKey> unseen_ended_;
  std::set<core::StreamKey> capturing_;
  std::size_t capture_refusals_ = 0;
  std::uint64_t fail_seed_ = 0;
  std::uint64_t fail_one_in_ = 0;
  std::uint64_t calls_ = 0;
  std::size_t refused_ = 0;
  std::size_t errors_ = 0;
  std::string last_error_;
};

}  // namespace streampool::testing::model
