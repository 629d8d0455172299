#include "free_index.hpp"

#include <algorithm>
#include <cassert>

namespace streampool::core {

void FreeIndex::link(std::uint32_t index) {
  Node& node = nodes_[index];
  node.bin = static_cast<std::uint16_t>(bin_of(node.bytes));
  node.prev = kNone;
  node.next = heads_[node.bin];
  if (node.next != kNone) nodes_[node.next].prev = index;
  heads_[node.bin] = index;
  bitmap_[node.bin / 64] |= std::uint64_t{1} << (node.bin % 64);
}

void FreeIndex::unlink(std::uint32_t index) {
  Node& node = nodes_[index];
  if (node.prev != kNone) {
    nodes_[node.prev].next = node.next;
  } else {
    heads_[node.bin] = node.next;
    if (node.next == kNone) bitmap_[node.bin / 64] &= ~(std::uint64_t{1} << (node.bin % 64));
  }
  if (node.next != kNone) nodes_[node.next].prev = node.prev;
}

std::uint32_t FreeIndex::add(std::uintptr_t address, std::size_t bytes, const Requirements& requirements) {
  std::uint32_t index;
  if (!spare_.empty()) {
    index = spare_.back();
    spare_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  Node& node = nodes_[index];
  node.address = address;
  node.bytes = bytes;
  node.requirements = requirements;
  node.live = true;
  link(index);
  by_start_.insert(address, index);
  by_end_.insert(address + bytes, index);
  ++count_;
  free_bytes_ += bytes;
  return index;
}

void FreeIndex::remove(std::uint32_t index) {
  Node& node = nodes_[index];
  unlink(index);
  by_start_.erase(node.address);
  by_end_.erase(node.address + node.bytes);
  free_bytes_ -= node.bytes;
  --count_;
  node.live = false;
  spare_.push_back(index);
}

// A range's new start and size: the maps and the size class follow.
void FreeIndex::reshape(std::uint32_t index, std::uintptr_t address, std::size_t bytes) {
  Node& node = nodes_[index];
  if (address != node.address) {
    by_start_.erase(node.address);
    by_start_.insert(address, index);
  }
  if (address + bytes != node.address + node.bytes) {
    by_end_.erase(node.address + node.bytes);
    by_end_.insert(address + bytes, index);
  }
  free_bytes_ = free_bytes_ - node.bytes + bytes;
  const bool new_bin = bin_of(bytes) != node.bin;
  if (new_bin) unlink(index);
  node.address = address;
  node.bytes = bytes;
  if (new_bin) link(index);
}

void FreeIndex::insert(std::uintptr_t address, std::size_t bytes, const Requirements& requirements) {
  assert(bytes > 0);
  const auto prev = by_end_.find(address);
  const auto next = by_start_.find(address + bytes);
  const bool with_prev = prev && nodes_[*prev].requirements.same_as(requirements);
  const bool with_next = next && nodes_[*next].requirements.same_as(requirements);
  if (with_prev && with_next) {
    const std::size_t total = nodes_[*prev].bytes + bytes + nodes_[*next].bytes;
    remove(*next);
    reshape(*prev, nodes_[*prev].address, total);
  } else if (with_prev) {
    reshape(*prev, nodes_[*prev].address, nodes_[*prev].bytes + bytes);
  } else if (with_next) {
    reshape(*next, address, nodes_[*next].bytes + bytes);
  } else {
    add(address, bytes, requirements);
  }
}

void FreeIndex::take(std::uintptr_t address, std::size_t bytes) { take_inside(address, address, bytes); }

void FreeIndex::take_inside(std::uintptr_t range_start, std::uintptr_t address, std::size_t bytes) {
  const auto at = by_start_.find(range_start);
  assert(at);
  if (at) take_from(*at, address, bytes);
}

void FreeIndex::take_from(std::uint32_t index, std::uintptr_t address, std::size_t bytes) {
  const Node node = nodes_[index];
  const std::uintptr_t end = node.address + node.bytes;
  assert(address >= node.address && address + bytes <= end);
  if (address == node.address && address + bytes == end) {
    remove(index);
  } else if (address == node.address) {
    reshape(index, address + bytes, end - (address + bytes));
  } else {
    reshape(index, node.address, address - node.address);
    if (address + bytes < end) add(address + bytes, end - (address + bytes), node.requirements);
  }
}

void FreeIndex::take_span(std::uintptr_t address, std::size_t bytes) {
  while (bytes > 0) {
    const auto at = by_start_.find(address);
    assert(at);
    if (!at) return;
    const std::size_t part = std::min(bytes, nodes_[*at].bytes);
    take_from(*at, address, part);
    address += part;
    bytes -= part;
  }
}

void FreeIndex::merge_all() {
  for (std::uint32_t index = 0; index < nodes_.size(); ++index) {
    if (!nodes_[index].live) continue;
    for (auto next = by_start_.find(nodes_[index].address + nodes_[index].bytes);
         next && nodes_[*next].requirements.same_as(nodes_[index].requirements);
         next = by_start_.find(nodes_[index].address + nodes_[index].bytes)) {
      const std::size_t total = nodes_[index].bytes + nodes_[*next].bytes;
      remove(*next);
      reshape(index, nodes_[index].address, total);
    }
  }
}

std::optional<FreeRange> FreeIndex::range_at(std::uintptr_t address) const {
  const auto at = by_start_.find(address);
  if (!at) return std::nullopt;
  const Node& node = nodes_[*at];
  return FreeRange{node.address, node.bytes, node.requirements};
}

std::optional<FreeRange> FreeIndex::range_ending_at(std::uintptr_t end) const {
  const auto at = by_end_.find(end);
  if (!at) return std::nullopt;
  const Node& node = nodes_[*at];
  return FreeRange{node.address, node.bytes, node.requirements};
}

}  // namespace streampool::core
