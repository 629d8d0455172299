// GpuModel: the model check's own picture of what a legal GPU execution may do, kept apart
// from everything the engine believes.
//
// Every operation the program (or the engine, through ModelOrdering) puts on a stream gets a
// vector clock over stream *instances* (a destroyed stream's key may come back as a new
// instance): entry i is the last position on instance i that the operation is ordered after.
// Edges, as CUDA defines them:
//   program order       an op follows the previous op of its stream;
//   event record/wait   the wait (and everything after it) follows the recorded op;
//   legacy default      an op on the legacy stream of a context follows the earlier ops of every
//                       live blocking stream of that context (the per-thread default streams
//                       are blocking); an op on a blocking stream follows the earlier ops of its
//                       context's legacy stream (non-blocking streams, other contexts: nothing);
//   GPU progress        nothing completes until the script says so; once ops are complete,
//                       every op issued later on any stream is ordered after them (`done_`).
// An allocation is not an op of the stream: streampool puts nothing into the stream for it (only
// the waits it inserts are real). issue(..., implicit=false) places such a position on the
// stream without the legacy stream's implicit edges, so that a host synchronisation of the
// allocating stream completes only what the stream really waited for.
// Completion is prefix-closed per instance and dependency-closed: completing an op completes
// everything in its clock. Not thread-safe: the model check runs one step at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "core/keys.hpp"

namespace streampool::testing::model {

using VectorClock = std::vector<std::uint32_t>;  // indexed by stream instance

struct OpRef {
  int instance = -1;
  std::uint32_t position = 0;  // 1-based position on the instance
};

inline std::uint32_t clock_at(const VectorClock& clock, int instance) {
  return instance >= 0 && static_cast<std::size_t>(instance) < clock.size() ? clock[static_cast<std::size_t>(instance)]
                                                                             : 0;
}
inline bool ordered_before(const OpRef& earlier, const VectorClock& later) {
  return clock_at(later, earlier.instance) >= earlier.position;
}
void join_into(VectorClock& into, const VectorClock& from);

class GpuModel {
 public:
  // A new instance for the key, in stream group (context) `group`.
  int open_stream(core::StreamKey key, core::StreamKind kind, std::uintptr_t group = 0);
  void close_stream(core::StreamKey key);  // the key may be opened again; queued work still runs
  int instance(core::StreamKey key) const;  // -1: no live stream has it
  core::StreamKind kind(int instance) const { return streams_[static_cast<std::size_t>(instance)].kind; }
  core::StreamKey key(int instance) const { return streams_[static_cast<std::size_t>(instance)].key; }
  std::uintptr_t group(int instance) const { return streams_[static_cast<std::size_t>(instance)].group; }
  bool live(int instance) const { return streams_[static_cast<std::size_t>(instance)].live; }
  std::size_t instance_count() const { return streams_.size(); }

  // The clock the next op on `instance` would get (its own position not included). With
  // `observed_only`, completed work counts only where the program saw it complete (a host call):
  // what the program may rely on when it picks where to use a block.
  VectorClock next_clock(int instance, bool implicit = true, bool observed_only = false) const;
  // Puts an op on the instance, ordered after `also_after` too when given; without the legacy
  // stream's implicit edges when `implicit` is false.
  OpRef issue(int instance, const VectorClock* also_after = nullptr, bool implicit = true);
  const VectorClock& clock_of(const OpRef& op) const;
  // The clock of the instance's last op (empty: none yet).
  const VectorClock& last_clock(int instance) const;

  // Program events (cuEventRecord / cuStreamWaitEvent / cuEventDestroy).
  void record_event(core::EventKey event, int instance);
  bool wait_event(int waiter, core::EventKey event);  // false: never recorded, a no-op
  const VectorClock* event_clock(core::EventKey event) const;
  std::uint64_t event_records(core::EventKey event) const;  // records so far (for coverage)
  void destroy_event(core::EventKey event) { events_.erase(event); }

  // GPU progress the program observes (a host synchronisation, a successful query).
  void complete_up_to(const VectorClock& target);
  void complete_instance(int instance) { complete_up_to(last_clock(instance)); }
  // GPU progress no host call has shown the program.
  void progress_up_to(const VectorClock& target);
  void progress_instance(int instance) { progress_up_to(last_clock(instance)); }
  VectorClock everything_issued() const;  // join of every instance's last op
  // Join of the last ops of every instance of the group, destroyed ones included (a context
  // synchronize waits for all of the context's work).
  VectorClock group_issued(std::uintptr_t group) const;
  bool is_complete(const OpRef& op) const { return ordered_before(op, done_); }
  bool is_complete(const VectorClock& clock) const;
  bool idle(int instance) const;
  const VectorClock& done() const { return done_; }

 private:
  struct Stream {
    core::StreamKey key = 0;
    core::StreamKind kind = core::StreamKind::blocking;
    std::uintptr_t group = 0;
    bool live = true;
    std::vector<VectorClock> ops;  // ops[p - 1] is the clock of the op at position p
  };
  struct Event {
    VectorClock clock;
    std::uint64_t records = 0;
  };
  std::vector<Stream> streams_;
  std::map<core::StreamKey, int> live_by_key_;
  std::map<core::EventKey, Event> events_;
  std::map<core::EventKey, std::uint64_t> records_;  // survives destruction: counts every record
  VectorClock done_;      // per instance: the completed prefix
  VectorClock observed_;  // the part of it a host call has shown the program
  VectorClock empty_;
};

}  // namespace streampool::testing::model
