#include "call_site_table.hpp"

#include <algorithm>

namespace streampool::insight {

CallSiteTable::CallSiteTable(unsigned max_sites)
    : max_sites_(max_sites), sites_(std::make_unique<Site[]>(max_sites == 0 ? 1 : max_sites)) {
  std::uint64_t slots = 2;
  while (slots < 2ULL * max_sites) slots *= 2;
  slots_ = std::make_unique<Slot[]>(slots);
  slot_mask_ = slots - 1;
}

bool CallSiteTable::same_stack(SiteId site, const CallStack& stack) const noexcept {
  const Site& entry = sites_[site];
  return entry.depth == stack.depth && std::equal(stack.frames, stack.frames + stack.depth, entry.frames);
}

SiteId CallSiteTable::intern(const CallStack& stack) noexcept {
  const std::uint64_t hash = hash_frames(stack.frames, stack.depth);
  std::uint64_t index = hash & slot_mask_;
  // Lock-free lookup: a taken slot never changes, and an empty one ends the probe.
  for (;; index = (index + 1) & slot_mask_) {
    const std::uint64_t key = slots_[index].key.load(std::memory_order_acquire);
    if (key == 0) break;
    if (key == hash) {
      const SiteId site = slots_[index].site.load(std::memory_order_relaxed);
      if (same_stack(site, stack)) return site;
    }
  }
  std::lock_guard<std::mutex> lock(add_mutex_);
  // Another thread may have added it, or taken the empty slot, since the probe.
  for (;; index = (index + 1) & slot_mask_) {
    const std::uint64_t key = slots_[index].key.load(std::memory_order_acquire);
    if (key == 0) break;
    if (key == hash) {
      const SiteId site = slots_[index].site.load(std::memory_order_relaxed);
      if (same_stack(site, stack)) return site;
    }
  }
  const unsigned count = count_.load(std::memory_order_relaxed);
  if (count >= max_sites_) return kOtherSites;
  Site& entry = sites_[count];
  entry.hash = hash;
  entry.depth = stack.depth;
  std::copy(stack.frames, stack.frames + stack.depth, entry.frames);
  slots_[index].site.store(count, std::memory_order_relaxed);
  slots_[index].key.store(hash, std::memory_order_release);
  count_.store(count + 1, std::memory_order_release);
  return count;
}

CallSiteTable::Counters* CallSiteTable::counters(SiteId site) noexcept {
  if (site < count_.load(std::memory_order_acquire)) return &sites_[site].counters;
  return &other_;
}

const CallSiteTable::Counters* CallSiteTable::counters(SiteId site) const noexcept {
  if (site < count_.load(std::memory_order_acquire)) return &sites_[site].counters;
  return &other_;
}

void CallSiteTable::allocated(SiteId site, std::uint64_t bytes) noexcept {
  Counters* entry = counters(site);
  entry->live_bytes.fetch_add(bytes, std::memory_order_relaxed);
  entry->live_count.fetch_add(1, std::memory_order_relaxed);
  entry->allocations.fetch_add(1, std::memory_order_relaxed);
}

void CallSiteTable::freed(SiteId site, std::uint64_t bytes) noexcept {
  Counters* entry = counters(site);
  entry->live_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  entry->live_count.fetch_sub(1, std::memory_order_relaxed);
}

unsigned CallSiteTable::frames(SiteId site, const std::uintptr_t** frames) const noexcept {
  if (site >= count_.load(std::memory_order_acquire)) {
    *frames = nullptr;
    return 0;
  }
  *frames = sites_[site].frames;
  return sites_[site].depth;
}

SiteTotals CallSiteTable::totals(SiteId id, const Counters& counters) noexcept {
  SiteTotals out;
  out.site = id;
  out.live_bytes = counters.live_bytes.load(std::memory_order_relaxed);
  out.live_count = counters.live_count.load(std::memory_order_relaxed);
  out.allocations = counters.allocations.load(std::memory_order_relaxed);
  return out;
}

std::vector<SiteTotals> CallSiteTable::sites() const {
  const unsigned count = count_.load(std::memory_order_acquire);
  std::vector<SiteTotals> out;
  out.reserve(count);
  for (SiteId site = 0; site < count; ++site) out.push_back(totals(site, sites_[site].counters));
  return out;
}

SiteTotals CallSiteTable::other_sites() const noexcept { return totals(kOtherSites, other_); }

}  // namespace streampool::insight
