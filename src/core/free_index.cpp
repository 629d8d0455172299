#include "free_index.hpp"

#include <algorithm>
#include <cassert>

namespace streampool::core {

void FreeIndex::remove(AddressMap::iterator it) {
  by_size_.erase({it->second.bytes, it->first});
  free_bytes_ -= it->second.bytes;
  by_address_.erase(it);
}

// Moves a range's start and/or size, reusing both tree nodes. (GCC 12 sees a null pointer in
// node_handle::value() that the emptiness check excludes: a known false positive.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
void FreeIndex::resize(AddressMap::iterator it, std::uintptr_t new_address, std::size_t new_bytes) {
  auto size_node = by_size_.extract({it->second.bytes, it->first});
  free_bytes_ = free_bytes_ - it->second.bytes + new_bytes;
  if (size_node.empty()) {  // cannot happen: both orders always hold the same ranges
    by_size_.emplace(new_bytes, new_address);
  } else {
    size_node.value() = {new_bytes, new_address};
    by_size_.insert(std::move(size_node));
  }
  if (new_address != it->first) {
    auto address_node = by_address_.extract(it);
    address_node.key() = new_address;
    address_node.mapped().bytes = new_bytes;
    by_address_.insert(std::move(address_node));
  } else {
    it->second.bytes = new_bytes;
  }
}
#pragma GCC diagnostic pop

void FreeIndex::insert(std::uintptr_t address, std::size_t bytes, const Requirements& requirements) {
  assert(bytes > 0);
  auto next = by_address_.lower_bound(address);
  auto prev = next == by_address_.begin() ? by_address_.end() : std::prev(next);
  const bool joins_prev = prev != by_address_.end() && prev->first + prev->second.bytes == address;
  const bool joins_next = next != by_address_.end() && next->first == address + bytes;

  const auto mergeable = [&](const Requirements& neighbour) { return neighbour.same_as(requirements); };
  Requirements with_prev = requirements;
  const bool merge_prev = joins_prev && mergeable(prev->second.requirements) &&
                          with_prev.absorb(prev->second.requirements);
  if (merge_prev) {
    Requirements with_both = with_prev;
    if (joins_next && mergeable(next->second.requirements) && with_both.absorb(next->second.requirements)) {
      const std::size_t total = prev->second.bytes + bytes + next->second.bytes;
      remove(next);
      prev->second.requirements = with_both;
      resize(prev, prev->first, total);
      return;
    }
    prev->second.requirements = with_prev;
    resize(prev, prev->first, prev->second.bytes + bytes);
    return;
  }
  Requirements with_next = requirements;
  if (joins_next && mergeable(next->second.requirements) && with_next.absorb(next->second.requirements)) {
    next->second.requirements = with_next;
    resize(next, address, next->second.bytes + bytes);
    return;
  }
  by_address_.emplace(address, Entry{bytes, requirements});
  by_size_.emplace(bytes, address);
  free_bytes_ += bytes;
}

void FreeIndex::take(std::uintptr_t address, std::size_t bytes) {
  auto it = by_address_.upper_bound(address);
  assert(it != by_address_.begin());
  --it;
  const std::uintptr_t start = it->first;
  const std::uintptr_t end = start + it->second.bytes;
  assert(address >= start && address + bytes <= end);
  if (address == start && address + bytes == end) {
    remove(it);
  } else if (address == start) {
    resize(it, address + bytes, end - (address + bytes));
  } else {
    const Requirements requirements = it->second.requirements;
    resize(it, start, address - start);
    if (address + bytes < end) {
      by_address_.emplace(address + bytes, Entry{end - (address + bytes), requirements});
      by_size_.emplace(end - (address + bytes), address + bytes);
      free_bytes_ += end - (address + bytes);
    }
  }
}

void FreeIndex::take_span(std::uintptr_t address, std::size_t bytes) {
  while (bytes > 0) {
    auto range = range_containing(address);
    assert(range);
    if (!range) return;
    const std::size_t part = std::min<std::size_t>(bytes, range->address + range->bytes - address);
    take(address, part);
    address += part;
    bytes -= part;
  }
}

void FreeIndex::merge_all() {
  auto it = by_address_.begin();
  while (it != by_address_.end()) {
    auto next = std::next(it);
    if (next == by_address_.end()) break;
    Requirements merged = it->second.requirements;
    if (it->first + it->second.bytes == next->first && merged.same_as(next->second.requirements) &&
        merged.absorb(next->second.requirements)) {
      const std::size_t total = it->second.bytes + next->second.bytes;
      remove(next);
      it->second.requirements = merged;
      resize(it, it->first, total);
    } else {
      it = next;
    }
  }
}

std::optional<FreeRange> FreeIndex::range_ending_at(std::uintptr_t end) const {
  auto it = by_address_.lower_bound(end);
  if (it == by_address_.begin()) return std::nullopt;
  --it;
  if (it->first + it->second.bytes != end) return std::nullopt;
  return FreeRange{it->first, it->second.bytes, it->second.requirements};
}

std::optional<FreeRange> FreeIndex::range_containing(std::uintptr_t address) const {
  auto it = by_address_.upper_bound(address);
  if (it == by_address_.begin()) return std::nullopt;
  --it;
  if (address >= it->first + it->second.bytes) return std::nullopt;
  return FreeRange{it->first, it->second.bytes, it->second.requirements};
}

}  // namespace streampool::core
