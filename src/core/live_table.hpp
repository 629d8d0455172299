// LiveTable: every live allocation, found by its start address.
//
// A free names only a pointer, and may come from any stream or thread, so the block behind
// it must be found without a lock that all streams share. The table is split into shards by a
// hash of the address; each shard is a small open-addressing table under its own spin lock.
// A thread that keeps reusing the same block keeps hitting the same shard, whose cache line
// then stays in that thread's core. Deletion shifts entries back (no tombstones).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "spin_lock.hpp"

namespace streampool::core {

class Pool;

struct LiveBlock {
  std::uintptr_t address = 0;   // 0 marks an empty slot
  std::size_t placed_bytes = 0;
  std::size_t requested_bytes = 0;
  Pool* pool = nullptr;
};

class LiveTable {
 public:
  LiveTable();
  void insert(const LiveBlock& block);
  std::optional<LiveBlock> erase(std::uintptr_t address);
  std::optional<LiveBlock> find(std::uintptr_t address) const;
  // The live block containing `address` (an interior pointer): a scan, for rare queries.
  std::optional<LiveBlock> find_containing(std::uintptr_t address) const;
  void for_each(const std::function<void(const LiveBlock&)>& visit) const;

 private:
  static constexpr std::size_t kShardCount = 1024;

  struct alignas(64) Shard {
    mutable SpinLock lock;
    std::vector<LiveBlock> slots;  // power-of-two size
    std::size_t count = 0;

    std::size_t home(std::uint64_t hash) const { return hash & (slots.size() - 1); }
    void grow();
    void place(const LiveBlock& block, std::uint64_t hash);
    std::size_t locate(std::uintptr_t address, std::uint64_t hash) const;  // slots.size() if absent
  };

  static std::uint64_t hash_of(std::uintptr_t address) noexcept {
    return (address >> 9) * 0x9E3779B97F4A7C15ull;
  }
  Shard& shard_for(std::uint64_t hash) const { return shards_[hash >> 54]; }  // top 10 bits

  std::unique_ptr<Shard[]> shards_;
};

}  // namespace streampool::core
