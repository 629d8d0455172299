// The call sites of live allocations, interned so that equal stacks share one entry, with the live
// bytes and count and the allocations ever made at each.
//
// Bounded: at most max_sites distinct sites; a stack first seen after that counts under one
// "other sites" entry (kOtherSites). Memory is allocated once, at construction (the sites, their
// frames, and an open-addressing index of twice the sites, so that a probe always ends at an empty
// slot). Looking a known stack up takes no lock: a slot's key is published (release) only after its
// site's frames are written, and never changes afterwards. Adding a site takes the table's mutex.
// The counters are relaxed atomics: a report reads a consistent enough picture at exit, when the
// program has stopped allocating.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "call_site.hpp"

namespace streampool::insight {

using SiteId = std::uint32_t;
inline constexpr SiteId kOtherSites = 0xffffffffU;

struct SiteTotals {
  SiteId site = kOtherSites;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_count = 0;
  std::uint64_t allocations = 0;  // ever made at the site
};

class CallSiteTable {
 public:
  explicit CallSiteTable(unsigned max_sites);
  CallSiteTable(const CallSiteTable&) = delete;
  CallSiteTable& operator=(const CallSiteTable&) = delete;

  // The site of this stack, added if new; kOtherSites once the table is full.
  SiteId intern(const CallStack& stack) noexcept;

  void allocated(SiteId site, std::uint64_t bytes) noexcept;
  void freed(SiteId site, std::uint64_t bytes) noexcept;

  // The frames of a site (innermost first); depth 0 for kOtherSites or an unknown id.
  unsigned frames(SiteId site, const std::uintptr_t** frames) const noexcept;
  // Every site with its totals, in the order they were added, and the "other sites" entry apart.
  std::vector<SiteTotals> sites() const;
  SiteTotals other_sites() const noexcept;
  unsigned site_count() const noexcept { return count_.load(std::memory_order_acquire); }
  unsigned max_sites() const noexcept { return max_sites_; }

 private:
  struct Counters {
    std::atomic<std::uint64_t> live_bytes{0};
    std::atomic<std::uint64_t> live_count{0};
    std::atomic<std::uint64_t> allocations{0};
  };
  struct Site {
    std::uint64_t hash = 0;
    unsigned depth = 0;
    std::uintptr_t frames[kMaxFrames] = {};
    Counters counters;
  };
  struct Slot {
    std::atomic<std::uint64_t> key{0};  // the stack's hash once the slot is taken
    std::atomic<SiteId> site{kOtherSites};
  };

  Counters* counters(SiteId site) noexcept;
  const Counters* counters(SiteId site) const noexcept;
  static SiteTotals totals(SiteId id, const Counters& counters) noexcept;
  bool same_stack(SiteId site, const CallStack& stack) const noexcept;

  const unsigned max_sites_;
  std::unique_ptr<Site[]> sites_;
  std::unique_ptr<Slot[]> slots_;
  std::uint64_t slot_mask_ = 0;
  std::atomic<unsigned> count_{0};
  Counters other_;
  std::mutex add_mutex_;
};

}  // namespace streampool::insight
