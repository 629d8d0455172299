// Engine: streampool's stream-ordered pool core, with no knowledge of CUDA.
//
// The adapters (the libcuda.so.1 interposer, the cudart-compatible library, tests) drive it
// with two kinds of calls:
//   * the allocator family: create/destroy pools, allocate, free, trim, attributes, access;
//   * observations of ordering the program itself makes: event records, stream waits, and
//     host synchronisations. These feed vector clocks that decide when memory freed on one
//     stream may be reused on another (see happens_before.hpp).
// Host synchronisation is reported in two halves: take a ticket *before* calling the real
// driver (it snapshots the position the sync covers) and commit it once the call succeeded.
// Everything is thread-safe; same-stream allocate/free take no lock shared by all streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "backing.hpp"
#include "keys.hpp"
#include "ordering.hpp"
#include "pool_props.hpp"
#include "release_policy.hpp"
#include "status.hpp"

namespace streampool::core {

class Pool;
class EngineState;
struct PoolStream;

// What lookup() reports about a live allocation.
struct BlockInfo {
  std::uintptr_t base = 0;
  std::size_t requested_bytes = 0;  // what the program asked for
  std::size_t placed_bytes = 0;     // rounded to the 512-byte placement unit
  Pool* pool = nullptr;
};

// A snapshot of what a host synchronisation will cover: opaque, filled by Engine::ticket_*.
struct SyncTicket {
  std::vector<std::uint64_t> clock;  // per stream slot: ticks known complete once committed
  bool releases = false;             // a synchronize (not a query): apply release thresholds
  // For an event's query or synchronize: the event and its record count when the ticket was
  // taken. The clock counts only if no record came in between (the driver may have answered
  // about the newer record).
  std::optional<EventKey> event;
  std::uint64_t event_sequence = 0;
};

class Engine {
 public:
  explicit Engine(Ordering& ordering);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // --- pools ---------------------------------------------------------------------------
  Status create_pool(const PoolProps& props, std::unique_ptr<Backing> backing, Pool** pool);
  // The pool's handle becomes invalid at once; memory still allocated from it stays valid
  // and is released when freed. Once nothing of it is allocated and all its frees are known
  // complete, the pool is reclaimed: its address reservations go back to its backing, its host
  // memory is freed, and a later pool may get the same handle value (as CUDA's handles are
  // reused). Using a pool on one thread while destroying it on another is a program error.
  Status destroy_pool(Pool* pool);
  bool is_pool(const Pool* pool) const;  // a live handle (never dereferences a bad one)
  // Visits the live pools. No pool is reclaimed while the visit runs, so `visit` may use the
  // pool it is given; it must not create or destroy pools.
  void for_each_pool(const std::function<void(Pool*)>& visit) const;
  const PoolProps& props(const Pool* pool) const;

  // --- allocation ----------------------------------------------------------------------
  // bytes == 0 gives success and *out == nullptr, as CUDA does.
  Status allocate(Pool* pool, std::size_t bytes, StreamKey stream, void** out);
  // Stream-ordered free. invalid_value for a pointer that is not a live allocation start.
  Status free(void* ptr, StreamKey stream);
  // A free whose completion the host already observed (cuMemFree after synchronising).
  Status free_completed(void* ptr);
  bool owns(const void* address) const;  // inside any pool's address space
  bool lookup(const void* address, BlockInfo* info) const;  // the live allocation holding it

  // --- pool control --------------------------------------------------------------------
  Status trim_to(Pool* pool, std::size_t min_bytes_to_keep);
  Status get_attribute(Pool* pool, PoolAttribute attribute, void* value) const;
  Status set_attribute(Pool* pool, PoolAttribute attribute, const void* value);
  PoolStats stats(const Pool* pool) const;
  // Slow, for reports (the out-of-memory report): the pool's free memory, its largest free range
  // and the frees other streams still wait on, under the locks an allocation's slow path takes.
  FreeFigures free_figures(const Pool* pool) const;
  // The `count` largest live allocations (of `pool`, or of every pool when it is null), largest
  // first. A scan of the live table, shard by shard.
  std::vector<BlockInfo> largest_live(const Pool* pool, std::size_t count) const;
  Status set_access(Pool* pool, std::span<const AccessDescriptor> access);
  // The flags granted to a location (owner's own location: read-write).
  Status get_access(const Pool* pool, int location_type, int location_id, int* flags) const;

  // When pools give unused memory back (release_policy.hpp); CUDA's threshold rule by default.
  // Set it before the engine serves allocations (the adapters do, when they create it).
  void set_release_policy(ReleasePolicy policy);

  // Makes the pools of `device` (device memory, mapped by granule; any release threshold) give
  // back whole units that no live block, cached block or pending free touches, the most idle
  // first across all of them, until at least `bytes` went back or nothing unused is left.
  // Returns the bytes given back. For a limit on a device's memory: call it, holding no pool's
  // lock, before an allocation fails or a pool grows past the limit. An allocation whose pool
  // cannot grow calls it itself before it fails.
  std::uint64_t release_unused(int device, std::uint64_t bytes);

  // Defence in depth (see HappensBefore::set_strict_reuse); off by default.
  void set_strict_reuse(bool strict) noexcept;

  // How many stream slots the tracking holds (live streams, and ended ones whose frees are not
  // yet known complete): what its clocks cost. For tests and reports.
  std::size_t stream_slots() const;
  // How many events the tracking holds (HappensBefore::tracked_events). For tests and reports.
  std::size_t tracked_events() const;

  // --- ordering the program makes ------------------------------------------------------
  // An event record: `real_record` makes the real call and says whether it succeeded. The
  // event's tracking changes only then, and under the event's lock, so that it always
  // describes the record the driver used (see happens_before.hpp). Returns that answer.
  template <class RealRecord>
  bool record_event(EventKey event, StreamKey stream, RealRecord&& real_record) {
    std::unique_lock<std::mutex> lock = lock_event(event);
    std::vector<std::uint64_t> position = record_position(stream);  // covers frees made before the call
    if (!real_record()) return false;
    event_recorded_at(event, std::move(position));
    return true;
  }
  // A stream wait: the same, the waiter's clock absorbing the event's after success.
  template <class RealWait>
  bool wait_event(StreamKey waiter, EventKey event, RealWait&& real_wait) {
    std::unique_lock<std::mutex> lock = lock_event(event);
    if (!real_wait()) return false;
    waited_on(waiter, event);
    return true;
  }
  // A record streampool cannot place in a stream's order (into a capture, on a stream it cannot
  // name): if it succeeds, the event proves nothing from then on.
  template <class RealRecord>
  bool record_untracked(EventKey event, RealRecord&& real_record) {
    std::unique_lock<std::mutex> lock = lock_event(event);
    if (!real_record()) return false;
    mark_untracked(event);
    return true;
  }
  // A record or wait that already happened (tests, and callers with nothing to race).
  void event_recorded(EventKey event, StreamKey stream) {
    record_event(event, stream, [] { return true; });
  }
  void stream_waited(StreamKey waiter, EventKey event) {
    wait_event(waiter, event, [] { return true; });
  }
  // The event may be recorded where streampool does not see it (a graph node, a launch
  // attribute, a record inside a capture, another process): it proves nothing until destroyed.
  void event_untracked(EventKey event);
  // The handle now names a new event, or none: whatever it meant is forgotten.
  void event_created(EventKey event);
  void event_destroyed(EventKey event);

  // `releases`: a synchronize (which may also record a marker in the stream first, see
  // HappensBefore::ticket_for_stream); a query passes false (a blocking stream's query may record a
  // marker too, and its answer then waits for it: marker_pending).
  SyncTicket ticket_for_stream(StreamKey stream, bool releases);
  // A query's answer: not ready while the stream's marker is (HappensBefore::marker_pending).
  bool marker_pending(StreamKey stream);
  SyncTicket ticket_for_event(EventKey event, bool releases);
  SyncTicket ticket_for_all(bool releases);  // every stream
  // A context synchronize: the streams of one Ordering::stream_group.
  SyncTicket ticket_for_group(std::uintptr_t group, bool releases);
  void commit(const SyncTicket& ticket);
  // The stream is about to be destroyed: its pending frees get a marker; its key may be reused.
  void stream_destroyed(StreamKey stream);
  // The stream no longer exists and no marker can be recorded on it: its context ended, or a
  // new stream was just created under its key (the old one ended unseen). Its pending frees
  // wait for a host synchronisation of its group.
  void stream_ended(StreamKey stream);

 private:
  std::unique_lock<std::mutex> lock_event(EventKey event);
  std::vector<std::uint64_t> record_position(StreamKey stream);
  void event_recorded_at(EventKey event, std::vector<std::uint64_t> position);
  void waited_on(StreamKey waiter, EventKey event);
  void mark_untracked(EventKey event);
  std::uint64_t release_unused_except(int device, std::uint64_t bytes, const Pool* except);
  [[gnu::noinline]] Status allocate_slow(Pool* pool, PoolStream& share, std::size_t placed, std::size_t bytes,
                                         void** out);
  [[gnu::noinline]] Status allocate_on_legacy(Pool* pool, PoolStream& share, std::size_t placed, std::size_t bytes,
                                              void** out);
  [[gnu::always_inline]] inline Status hand_out_locked(Pool* pool, PoolStream& share, std::uintptr_t address,
                                                      std::size_t placed, std::size_t bytes, void** out);

  std::unique_ptr<EngineState> state_;
};

}  // namespace streampool::core
