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
#include <span>
#include <vector>

#include "backing.hpp"
#include "keys.hpp"
#include "ordering.hpp"
#include "pool_props.hpp"
#include "status.hpp"

namespace streampool::core {

class Pool;
class EngineState;

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
  Status set_access(Pool* pool, std::span<const AccessDescriptor> access);
  // The flags granted to a location (owner's own location: read-write).
  Status get_access(const Pool* pool, int location_type, int location_id, int* flags) const;

  // --- ordering the program makes ------------------------------------------------------
  // Call before the real cuEventRecord: the event then covers every free made so far.
  void event_recorded(EventKey event, StreamKey stream);
  // Call after the real cuStreamWaitEvent succeeded.
  void stream_waited(StreamKey waiter, EventKey event);
  SyncTicket ticket_for_stream(StreamKey stream, bool releases);
  SyncTicket ticket_for_event(EventKey event, bool releases);
  SyncTicket ticket_for_all(bool releases);  // every stream
  // A context synchronize: the streams of one Ordering::stream_group.
  SyncTicket ticket_for_group(std::uintptr_t group, bool releases);
  void commit(const SyncTicket& ticket);
  // The stream is about to be destroyed: its pending frees get a marker; its key may be reused.
  void stream_destroyed(StreamKey stream);
  void event_destroyed(EventKey event);

 private:
  std::unique_ptr<EngineState> state_;
};

}  // namespace streampool::core
