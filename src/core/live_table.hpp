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
#include <mutex>
#include <optional>
#include <vector>

#include "spin_lock.hpp"

namespace streampool::core {

class Pool;
struct StreamState;

struct LiveBlock {
  std::uintptr_t address = 0;   // 0 marks an empty slot
  std::size_t placed_bytes = 0;
  std::size_t requested_bytes = 0;
  Pool* pool = nullptr;
  StreamState* allocated_on = nullptr;  // the allocating stream (see Engine::free)
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

    // Bits below the shard's: the low bits of a multiplicative hash are the address's own low
    // bits, which 1 MiB-aligned blocks share (they would all probe from slot 0).
    std::size_t home(std::uint64_t hash) const { return (hash >> 32) & (slots.size() - 1); }
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

// Inline: the same-stream pair inserts and erases once each.
inline void LiveTable::Shard::place(const LiveBlock& block, std::uint64_t hash) {
  for (std::size_t i = home(hash);; i = (i + 1) & (slots.size() - 1)) {
    if (slots[i].address == 0) {
      slots[i] = block;
      return;
    }
  }
}

inline std::size_t LiveTable::Shard::locate(std::uintptr_t address, std::uint64_t hash) const {
  if (slots.empty()) return 0;
  for (std::size_t i = home(hash);; i = (i + 1) & (slots.size() - 1)) {
    if (slots[i].address == address) return i;
    if (slots[i].address == 0) return slots.size();
  }
}

inline void LiveTable::insert(const LiveBlock& block) {
  const std::uint64_t hash = hash_of(block.address);
  Shard& shard = shard_for(hash);
  std::lock_guard guard(shard.lock);
  if ((shard.count + 1) * 4 > shard.slots.size() * 3) shard.grow();  // load factor <= 3/4
  shard.place(block, hash);
  ++shard.count;
}

inline std::optional<LiveBlock> LiveTable::erase(std::uintptr_t address) {
  const std::uint64_t hash = hash_of(address);
  Shard& shard = shard_for(hash);
  std::lock_guard guard(shard.lock);
  std::size_t hole = shard.locate(address, hash);
  if (hole >= shard.slots.size()) return std::nullopt;
  const LiveBlock found = shard.slots[hole];
  const std::size_t mask = shard.slots.size() - 1;
  // Backward-shift deletion keeps every entry reachable from its home slot.
  for (std::size_t next = (hole + 1) & mask; shard.slots[next].address != 0; next = (next + 1) & mask) {
    const std::size_t home = shard.home(hash_of(shard.slots[next].address));
    const bool stays = ((next - home) & mask) < ((next - hole) & mask);
    if (!stays) {
      shard.slots[hole] = shard.slots[next];
      hole = next;
    }
  }
  shard.slots[hole] = LiveBlock{};
  --shard.count;
  return found;
}

}  // namespace streampool::core
