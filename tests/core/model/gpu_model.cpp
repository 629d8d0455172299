#include "model/gpu_model.hpp"

#include <algorithm>

namespace streampool::testing::model {

void join_into(VectorClock& into, const VectorClock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

int GpuModel::open_stream(core::StreamKey key, core::StreamKind kind, std::uintptr_t group) {
  const int index = static_cast<int>(streams_.size());
  streams_.push_back(Stream{key, kind, group, true, {}});
  live_by_key_[key] = index;
  return index;
}

void GpuModel::close_stream(core::StreamKey key) {
  auto it = live_by_key_.find(key);
  if (it == live_by_key_.end()) return;
  streams_[static_cast<std::size_t>(it->second)].live = false;
  live_by_key_.erase(it);
}

int GpuModel::instance(core::StreamKey key) const {
  auto it = live_by_key_.find(key);
  return it == live_by_key_.end() ? -1 : it->second;
}

const VectorClock& GpuModel::last_clock(int instance) const {
  const Stream& stream = streams_[static_cast<std::size_t>(instance)];
  return stream.ops.empty() ? empty_ : stream.ops.back();
}

VectorClock GpuModel::next_clock(int instance, bool implicit, bool observed_only) const {
  VectorClock clock = last_clock(instance);
  join_into(clock, observed_only ? observed_ : done_);
  const Stream& self = streams_[static_cast<std::size_t>(instance)];
  if (!implicit || self.kind == core::StreamKind::non_blocking) return clock;
  for (std::size_t other = 0; other < streams_.size(); ++other) {
    const Stream& stream = streams_[other];
    // A destroyed stream's queued work still runs, and later work of its partners still waits for
    // it (a context's end completes all of its work first, so its streams add nothing).
    if (static_cast<int>(other) == instance || stream.group != self.group) continue;
    const bool partner =
        (self.kind == core::StreamKind::blocking && stream.kind == core::StreamKind::legacy_default) ||
        (self.kind == core::StreamKind::legacy_default && stream.kind == core::StreamKind::blocking);
    if (partner) join_into(clock, last_clock(static_cast<int>(other)));
  }
  return clock;
}

OpRef GpuModel::issue(int instance, const VectorClock* also_after, bool implicit) {
  VectorClock clock = next_clock(instance, implicit);
  if (also_after != nullptr) join_into(clock, *also_after);
  Stream& stream = streams_[static_cast<std::size_t>(instance)];
  const auto position = static_cast<std::uint32_t>(stream.ops.size() + 1);
  if (clock.size() <= static_cast<std::size_t>(instance)) clock.resize(static_cast<std::size_t>(instance) + 1, 0);
  clock[static_cast<std::size_t>(instance)] = position;
  stream.ops.push_back(std::move(clock));
  return OpRef{instance, position};
}

const VectorClock& GpuModel::clock_of(const OpRef& op) const {
  return streams_[static_cast<std::size_t>(op.instance)].ops[op.position - 1];
}

void GpuModel::record_event(core::EventKey event, int instance) {
  const OpRef op = issue(instance);
  Event& state = events_[event];
  state.clock = clock_of(op);
  ++state.records;
  ++records_[event];
}

bool GpuModel::wait_event(int waiter, core::EventKey event) {
  auto it = events_.find(event);
  if (it == events_.end() || it->second.records == 0) return false;
  const VectorClock after = it->second.clock;  // issue() may grow the maps' storage
  issue(waiter, &after);
  return true;
}

const VectorClock* GpuModel::event_clock(core::EventKey event) const {
  auto it = events_.find(event);
  return it == events_.end() || it->second.records == 0 ? nullptr : &it->second.clock;
}

std::uint64_t GpuModel::event_records(core::EventKey event) const {
  auto it = records_.find(event);
  return it == records_.end() ? 0 : it->second;
}

void GpuModel::complete_up_to(const VectorClock& target) {
  join_into(done_, target);
  join_into(observed_, target);
}

void GpuModel::progress_up_to(const VectorClock& target) { join_into(done_, target); }

VectorClock GpuModel::everything_issued() const {
  VectorClock all;
  for (std::size_t i = 0; i < streams_.size(); ++i) join_into(all, last_clock(static_cast<int>(i)));
  return all;
}

VectorClock GpuModel::group_issued(std::uintptr_t group) const {
  VectorClock all;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].group == group) join_into(all, last_clock(static_cast<int>(i)));
  }
  return all;
}

bool GpuModel::is_complete(const VectorClock& clock) const {
  for (std::size_t i = 0; i < clock.size(); ++i) {
    if (clock[i] > clock_at(done_, static_cast<int>(i))) return false;
  }
  return true;
}

bool GpuModel::idle(int instance) const {
  const Stream& stream = streams_[static_cast<std::size_t>(instance)];
  return stream.ops.empty() || clock_at(done_, instance) >= stream.ops.size();
}

}  // namespace streampool::testing::model
