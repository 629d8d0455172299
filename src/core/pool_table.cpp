#include "pool_table.hpp"

#include <algorithm>
#include <mutex>
#include <new>

namespace streampool::core {

namespace {

constexpr std::align_val_t kPoolAlignment{alignof(Pool)};

}  // namespace

PoolTable::~PoolTable() {
  clear();
  for (void* storage : spare_) ::operator delete(storage, kPoolAlignment);
}

Pool* PoolTable::create(const PoolProps& props, std::unique_ptr<Backing> backing, HappensBefore& order,
                        AddressSpace::RegionListener on_region) {
  std::unique_lock guard(mutex_);
  pools_.reserve(pools_.size() + 1);  // nothing below may fail once the pool exists
  const bool reused = !spare_.empty();
  void* storage = reused ? spare_.back() : ::operator new(sizeof(Pool), kPoolAlignment);
  if (reused) spare_.pop_back();
  Pool* pool = nullptr;
  try {
    pool = new (storage) Pool(props, std::move(backing), order, std::move(on_region));
  } catch (...) {
    if (reused) {
      spare_.push_back(storage);  // into the place it just left: no reallocation
    } else {
      ::operator delete(storage, kPoolAlignment);
    }
    throw;
  }
  pools_.push_back(pool);
  return pool;
}

void PoolTable::for_each(const std::function<void(Pool*)>& visit) const {
  std::shared_lock guard(mutex_);
  for (Pool* pool : pools_) visit(pool);
}

void PoolTable::reclaim(Pool* pool) {
  {
    std::unique_lock guard(mutex_);
    auto it = std::find(pools_.begin(), pools_.end(), pool);
    if (it == pools_.end()) return;
    *it = pools_.back();
    pools_.pop_back();
  }
  // Outside the lock: giving the address space back calls the driver. Nobody else can reach the
  // pool any more: its handle is gone, it has nothing allocated, and it is off the table.
  pool->~Pool();
  advance_stream_generation();  // before the storage can hold another pool
  give_back_storage(pool);
}

void PoolTable::give_back_storage(void* storage) noexcept {
  std::unique_lock guard(mutex_);
  try {
    spare_.push_back(storage);
  } catch (...) {
    ::operator delete(storage, kPoolAlignment);
  }
}

void PoolTable::clear() {
  std::vector<Pool*> pools;
  {
    std::unique_lock guard(mutex_);
    pools.swap(pools_);
  }
  for (Pool* pool : pools) pool->~Pool();
  advance_stream_generation();
  for (Pool* pool : pools) give_back_storage(pool);
}

std::size_t PoolTable::size() const {
  std::shared_lock guard(mutex_);
  return pools_.size();
}

std::size_t PoolTable::spare_count() const {
  std::shared_lock guard(mutex_);
  return spare_.size();
}

}  // namespace streampool::core
