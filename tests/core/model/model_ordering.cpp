#include "model/model_ordering.hpp"

namespace streampool::testing::model {

void ModelOrdering::fail(std::string what) {
  ++errors_;
  last_error_ = std::move(what);
}

core::StreamKind ModelOrdering::stream_kind(core::StreamKey stream) {
  const int instance = gpu_.instance(stream);
  if (instance < 0) {
    fail("stream_kind of key " + std::to_string(stream) + ", which no live stream has");
    return core::StreamKind::non_blocking;
  }
  return gpu_.kind(instance);
}

std::uintptr_t ModelOrdering::stream_group(core::StreamKey stream) {
  const int instance = gpu_.instance(stream);
  if (instance < 0) {
    fail("stream_group of key " + std::to_string(stream) + ", which no live stream has");
    return 0;
  }
  return gpu_.group(instance);
}

bool ModelOrdering::refuse_this_call() {
  ++calls_;
  if (fail_one_in_ == 0) return false;
  std::uint64_t x = fail_seed_ ^ (calls_ * 0x9E3779B97F4A7C15ull);  // splitmix64
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  if (x % fail_one_in_ != 0) return false;
  ++refused_;
  return true;
}

int ModelOrdering::live_instance(core::StreamKey key, const char* call, core::Status* status) {
  const int instance = gpu_.instance(key);
  if (instance >= 0) return instance;
  *status = core::Status::invalid_value;
  if (unseen_ended_.count(key) == 0) fail(std::string(call) + " on key " + std::to_string(key) + ", which no live stream has");
  return -1;
}

core::Status ModelOrdering::record(core::StreamKey stream, core::Marker* marker) {
  core::Status status = core::Status::success;
  const int instance = live_instance(stream, "record", &status);
  if (instance < 0) return status;
  if (capturing(stream)) {
    ++capture_refusals_;
    return core::Status::not_supported;
  }
  if (refuse_this_call()) return core::Status::out_of_memory;
  markers_.push_back(MarkerOp{gpu_.issue(instance), true});
  *marker = markers_.size();
  return core::Status::success;
}

const ModelOrdering::MarkerOp* ModelOrdering::find(core::Marker marker, const char* call) {
  if (marker == 0 || marker > markers_.size()) {
    fail(std::string(call) + " of an unknown marker " + std::to_string(marker));
    return nullptr;
  }
  const MarkerOp& found = markers_[marker - 1];
  if (!found.live) {
    fail(std::string(call) + " of recycled marker " + std::to_string(marker));
    return nullptr;
  }
  return &found;
}

core::Status ModelOrdering::query(core::Marker marker) {
  const MarkerOp* found = find(marker, "query");
  if (found == nullptr) return core::Status::invalid_value;
  if (!capturing_.empty()) {
    ++capture_refusals_;
    return core::Status::not_ready;
  }
  return gpu_.is_complete(found->op) ? core::Status::success : core::Status::not_ready;
}

core::Status ModelOrdering::wait(core::StreamKey waiter, core::Marker marker) {
  const MarkerOp* found = find(marker, "wait");
  if (found == nullptr) return core::Status::invalid_value;
  core::Status status = core::Status::success;
  const int instance = live_instance(waiter, "wait", &status);
  if (instance < 0) return status;
  if (capturing(waiter)) {
    ++capture_refusals_;
    return core::Status::not_supported;
  }
  if (refuse_this_call()) return core::Status::out_of_memory;
  const OpRef marker_op = found->op;
  const VectorClock after = gpu_.clock_of(marker_op);
  const OpRef wait_op = gpu_.issue(instance, &after);
  waits_.push_back(InsertedWait{instance, marker_op, wait_op});
  return core::Status::success;
}

void ModelOrdering::recycle(core::Marker marker) {
  if (find(marker, "recycle") == nullptr) return;
  markers_[marker - 1].live = false;
}

std::size_t ModelOrdering::live_markers() const {
  std::size_t live = 0;
  for (const MarkerOp& marker : markers_) live += marker.live ? 1 : 0;
  return live;
}

}  // namespace streampool::testing::model
