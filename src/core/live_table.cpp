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

void LiveTable::Shard::place(const LiveBlock& block, std::uint64_t hash) {
  for (std::size_t i = home(hash);; i = (i + 1) & (slots.size() - 1)) {
    if (slots[i].address == 0) {
      slots[i] = block;
      return;
    }
  }
}

std::size_t LiveTable::Shard::locate(std::uintptr_t address, std::uint64_t hash) const {
  if (slots.empty()) return 0;
  for (std::size_t i = home(hash);; i = (i + 1) & (slots.size() - 1)) {
    if (slots[i].address == address) return i;
    if (slots[i].address == 0) return slots.size();
  }
}

void LiveTable::insert(const LiveBlock& block) {
  const std::uint64_t hash = hash_of(block.address);
  Shard& shard = shard_for(hash);
  std::lock_guard guard(shard.lock);
  if ((shard.count + 1) * 4 > shard.slots.size() * 3) shard.grow();  // load factor <= 3/4
  shard.place(block, hash);
  ++shard.count;
}

std::optional<LiveBlock> LiveTable::erase(std::uintptr_t address) {
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
