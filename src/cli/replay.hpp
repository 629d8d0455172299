// Replaying a trace through the engine on the CPU: the recorded allocator and ordering events
// drive a real core::Engine over an in-memory backing (no device memory) and an ordering whose
// markers complete when the trace shows a host synchronisation covering them. What-if settings
// change the pools' policy; the result says what the engine would have reserved.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace/reader.hpp"

namespace streampool::cli {

// What a replay can represent: the engine keeps a few bytes of bookkeeping per granule of every
// reservation, so the replay's reservations come to at most this many granules in all (some
// 300 MiB of bookkeeping), whatever a damaged or hostile trace asks for.
inline constexpr std::uint64_t kMaxReplayGranules = std::uint64_t{1} << 25;

struct WhatIf {
  std::optional<std::uint64_t> release_threshold;  // every pool's, instead of the recorded one
  std::optional<int> reuse_flags;                  // bit 0 follow events, 1 opportunistic, 2 internal deps
  std::size_t granule_bytes = 2u << 20;
  std::optional<std::uint64_t> max_pool_size;      // for every pool without a smaller one
  std::uint64_t max_granules = kMaxReplayGranules;   // reserved by all pools together (the fuzzer's is smaller)
};

struct Sample {  // one pool after one event
  std::uint64_t time_ns = 0;
  std::uint64_t reserved = 0;
  std::uint64_t used = 0;
};

struct PoolResult {
  std::uint64_t handle = 0;  // as recorded
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_used = 0;
  std::uint64_t used_at_peak_reserved = 0;
  std::uint64_t allocations = 0;
  std::uint64_t failed_allocations = 0;  // refused in the replay (recorded ones that failed are skipped)
  std::vector<Sample> samples;           // when `keep_samples`
};

struct Allocation {  // for the plot's lanes
  std::uint64_t stream = 0;
  std::uint64_t pool = 0;
  std::uint64_t size = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;  // the trace's end when never freed
  std::uint64_t address = 0;  // as the program got it
  std::uint32_t thread = 0;   // that allocated it
  bool freed = true;          // false: still live at the trace's end
};

struct ReplayResult {
  std::vector<PoolResult> pools;
  std::uint64_t events = 0;
  std::uint64_t peak_reserved = 0;  // of all pools together
  std::uint64_t used_at_peak_reserved = 0;
  std::uint64_t peak_used = 0;
  double replay_ns = 0;                 // wall time of the engine calls
  std::uint64_t engine_calls = 0;
  std::uint64_t recorded_allocator_ns = 0;  // the trace's own alloc/free durations
  std::uint64_t recorded_allocator_calls = 0;
  std::uint64_t duration_ns = 0;        // the trace's span
  std::uint64_t recorded_out_of_memory = 0;  // the trace's out_of_memory records (failures in the program)
  std::uint16_t first_out_of_memory_cause = 0;  // the first one's explanation (trace::OomCause)
  std::vector<Allocation> allocations;  // when `keep_samples`
  // The replay stopped at this record (an index into the trace's records): an allocation more
  // than WhatIf::max_granules could hold. The result covers the records before it.
  std::optional<std::size_t> unrepresentable;
};

// "<path>: an allocation of N bytes at offset X is more than the replay can represent ..." for
// a result that stopped at an unrepresentable record.
std::string unrepresentable_message(const std::string& path, const trace::Trace& trace, const WhatIf& what_if,
                                    const ReplayResult& result);

// The what-if options (shared by replay and plot); false, after a message, for a bad one. Other
// arguments are left in *rest.
bool parse_what_if(const std::vector<std::string>& args, WhatIf* what_if, std::vector<std::string>* rest);

// What the replay does, event by event, for the exporters (export.hpp): addresses are those of
// the replay's own address space, in which every live block lies in memory its pool mapped.
// Called in the engine's order; a pool's map and unmap calls come while the engine serves the
// record that caused them, before allocated()/freed() and applied() of that record.
class ReplayObserver {
 public:
  virtual ~ReplayObserver() = default;
  virtual void mapped(std::uint64_t /*pool*/, std::uintptr_t /*address*/, std::size_t /*bytes*/) {}
  virtual void unmapped(std::uint64_t /*pool*/, std::uintptr_t /*address*/, std::size_t /*bytes*/) {}
  // A recorded allocation the replay served at `address` (the pool is the recorded handle).
  virtual void allocated(const trace::Record& /*record*/, std::uint64_t /*pool*/, std::uintptr_t /*address*/) {}
  // A recorded allocation the replay's pool refused (its policy, a what-if cap).
  virtual void refused(const trace::Record& /*record*/, std::uint64_t /*pool*/) {}
  // A free of an allocation the replay served: the allocation's own record and replay address.
  virtual void freed(const trace::Record& /*record*/, const trace::Record& /*allocation*/, std::uintptr_t /*address*/) {}
  // The engine made `waiter` wait for a marker of `marker_stream` (engine stream keys).
  virtual void dependency_inserted(std::uint64_t /*waiter*/, std::uint64_t /*marker_stream*/) {}
  // After each record the replay served: every live pool's reserved and used bytes (recorded
  // handles), then applied(); applied() alone for a record whose call failed in the program.
  virtual void pool_state(std::uint64_t /*time_ns*/, std::uint64_t /*pool*/, std::uint64_t /*reserved*/,
                          std::uint64_t /*used*/) {}
  virtual void applied(const trace::Record& /*record*/) {}
  // After the last record, before the replay tears its engine down (which unmaps everything).
  virtual void ended() {}
};

// `progress` (may be empty) is called with a fraction from 0 to 1 now and then; `observer` (may
// be null) sees every event.
ReplayResult replay(const trace::Trace& trace, const WhatIf& what_if, bool keep_samples,
                    const std::function<void(double)>& progress, ReplayObserver* observer = nullptr);

}  // namespace streampool::cli
