// HappensBefore: what the host knows about the order of work on its streams.
//
// Every stream has a tick. A free is tagged with its stream's tick at the moment of the call,
// and any act that "cuts" the stream (an event record, a sync ticket, a marker) takes the
// current tick and advances it, so that the cut covers exactly the frees made before it.
// Each stream also carries a vector clock: for every other stream, the highest tick it is
// known to be ordered after. Clocks flow as the program's own calls dictate:
//   event record on s     the event takes s's clock (and s's cut);
//   stream wait on event  the waiter's clock absorbs the event's;
//   legacy default stream it waits for, and is waited on by, every blocking stream of its
//                         group: work queued from now on is ordered after the partner's
//                         frees so far (used for reuse, never for what is already queued);
//   host synchronisation  everything the synchronised stream or event had seen is complete.
// An event's tracking always describes the record the driver actually used: a record changes it
// only after the real call succeeded, and record, wait, query and synchronize of one event are
// ordered against each other by the event's lock (held across the real record and wait; a
// query or synchronize, which may block, checks afterwards that no record came in between).
// An event that something streampool does not see may record (a graph node, a launch
// attribute, a capture, another process) proves nothing until it is destroyed.
// An allocation may rely on the legacy stream's implicit synchronisation only by turning it into
// a real wait on a marker (Pool inserts it), so that a host synchronisation of the allocating
// stream proves the reused memory free, as on NVIDIA's driver.
// Completion is kept apart from ordering: host_completed (the program observed it: any stream
// may reuse those frees, whatever the pool's flags) and gpu_completed (streampool's own markers
// observed it: reuse only where the pool allows opportunistic reuse).
// Thread-safe. The fast path only reads a stream's tick (one atomic load); everything else
// takes the tracker's mutex, and is reached from slow paths and from the program's event and
// synchronisation calls, which cost hundreds of nanoseconds in the driver anyway.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "keys.hpp"
#include "ordering.hpp"

namespace streampool::core {

using Clock = std::vector<std::uint64_t>;  // indexed by stream slot; missing entries are 0

void merge_into(Clock& into, const Clock& from);

struct alignas(64) StreamState {  // the tick is read by every free on the stream
  StreamKey key = 0;
  std::uint32_t slot = 0;
  StreamKind kind = StreamKind::blocking;
  std::uintptr_t group = 0;
  std::atomic<std::uint64_t> tick{1};  // frees made now carry this tick
  std::atomic<std::uint64_t> freed_at{0};  // the tick of the stream's latest free

  // Guarded by the tracker's mutex.
  bool dead = false;
  std::uint64_t final_tick = 0;  // once dead: the tick of its last frees
  // Its frees up to here precede a marker of streampool's in it. Written under the tracker's
  // mutex; the legacy stream's allocation path reads it without (Engine::allocate_on_legacy).
  std::atomic<std::uint64_t> anchored{0};
  // The legacy stream's allocations since its last marker that took other memory because its own
  // frees waited for one, and their bytes (HappensBefore::anchor_own_frees batches its markers by them).
  std::uint32_t misses_since_marker = 0;
  std::uint64_t missed_bytes_since_marker = 0;
  Clock clock;  // ticks of other streams this stream is ordered after
  struct PendingMarker {
    Marker marker;
    Clock covers;  // the stream's effective clock (own cut included) when it was recorded
  };
  std::optional<PendingMarker> marker;
};

// What an event's tracking looked like when a query or synchronize of it began.
struct EventSnapshot {
  Clock clock;             // empty: the event proves nothing
  std::uint64_t sequence = 0;  // the event's record count then
};

// What a stream may reuse now, per slot of the freeing stream (own slot: unbounded).
struct ReuseBounds {
  Clock proven;   // frees known complete, or ordered before the stream by real waits in it
  Clock implied;  // frees before the stream only through the legacy stream's implicit order
};

class HappensBefore {
 public:
  explicit HappensBefore(Ordering& ordering);
  ~HappensBefore();

  // The live state of a stream, created on first sight.
  StreamState* stream(StreamKey key);
  // The tick a free on `stream` carries now; notes that the stream has freed (see ticket_for_stream).
  static std::uint64_t free_tick(StreamState* stream) noexcept;

  // --- events: the caller holds lock_event(event) across the real call and these steps ----
  std::unique_lock<std::mutex> lock_event(EventKey event);
  // Before the real record: the position the record will cover (the stream's frees so far).
  Clock record_position(StreamKey stream);
  // After the real record succeeded.
  void event_recorded(EventKey event, Clock position);
  // After the real wait succeeded.
  void stream_waited(StreamKey waiter, EventKey event);
  // The event may be recorded where streampool does not see it: it proves nothing from now on.
  void event_untracked(EventKey event);
  // The handle names a new event (created) or none (destroyed): forget what it meant.
  void event_forgotten(EventKey event);
  EventSnapshot snapshot_event(EventKey event);
  // Whether a query or synchronize that began at `snapshot` is still about the same record.
  bool same_record(EventKey event, std::uint64_t sequence);

  // --- streams --------------------------------------------------------------------------
  // The stream is about to be destroyed: mark its frees with a marker, forget its key.
  void stream_destroyed(StreamKey key);
  // The stream is gone already (its context ended, or a new stream was just created under its
  // key): no marker; its frees keep waiting for a host synchronisation of its group.
  void stream_ended(StreamKey key);

  // What a host synchronisation (`synchronize`) or a successful query of the stream proves. A
  // free on a stream the legacy stream's implicit order binds (blocking, per-thread default,
  // legacy) waits for the partners' work before it, which nothing of the stream's own may
  // follow: a synchronize first records a marker in the stream, so that it waits for that work
  // too; a query of the legacy stream records nothing and proves such frees only up to the
  // stream's last marker; a query of a blocking stream records one as a synchronize does (see
  // marker_pending).
  Clock ticket_for_stream(StreamKey key, bool synchronize);
  // Whether a blocking stream's marker has yet to complete (polled now). The driver answers a
  // query of a blocking stream from the stream's own work: an event record in it that still waits
  // for the legacy stream's earlier work does not make the answer CUDA_ERROR_NOT_READY (measured
  // on driver 580). A query of such a stream is not ready while its marker is not: the marker
  // waits for the legacy work its frees follow, as NVIDIA's frees and allocations do.
  bool marker_pending(StreamKey key);
  Clock ticket_for_group(std::optional<std::uintptr_t> group);  // nullopt: every stream
  void commit_host_completion(const Clock& completed);

  ReuseBounds reuse_bounds(StreamState* stream, bool follow_events, bool opportunistic);
  // Defence in depth: every reuse of another stream's free that no completion proves carries a
  // real wait on a marker covering it, even where the program's own waits order it.
  void set_strict_reuse(bool strict) noexcept { strict_reuse_.store(strict, std::memory_order_relaxed); }
  // Polls `stream`'s marker and, when its frees up to `needed_tick` are not covered by one,
  // records a new one (opportunistic reuse: the answer comes on a later call).
  void refresh_marker(StreamState* stream, std::uint64_t needed_tick);
  // Makes `waiter` wait for `freer`'s frees up to `needed_tick` (an inserted dependency).
  bool insert_dependency(StreamState* waiter, StreamState* freer, std::uint64_t needed_tick);
  // A block allocated on `allocator` is freed on `freer`. Where the allocator is the legacy
  // stream and the freer a blocking stream of its context, the block's memory may have come from
  // a free of the legacy stream that only its implicit order put after other streams' work: safe
  // for the legacy stream's later work, but the program may free the block on `freer` with no
  // real operation between (the allocation enqueues nothing), and `freer` reuses its own frees at
  // once. So `freer` waits for a marker of the legacy stream first. False when that wait is needed
  // and could not be made: the caller then counts the free as the legacy stream's.
  bool order_free_after_allocation(StreamState* freer, StreamState* allocator);

  // --- the legacy stream's reuse of its own frees ------------------------------------------
  // The legacy stream's frees are ordered after every blocking stream's earlier work by its
  // implicit order alone, and under streampool a free or an allocation enqueues nothing. On
  // NVIDIA's driver the allocation that takes such memory again is a stream operation after that
  // free: a blocking stream's later work (its kernels, an event recorded in it) follows it, hence
  // follows the kernel that last used the memory. Under streampool it follows only the legacy
  // stream's earlier real work, which may precede that kernel: a block handed out again on the
  // legacy stream from a free no marker follows, then used on a blocking stream, runs at once with
  // its previous owner's kernel. So the legacy stream hands out again only its frees that a marker
  // of its own follows (one covers every free before it), wherever a blocking stream may exist.
  // Markers come in batches: until kAnchorBatchMisses allocations (or kAnchorBatchBytes bytes of
  // them) took other memory because the frees they could have reused waited for a marker, the
  // legacy stream takes other memory (its frees a marker already follows, or new memory); then one
  // marker covers every free so far. A loop of pairs records one marker per batch, not one per
  // pair, and holds at most a batch of memory more.
  static constexpr std::uint32_t kAnchorBatchMisses = 8;
  static constexpr std::uint64_t kAnchorBatchBytes = std::uint64_t{8} << 20;
  // Whether a blocking stream may exist (Ordering::implicit_partners): only then does the legacy
  // stream's reuse of its own frees need a marker.
  bool implicit_partners_possible() const noexcept {
    return partners_ == nullptr || partners_->load(std::memory_order_relaxed);
  }
  // The tick up to which the legacy stream's own frees may be handed out again on it now:
  // UINT64_MAX where no blocking stream can exist; else the frees a marker follows or that are
  // known complete. First records a marker covering every free so far where frees wait for one
  // and the batch is full (look), or counts `bytes` as a miss into the batch (miss: the caller is
  // about to take other memory), or in any case (force: the pool can give nothing else); unless no
  // marker can be recorded.
  enum class Anchor { look, miss, force };
  std::uint64_t anchor_own_frees(StreamState* legacy, Anchor mode, std::uint64_t bytes = 0);

  // Changes whenever completion knowledge grows (host synchronisation, a marker seen complete).
  std::uint64_t completion_version() const noexcept { return completion_version_.load(std::memory_order_acquire); }
  std::size_t slot_count() const;
  // How many events the tracking holds state for (recorded, waited on or untracked, not yet
  // destroyed or created again): a program whose events come and go must hold a constant number.
  std::size_t tracked_events() const;
  // The stream that owns a slot (live or destroyed).
  StreamState* by_slot(std::uint32_t slot) const;
  // Per slot, the frees known complete (by the host, and by markers where opportunistic).
  Clock completed(bool opportunistic) const;
  // For reports: the stream that holds a slot now, and whether it ended. False for no such slot.
  bool slot_owner(std::uint32_t slot, StreamKey* key, bool* dead) const;

 private:
  struct EventState {
    Clock clock;
    std::uint64_t sequence = 0;  // real records seen (and untracked ones), for snapshots
    bool untracked = false;      // recorded where streampool cannot see: proves nothing
  };
  static constexpr std::size_t kEventLocks = 64;

  StreamState* stream_locked(StreamKey key);
  StreamState* reclaim_slot_locked();
  void end_stream_locked(StreamState* stream, bool record_marker);
  std::uint64_t cut(StreamState* stream);
  Clock position_locked(StreamState* stream);
  Clock implied_clock_locked(StreamState* stream);
  static bool implicitly_ordered(const StreamState* stream);
  bool insert_dependency_locked(StreamState* waiter, StreamState* freer, std::uint64_t needed_tick);
  void poll_marker_locked(StreamState* stream);
  bool record_marker_locked(StreamState* stream);
  void drop_marker_locked(StreamState* stream);
  static void raise(Clock& clock, std::uint32_t slot, std::uint64_t tick);
  static std::uint64_t at(const Clock& clock, std::uint32_t slot);

  Ordering& ordering_;
  mutable std::mutex mutex_;
  std::unordered_map<StreamKey, StreamState*> live_;
  std::vector<std::unique_ptr<StreamState>> all_;  // by slot; a dead one stays until its frees are complete
  std::vector<StreamState*> ended_;                 // dead, their slots not yet reclaimed
  std::unordered_map<EventKey, EventState> events_;
  std::array<std::mutex, kEventLocks> event_locks_;  // taken before mutex_, never after
  std::unordered_map<std::uintptr_t, StreamState*> legacy_by_group_;
  Clock host_completed_;
  Clock gpu_completed_;
  std::atomic<std::uint64_t> completion_version_{0};
  std::atomic<bool> strict_reuse_{false};
  const std::atomic<bool>* const partners_;  // Ordering::implicit_partners
};

// Bumped whenever a stream key may come to mean another stream (or an engine goes away):
// caches keyed by stream key check it.
inline std::atomic<std::uint64_t> g_stream_generation{1};
inline std::uint64_t stream_generation() noexcept { return g_stream_generation.load(std::memory_order_acquire); }
inline void advance_stream_generation() noexcept { g_stream_generation.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace streampool::core
