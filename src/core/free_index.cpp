#include "free_index.hpp"

#include <algorithm>
#include <cassert>

namespace streampool::core {

void FreeIndex::add(std::uintptr_t address, std::size_t bytes, std::uint64_t tick) {
  by_address_.emplace(address, Entry{bytes, tick});
  by_size_.emplace(bytes, address);
  free_bytes_ += bytes;
}

void FreeIndex::remove(std::map<std::uintptr_t, Entry>::iterator it) {
  by_size_.erase({it->second.bytes, it->first});
  free_bytes_ -= it->second.bytes;
  by_address_.erase(it);
}

void FreeIndex::insert(std::uintptr_t address, std::size_t bytes, std::uint64_t tick) {
  assert(bytes > 0);
  auto next = by_address_.lower_bound(address);
  if (next != by_address_.end() && next->first == address + bytes) {
    bytes += next->second.bytes;
    tick = std::max(tick, next->second.tick);
    remove(next);
  }
  auto after = by_address_.lower_bound(address);
  if (after != by_address_.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second.bytes == address) {
      address = prev->first;
      bytes += prev->second.bytes;
      tick = std::max(tick, prev->second.tick);
      remove(prev);
    }
  }
  add(address, bytes, tick);
}

std::optional<FreeRange> FreeIndex::best_fit(std::size_t bytes, std::uint64_t max_tick) const {
  for (auto it = by_size_.lower_bound({bytes, 0}); it != by_size_.end(); ++it) {
    const Entry& entry = by_address_.find(it->second)->second;
    if (entry.tick <= max_tick) return FreeRange{it->second, it->first, entry.tick};
  }
  return std::nullopt;
}

void FreeIndex::take(std::uintptr_t address, std::size_t bytes) {
  auto it = by_address_.upper_bound(address);
  assert(it != by_address_.begin());
  --it;
  const std::uintptr_t start = it->first;
  const std::size_t range_bytes = it->second.bytes;
  const std::uint64_t tick = it->second.tick;
  assert(address >= start && address + bytes <= start + range_bytes);
  remove(it);
  if (address > start) add(start, address - start, tick);
  const std::uintptr_t end = start + range_bytes;
  if (address + bytes < end) add(address + bytes, end - (address + bytes), tick);
}

std::optional<FreeRange> FreeIndex::take_range_at(std::uintptr_t address) {
  auto it = by_address_.find(address);
  if (it == by_address_.end()) return std::nullopt;
  FreeRange range{it->first, it->second.bytes, it->second.tick};
  remove(it);
  return range;
}

std::optional<FreeRange> FreeIndex::range_ending_at(std::uintptr_t end) const {
  auto it = by_address_.lower_bound(end);
  if (it == by_address_.begin()) return std::nullopt;
  --it;
  if (it->first + it->second.bytes != end) return std::nullopt;
  return FreeRange{it->first, it->second.bytes, it->second.tick};
}

std::optional<FreeRange> FreeIndex::range_containing(std::uintptr_t address) const {
  auto it = by_address_.upper_bound(address);
  if (it == by_address_.begin()) return std::nullopt;
  --it;
  if (address >= it->first + it->second.bytes) return std::nullopt;
  return FreeRange{it->first, it->second.bytes, it->second.tick};
}

}  // namespace streampool::core
