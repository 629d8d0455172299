#include "leak_ledger.hpp"

namespace streampool::insight {

const char* bad_free_name(BadFree kind) noexcept {
  switch (kind) {
    case BadFree::not_allocated:
      return "not_allocated";
    case BadFree::double_free:
      return "double_free";
    case BadFree::destroyed_stream:
      return "destroyed_stream";
    case BadFree::invalid_stream:
      return "invalid_stream";
    case BadFree::foreign_stream:
      return "foreign_stream";
    case BadFree::racing:
      return "racing";
  }
  return "unknown";
}

LeakLedger::LeakLedger(const LedgerLimits& limits)
    : sites_(limits.max_sites),
      recent_frees_(limits.recent_frees == 0 ? 1 : limits.recent_frees),
      recent_streams_(limits.recent_streams == 0 ? 1 : limits.recent_streams),
      bad_frees_kept_(limits.bad_frees_kept) {
  bad_frees_.reserve(bad_frees_kept_);
}

void LeakLedger::allocated(std::uintptr_t address, std::uint64_t bytes, SiteId site, int device) {
  Shard& entry = shard(address);
  {
    std::lock_guard<std::mutex> lock(entry.mutex);
    auto [found, inserted] = entry.live.try_emplace(address);
    // An address handed out again whose free streampool did not see (its pool was destroyed): the
    // old allocation is gone.
    if (!inserted) sites_.freed(found->second.site, found->second.bytes);
    found->second = LiveAllocation{bytes, site, device, 0};
  }
  sites_.allocated(site, bytes);
}

LeakLedger::Claim LeakLedger::begin_free(std::uintptr_t address, std::uint64_t thread, LiveAllocation* allocation) {
  Shard& entry = shard(address);
  std::lock_guard<std::mutex> lock(entry.mutex);
  auto found = entry.live.find(address);
  if (found == entry.live.end()) return Claim::unknown;
  *allocation = found->second;
  if (found->second.freeing_thread != 0 && found->second.freeing_thread != thread) return Claim::racing;
  found->second.freeing_thread = thread;
  return Claim::live;
}

void LeakLedger::end_free(std::uintptr_t address, std::uint64_t thread, bool took_effect, SiteId free_site) {
  Shard& entry = shard(address);
  LiveAllocation freed;
  {
    std::lock_guard<std::mutex> lock(entry.mutex);
    auto found = entry.live.find(address);
    if (found == entry.live.end()) return;
    if (!took_effect) {
      if (found->second.freeing_thread == thread) found->second.freeing_thread = 0;
      return;
    }
    freed = found->second;
    entry.live.erase(found);
  }
  sites_.freed(freed.site, freed.bytes);
  std::lock_guard<std::mutex> lock(recent_mutex_);
  recent_frees_[next_free_] = FreedAllocation{address, freed.bytes, freed.site, free_site};
  next_free_ = (next_free_ + 1) % recent_frees_.size();
}

bool LeakLedger::live_site(std::uintptr_t address, SiteId* site) const {
  const Shard& home = shard(address);
  std::lock_guard<std::mutex> lock(home.mutex);
  auto entry = home.live.find(address);
  if (entry == home.live.end()) return false;
  *site = entry->second.site;
  return true;
}

bool LeakLedger::recently_freed(std::uintptr_t address, FreedAllocation* freed) const {
  std::lock_guard<std::mutex> lock(recent_mutex_);
  const std::size_t size = recent_frees_.size();
  // Newest first: the latest free of the address is the one a double free repeats.
  for (std::size_t back = 1; back <= size; ++back) {
    const FreedAllocation& entry = recent_frees_[(next_free_ + size - back) % size];
    if (entry.address == address && address != 0) {
      *freed = entry;
      return true;
    }
  }
  return false;
}

void LeakLedger::stream_destroyed(std::uintptr_t stream) {
  std::lock_guard<std::mutex> lock(recent_mutex_);
  recent_streams_[next_stream_] = stream;
  next_stream_ = (next_stream_ + 1) % recent_streams_.size();
}

bool LeakLedger::was_destroyed(std::uintptr_t stream) const {
  if (stream == 0) return false;
  std::lock_guard<std::mutex> lock(recent_mutex_);
  for (std::uintptr_t destroyed : recent_streams_) {
    if (destroyed == stream) return true;
  }
  return false;
}

void LeakLedger::record_bad_free(const BadFreeEvent& event) {
  bad_free_counts_[static_cast<unsigned>(event.kind)].fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(bad_mutex_);
  if (bad_frees_.size() < bad_frees_kept_) bad_frees_.push_back(event);
}

std::vector<BadFreeEvent> LeakLedger::bad_frees() const {
  std::lock_guard<std::mutex> lock(bad_mutex_);
  return bad_frees_;
}

std::uint64_t LeakLedger::live_allocations() const {
  std::uint64_t total = 0;
  for (const Shard& entry : shards_) {
    std::lock_guard<std::mutex> lock(entry.mutex);
    total += entry.live.size();
  }
  return total;
}

}  // namespace streampool::insight
