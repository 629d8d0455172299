// PoolTable: the pools an engine holds (live, and destroyed ones still draining) and the
// storage of the ones it has reclaimed.
//
// A destroyed pool stays until it has drained (pool.hpp); then reclaim() destroys it, which gives
// its address reservations back to its backing and frees its host memory, and keeps its storage
// for the next pool created. Reusing storage means a new pool may get a reclaimed pool's handle
// value, as CUDA's own handles are reused; it also bounds the distinct handle values, and so the
// handle set's slots, by the most pools that ever existed at once, however many come and go.
// Caches keyed by a pool's address stay right because reclaiming advances the stream
// generation before the storage can be reused (happens_before.hpp).
//
// Walks hold a shared lock, so no pool is reclaimed under a walker; creating and reclaiming
// take it exclusively. A walker must not create or destroy pools.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <vector>

#include "pool.hpp"

namespace streampool::core {

class PoolTable {
 public:
  PoolTable() = default;
  ~PoolTable();  // destroys every pool still held
  PoolTable(const PoolTable&) = delete;
  PoolTable& operator=(const PoolTable&) = delete;

  Pool* create(const PoolProps& props, std::unique_ptr<Backing> backing, HappensBefore& order,
               AddressSpace::RegionListener on_region);
  void for_each(const std::function<void(Pool*)>& visit) const;
  // A drained pool (one that Pool told so): destroyed now, its storage kept for reuse.
  void reclaim(Pool* pool);
  void clear();  // destroys every pool (the engine is going away)

  std::size_t size() const;         // pools held: live and draining
  std::size_t spare_count() const;  // storage kept for the next pools

 private:
  void give_back_storage(void* storage) noexcept;

  mutable std::shared_mutex mutex_;
  std::vector<Pool*> pools_;
  std::vector<void*> spare_;
};

}  // namespace streampool::core
