#include "replay.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/engine.hpp"

namespace streampool::cli {

namespace {

using trace::Op;
using trace::Record;

// The granules every pool of one replay has reserved, against WhatIf::max_granules, and where
// the next reservation's invented addresses begin.
struct ReservationBudget {
  std::uint64_t limit = kMaxReplayGranules;
  std::uint64_t granules = 0;
  bool exceeded = false;  // a reservation was refused for the budget, not by the pool's policy
  std::uintptr_t next_base = std::uintptr_t{1} << 44;
};

// Address space from an invented range, physical memory by bookkeeping only.
class ReplayBacking final : public core::Backing {
 public:
  ReplayBacking(std::size_t granule, ReservationBudget& budget, ReplayObserver* observer, std::uint64_t pool)
      : granule_(granule), budget_(budget), observer_(observer), pool_(pool) {}
  std::size_t granule_bytes() const override { return granule_; }
  // 64 GiB, as on a GPU, or less with granules under 256 KiB (2^18 of them: 1 GiB at 4 KiB): the
  // engine keeps some 8 bytes per granule of a reservation, 2 MiB of them here at most.
  std::size_t reservation_bytes() const override { return std::min(std::size_t{1} << 36, granule_ << 18); }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override {
    const std::uint64_t granules = bytes / granule_;
    if (granules > budget_.limit - budget_.granules) {
      budget_.exceeded = true;
      return core::Status::out_of_memory;
    }
    budget_.granules += granules;
    *base = budget_.next_base;
    budget_.next_base += (bytes + (std::size_t{1} << 30)) & ~((std::size_t{1} << 30) - 1);
    return core::Status::success;
  }
  core::Status unreserve(std::uintptr_t, std::size_t bytes) override {
    budget_.granules -= bytes / granule_;
    return core::Status::success;
  }
  core::Status map(std::uintptr_t address, std::size_t bytes, std::span<const core::AccessDescriptor>) override {
    if (observer_ != nullptr) observer_->mapped(pool_, address, bytes);
    return core::Status::success;
  }
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override {
    if (observer_ != nullptr) observer_->unmapped(pool_, address, bytes);
    return core::Status::success;
  }
  core::Status set_access(std::uintptr_t, std::size_t, std::span<const core::AccessDescriptor>) override {
    return core::Status::success;
  }

 private:
  std::size_t granule_;
  ReservationBudget& budget_;
  ReplayObserver* observer_;
  std::uint64_t pool_;
};

// A marker completes once the trace shows a host synchronisation of its stream (or of all)
// after it was recorded. Single-threaded: the replay is one thread.
class ReplayOrdering final : public core::Ordering {
 public:
  core::StreamKind stream_kind(core::StreamKey stream) override {
    if (stream == kLegacyKey) return core::StreamKind::legacy_default;
    auto found = non_blocking_.find(stream);
    return found != non_blocking_.end() && found->second ? core::StreamKind::non_blocking
                                                         : core::StreamKind::blocking;
  }
  core::Status record(core::StreamKey stream, core::Marker* marker) override {
    markers_.push_back({stream, epoch(stream)});
    *marker = markers_.size();
    return core::Status::success;
  }
  core::Status query(core::Marker marker) override {
    const MarkerState& state = markers_.at(marker - 1);
    return epoch(state.stream) > state.epoch ? core::Status::success : core::Status::not_ready;
  }
  core::Status wait(core::StreamKey waiter, core::Marker marker) override {
    if (observer_ != nullptr && marker >= 1 && marker <= markers_.size()) {
      observer_->dependency_inserted(waiter, markers_[marker - 1].stream);
    }
    return core::Status::success;
  }
  void recycle(core::Marker) override {}

  void synchronized(core::StreamKey stream) { ++epochs_[stream]; }
  void synchronized_all() { ++all_epoch_; }
  void set_non_blocking(core::StreamKey stream, bool non_blocking) { non_blocking_[stream] = non_blocking; }
  void set_observer(ReplayObserver* observer) { observer_ = observer; }

  static constexpr core::StreamKey kLegacyKey = 1;

 private:
  struct MarkerState {
    core::StreamKey stream;
    std::uint64_t epoch;
  };
  std::uint64_t epoch(core::StreamKey stream) const {
    auto found = epochs_.find(stream);
    return all_epoch_ + (found == epochs_.end() ? 0 : found->second);
  }
  std::vector<MarkerState> markers_;
  std::unordered_map<core::StreamKey, std::uint64_t> epochs_;
  std::unordered_map<core::StreamKey, bool> non_blocking_;
  std::uint64_t all_epoch_ = 0;
  ReplayObserver* observer_ = nullptr;
};

// The engine key of a recorded stream: the legacy default stream and each thread's per-thread
// default stream get keys of their own (handles are pointers, far above these).
core::StreamKey key_of(const Record& record) {
  const bool per_thread = (record.flags & trace::kPerThreadVariant) != 0 && record.op != static_cast<std::uint16_t>(Op::stream_create);
  if (record.stream == 2 || (record.stream == 0 && per_thread)) return 0x1000 + record.thread;
  if (record.stream == 0) return ReplayOrdering::kLegacyKey;
  return record.stream;
}

class Replayer {
 public:
  Replayer(const WhatIf& what_if, bool keep_samples, ReplayObserver* observer)
      : what_if_(what_if), keep_(keep_samples), observer_(observer) {
    budget_.limit = what_if.max_granules;
    ordering_.set_observer(observer);
  }

  void apply(const Record& record) {
    if (record.op == static_cast<std::uint16_t>(Op::out_of_memory)) {  // streampool's report of a failure
      if (result_.recorded_out_of_memory++ == 0) result_.first_out_of_memory_cause = record.flags;
      if (observer_ != nullptr) observer_->applied(record);
      return;
    }
    if (record.result != 0) {  // the program's call failed: nothing happened
      if (observer_ != nullptr) observer_->applied(record);
      return;
    }
    const auto op = static_cast<Op>(record.op);
    const auto begin = std::chrono::steady_clock::now();
    bool counted = true;
    switch (op) {
      case Op::alloc:
      case Op::alloc_from_pool:
        allocate(record);
        break;
      case Op::free:
      case Op::free_completed:
        release(record, op == Op::free_completed);
        break;
      case Op::pool_create:
        pool_for(record.pool, record.size, record.flags == 2 ? core::PoolKind::managed : core::PoolKind::device);
        break;
      case Op::pool_destroy:
        if (auto found = pools_.find(record.pool); found != pools_.end()) {
          engine_.destroy_pool(found->second.pool);
          finished_[found->first] = found->second.result;
          pools_.erase(found);
        }
        break;
      case Op::pool_trim:
        if (auto found = pools_.find(record.pool); found != pools_.end()) engine_.trim_to(found->second.pool, record.size);
        break;
      case Op::pool_set_attribute:
        set_attribute(record);
        break;
      case Op::event_record:
        event_stream_[record.address] = key_of(record);
        engine_.event_recorded(record.address, key_of(record));
        break;
      case Op::stream_wait_event:
        engine_.stream_waited(key_of(record), record.address);
        break;
      case Op::stream_synchronize:
      case Op::stream_query: {
        const core::SyncTicket ticket = engine_.ticket_for_stream(key_of(record), op == Op::stream_synchronize);
        ordering_.synchronized(key_of(record));
        engine_.commit(ticket);
        break;
      }
      case Op::event_synchronize:
      case Op::event_query: {
        const core::SyncTicket ticket = engine_.ticket_for_event(record.address, op == Op::event_synchronize);
        if (auto found = event_stream_.find(record.address); found != event_stream_.end()) {
          ordering_.synchronized(found->second);
        }
        engine_.commit(ticket);
        break;
      }
      case Op::context_synchronize: {
        const core::SyncTicket ticket = engine_.ticket_for_all(true);
        ordering_.synchronized_all();
        engine_.commit(ticket);
        break;
      }
      case Op::stream_create:
        ordering_.set_non_blocking(record.stream, (record.flags & 1u) != 0);
        engine_.stream_ended(record.stream);
        break;
      case Op::stream_destroy:
        engine_.stream_destroyed(key_of(record));
        break;
      default:
        counted = false;
    }
    if (counted) {
      result_.replay_ns += static_cast<double>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin).count());
      ++result_.engine_calls;
    }
    observe(record.time_ns);
    if (observer_ != nullptr) observer_->applied(record);
  }

  ReplayResult finish(std::uint64_t end_ns) {
    for (auto& [handle, state] : finished_) result_.pools.push_back(state);
    for (auto& [handle, state] : pools_) result_.pools.push_back(state.result);
    for (auto& [address, live] : live_) {
      if (keep_) {
        result_.allocations.push_back({live.stream, live.pool, live.size, live.start_ns, end_ns, live.record.address,
                                       live.record.thread, false});
      }
    }
    return std::move(result_);
  }

  ReplayResult& result() { return result_; }
  bool beyond_budget() const { return budget_.exceeded; }

 private:
  struct PoolState {
    core::Pool* pool = nullptr;
    PoolResult result;
  };
  struct Live {
    void* address = nullptr;
    std::uint64_t stream = 0;
    std::uint64_t pool = 0;
    std::uint64_t size = 0;
    std::uint64_t start_ns = 0;
    Record record{};
  };

  PoolState* pool_for(std::uint64_t handle, std::uint64_t max_size, core::PoolKind kind) {
    if (auto found = pools_.find(handle); found != pools_.end()) return &found->second;
    core::PoolProps props;
    props.kind = kind;
    props.max_size = max_size;
    if (what_if_.max_pool_size && (props.max_size == 0 || *what_if_.max_pool_size < props.max_size)) {
      props.max_size = *what_if_.max_pool_size;
    }
    core::Pool* pool = nullptr;
    if (!core::ok(engine_.create_pool(props, std::make_unique<ReplayBacking>(what_if_.granule_bytes, budget_, observer_, handle),
                                          &pool))) {
      return nullptr;
    }
    if (what_if_.release_threshold) {
      engine_.set_attribute(pool, core::PoolAttribute::release_threshold, &*what_if_.release_threshold);
    }
    if (what_if_.reuse_flags) {
      for (int bit = 0; bit < 3; ++bit) {
        const int on = (*what_if_.reuse_flags >> bit) & 1;
        engine_.set_attribute(pool, static_cast<core::PoolAttribute>(bit + 1), &on);
      }
    }
    PoolState& state = pools_[handle];
    state.pool = pool;
    state.result.handle = handle;
    return &state;
  }

  void allocate(const Record& record) {
    if (record.size / what_if_.granule_bytes >= budget_.limit) {
      budget_.exceeded = true;
      return;
    }
    PoolState* state = pool_for(record.pool, 0, core::PoolKind::device);
    if (state == nullptr) return;
    void* address = nullptr;
    ++state->result.allocations;
    if (!core::ok(engine_.allocate(state->pool, record.size, key_of(record), &address))) {
      if (budget_.exceeded) return;  // not the pool's refusal: the replay stops here
      ++state->result.failed_allocations;
      if (observer_ != nullptr) observer_->refused(record, record.pool);
      return;
    }
    if (address == nullptr) return;
    live_[record.address] = {address, record.stream, record.pool, record.size, record.time_ns, record};
    if (observer_ != nullptr) observer_->allocated(record, record.pool, reinterpret_cast<std::uintptr_t>(address));
  }

  void release(const Record& record, bool completed) {
    auto found = live_.find(record.address);
    if (found == live_.end()) return;  // allocated before the trace started, or refused here
    if (completed) {
      engine_.free_completed(found->second.address);
    } else {
      engine_.free(found->second.address, key_of(record));
    }
    if (keep_) {
      const Live& live = found->second;
      result_.allocations.push_back({live.stream, live.pool, live.size, live.start_ns, record.time_ns,
                                     live.record.address, live.record.thread, true});
    }
    if (observer_ != nullptr) {
      observer_->freed(record, found->second.record, reinterpret_cast<std::uintptr_t>(found->second.address));
    }
    live_.erase(found);
  }

  void set_attribute(const Record& record) {
    auto found = pools_.find(record.pool);
    if (found == pools_.end()) return;
    const auto attribute = static_cast<core::PoolAttribute>(record.address);
    if (attribute == core::PoolAttribute::release_threshold && !what_if_.release_threshold) {
      engine_.set_attribute(found->second.pool, attribute, &record.size);
    } else if (record.address >= 1 && record.address <= 3 && !what_if_.reuse_flags) {
      const int on = record.size != 0 ? 1 : 0;
      engine_.set_attribute(found->second.pool, attribute, &on);
    }
  }

  void observe(std::uint64_t time_ns) {
    ++result_.events;
    std::uint64_t reserved = 0;
    std::uint64_t used = 0;
    for (auto& [handle, state] : pools_) {
      const core::PoolStats stats = engine_.stats(state.pool);
      reserved += stats.reserved_current;
      used += stats.used_current;
      PoolResult& pool = state.result;
      if (stats.reserved_current > pool.peak_reserved) {
        pool.peak_reserved = stats.reserved_current;
        pool.used_at_peak_reserved = stats.used_current;
      } else if (stats.reserved_current == pool.peak_reserved && stats.used_current > pool.used_at_peak_reserved) {
        pool.used_at_peak_reserved = stats.used_current;  // the peak's best use
      }
      if (stats.used_current > pool.peak_used) pool.peak_used = stats.used_current;
      if (observer_ != nullptr) observer_->pool_state(time_ns, handle, stats.reserved_current, stats.used_current);
      if (keep_ && (pool.samples.empty() || pool.samples.back().reserved != stats.reserved_current ||
                    pool.samples.back().used != stats.used_current)) {
        pool.samples.push_back({time_ns, stats.reserved_current, stats.used_current});
      }
    }
    if (reserved > result_.peak_reserved) {
      result_.peak_reserved = reserved;
      result_.used_at_peak_reserved = used;
    } else if (reserved == result_.peak_reserved && used > result_.used_at_peak_reserved) {
      result_.used_at_peak_reserved = used;
    }
    if (used > result_.peak_used) result_.peak_used = used;
  }

  WhatIf what_if_;
  bool keep_;
  ReplayObserver* observer_;
  ReservationBudget budget_;  // before the engine: its pools' backings hold it
  ReplayOrdering ordering_;
  core::Engine engine_{ordering_};
  std::map<std::uint64_t, PoolState> pools_;
  std::map<std::uint64_t, PoolResult> finished_;
  std::unordered_map<std::uint64_t, Live> live_;
  std::unordered_map<std::uint64_t, core::StreamKey> event_stream_;
  ReplayResult result_;
};

}  // namespace

ReplayResult replay(const trace::Trace& trace, const WhatIf& what_if, bool keep_samples,
                    const std::function<void(double)>& progress, ReplayObserver* observer) {
  Replayer replayer(what_if, keep_samples, observer);
  const std::size_t count = trace.records.size();
  const std::size_t step = count / 100 + 1;
  std::uint64_t recorded_ns = 0;
  std::uint64_t recorded_calls = 0;
  std::optional<std::size_t> stopped_at;
  for (std::size_t i = 0; i < count; ++i) {
    const Record& record = trace.records[i];
    const auto op = static_cast<Op>(record.op);
    if (op == Op::alloc || op == Op::alloc_from_pool || op == Op::free) {
      recorded_ns += record.duration_ns;
      ++recorded_calls;
    }
    replayer.apply(record);
    if (replayer.beyond_budget()) {
      stopped_at = i;
      break;
    }
    if (progress && i % step == 0) progress(static_cast<double>(i) / static_cast<double>(count));
  }
  if (progress) progress(1.0);
  if (observer != nullptr) observer->ended();
  const std::uint64_t end = count == 0 ? 0 : trace.records[stopped_at ? *stopped_at : count - 1].time_ns;
  ReplayResult result = replayer.finish(end);
  result.unrepresentable = stopped_at;
  result.recorded_allocator_ns = recorded_ns;
  result.recorded_allocator_calls = recorded_calls;
  result.duration_ns = end;
  return result;
}

std::string unrepresentable_message(const std::string& path, const trace::Trace& trace, const WhatIf& what_if,
                                    const ReplayResult& result) {
  const std::size_t index = *result.unrepresentable;
  const Record& record = trace.records[index];
  const std::uint64_t offset = index < trace.offsets.size() ? trace.offsets[index] : 0;
  return path + ": " + std::string(trace::op_name(record.op)) + " of " + std::to_string(record.size) + " bytes at offset " +
         std::to_string(offset) +
         " is more than the replay can represent (" + std::to_string(what_if.max_granules) + " granules of " +
         std::to_string(what_if.granule_bytes) + " bytes in all)";
}

}  // namespace streampool::cli
