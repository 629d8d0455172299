#include "scripted_ordering.hpp"

namespace streampool::testing {

core::StreamKind ScriptedOrdering::stream_kind(core::StreamKey stream) {
  std::lock_guard guard(mutex_);
  return streams_[stream].kind;
}

std::uintptr_t ScriptedOrdering::stream_group(core::StreamKey stream) {
  std::lock_guard guard(mutex_);
  return streams_[stream].group;
}

core::Status ScriptedOrdering::record(core::StreamKey stream, core::Marker* marker) {
  std::lock_guard guard(mutex_);
  StreamModel& model = streams_[stream];
  if (model.refuse_records) return core::Status::not_supported;
  ++records_;
  markers_.push_back(MarkerModel{stream, model.enqueued, true});
  *marker = markers_.size();
  return core::Status::success;
}

core::Status ScriptedOrdering::query(core::Marker marker) {
  std::lock_guard guard(mutex_);
  ++queries_;
  if (marker == 0 || marker > markers_.size()) return core::Status::invalid_value;
  const MarkerModel& model = markers_[marker - 1];
  return streams_[model.stream].completed >= model.position ? core::Status::success : core::Status::not_ready;
}

core::Status ScriptedOrdering::wait(core::StreamKey waiter, core::Marker marker) {
  std::lock_guard guard(mutex_);
  if (marker == 0 || marker > markers_.size()) return core::Status::invalid_value;
  ++waits_;
  ++waits_by_[waiter];
  // The waiter's next work cannot finish before the marker: model it as work on the waiter
  // that completes only together with the marker's stream.
  const MarkerModel& model = markers_[marker - 1];
  if (streams_[model.stream].completed < model.position) ++streams_[waiter].enqueued;
  return core::Status::success;
}

void ScriptedOrdering::recycle(core::Marker marker) {
  std::lock_guard guard(mutex_);
  if (marker != 0 && marker <= markers_.size()) markers_[marker - 1].live = false;
}

void ScriptedOrdering::set_kind(core::StreamKey stream, core::StreamKind kind, std::uintptr_t group) {
  std::lock_guard guard(mutex_);
  streams_[stream].kind = kind;
  streams_[stream].group = group;
}

void ScriptedOrdering::enqueue_work(core::StreamKey stream) {
  std::lock_guard guard(mutex_);
  ++streams_[stream].enqueued;
}

void ScriptedOrdering::complete(core::StreamKey stream) {
  std::lock_guard guard(mutex_);
  streams_[stream].completed = streams_[stream].enqueued;
}

void ScriptedOrdering::complete_all() {
  std::lock_guard guard(mutex_);
  for (auto& [key, model] : streams_) model.completed = model.enqueued;
}

bool ScriptedOrdering::idle(core::StreamKey stream) const {
  std::lock_guard guard(mutex_);
  auto it = streams_.find(stream);
  return it == streams_.end() || it->second.completed == it->second.enqueued;
}

std::size_t ScriptedOrdering::records() const {
  std::lock_guard guard(mutex_);
  return records_;
}
std::size_t ScriptedOrdering::queries() const {
  std::lock_guard guard(mutex_);
  return queries_;
}
std::size_t ScriptedOrdering::waits() const {
  std::lock_guard guard(mutex_);
  return waits_;
}
std::size_t ScriptedOrdering::waits_by(core::StreamKey waiter) const {
  std::lock_guard guard(mutex_);
  auto it = waits_by_.find(waiter);
  return it == waits_by_.end() ? 0 : it->second;
}
std::size_t ScriptedOrdering::live_markers() const {
  std::lock_guard guard(mutex_);
  std::size_t live = 0;
  for (const MarkerModel& model : markers_) live += model.live ? 1 : 0;
  return live;
}
void ScriptedOrdering::fail_records_on(core::StreamKey stream) {
  std::lock_guard guard(mutex_);
  streams_[stream].refuse_records = true;
}

}  // namespace streampool::testing
