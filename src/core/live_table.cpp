#include "live_table.hpp"

#include <mutex>

namespace streampool::core {

static_assert(1024 == (1u << 10), "shard_for takes the top 10 bits of the hash");

LiveTable::LiveTable() : shards_(new Shard[kShardCount]) {}

void LiveTable::Shard::grow() {
  std::vector<LiveBlock> old = std::move(slots);
  slots.assign(old.empty() ? 8 : old.size() * 2, LiveBlock{});
  for (const LiveBlock& block : old) {
    if (block.address != 0) place(block, hash_of(block.address));
  }
}

std::optional<LiveBlock> LiveTable::find(std::uintptr_t address) const {
  const std::uint64_t hash = hash_of(address);
  Shard& shard = shard_for(hash);
  std::lock_guard guard(shard.lock);
  const std::size_t at = shard.locate(address, hash);
  if (at >= shard.slots.size()) return std::nullopt;
  return shard.slots[at];
}

std::optional<LiveBlock> LiveTable::find_containing(std::uintptr_t address) const {
  if (auto exact = find(address)) return exact;
  std::optional<LiveBlock> found;
  for_each([&](const LiveBlock& block) {
    if (address >= block.address && address < block.address + block.placed_bytes) found = block;
  });
  return found;
}

void LiveTable::for_each(const std::function<void(const LiveBlock&)>& visit) const {
  for (std::size_t s = 0; s < kShardCount; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard guard(shard.lock);
    for (const LiveBlock& block : shard.slots) {
      if (block.address != 0) visit(block);
    }
  }
}

}  // namespace streampool::core
