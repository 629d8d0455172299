// What the leak mode knows of each pool allocation: the live ones (address -> bytes, call site,
// device), the recently freed ones (a bounded ring of address, bytes, allocation and free sites),
// streams recently destroyed (a bounded ring of handles), and the bad frees seen.
//
// A free is two steps. begin_free claims the live allocation for the calling thread; a second
// thread that finds it claimed is racing the first (both free the same pointer at once).
// end_free says whether the free took effect: the allocation moves to the recently freed ring
// (its bytes leave its site's live totals) or, refused, is unclaimed. A later free of an address
// that is no live allocation and is in the ring is a double free, with the first free's site.
// The ring forgets the oldest frees first, and an address handed out again is live again: a double
// free of an old address, or one made after the address was reused, is not recognised as one.
//
// Live allocations are kept in a fixed number of shards, each a map under its own mutex, so that
// threads allocating at once rarely share a lock. Nothing here knows of CUDA: addresses, streams
// and devices are plain numbers.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "call_site_table.hpp"

namespace streampool::insight {

enum class BadFree : unsigned {
  not_allocated,     // no live pool allocation and not recently freed
  double_free,       // freed before (the ring holds the first free's site)
  destroyed_stream,  // on a stream destroyed earlier
  invalid_stream,    // on a handle that names no stream
  foreign_stream,    // on a stream of another device than the allocation's
  racing,            // while another thread frees the same pointer
};
inline constexpr unsigned kBadFreeKinds = 6;
const char* bad_free_name(BadFree kind) noexcept;

struct LiveAllocation {
  std::uint64_t bytes = 0;
  SiteId site = kOtherSites;
  int device = -1;                 // -1: not device memory (no foreign-stream check)
  std::uint64_t freeing_thread = 0;  // the thread whose free is in progress, 0 when none
};

struct FreedAllocation {
  std::uintptr_t address = 0;
  std::uint64_t bytes = 0;
  SiteId allocation_site = kOtherSites;
  SiteId free_site = kOtherSites;
};

// One bad free as the reports show it.
struct BadFreeEvent {
  BadFree kind = BadFree::not_allocated;
  std::uintptr_t address = 0;
  std::uintptr_t stream = 0;
  std::uint64_t bytes = 0;              // 0 where unknown
  std::uint64_t other_thread = 0;       // racing: the thread whose free was in progress
  int error = 0;                        // what the free returned
  SiteId free_site = kOtherSites;       // where this free was called
  SiteId allocation_site = kOtherSites;
  SiteId first_free_site = kOtherSites;  // double free: where it was freed before
  bool has_allocation_site = false;
  bool has_first_free_site = false;
};

struct LedgerLimits {
  unsigned max_sites = 4096;
  unsigned recent_frees = 4096;
  unsigned recent_streams = 256;
  unsigned bad_frees_kept = 64;  // events kept for the report (all are counted)
};

class LeakLedger {
 public:
  explicit LeakLedger(const LedgerLimits& limits);

  CallSiteTable& sites() noexcept { return sites_; }
  const CallSiteTable& sites() const noexcept { return sites_; }

  void allocated(std::uintptr_t address, std::uint64_t bytes, SiteId site, int device);

  enum class Claim { live, racing, unknown };
  // The allocation at `address` as it stands (copied to *allocation where live or racing).
  Claim begin_free(std::uintptr_t address, std::uint64_t thread, LiveAllocation* allocation);
  // took_effect: the allocator freed it (moves to the ring with free_site); else it is unclaimed.
  void end_free(std::uintptr_t address, std::uint64_t thread, bool took_effect, SiteId free_site);

  bool recently_freed(std::uintptr_t address, FreedAllocation* freed) const;
  // The call site of the live allocation at `address`, for other reports (an out-of-memory
  // report's largest blocks); false where none is live there.
  bool live_site(std::uintptr_t address, SiteId* site) const;
  void stream_destroyed(std::uintptr_t stream);
  bool was_destroyed(std::uintptr_t stream) const;

  void record_bad_free(const BadFreeEvent& event);
  std::uint64_t bad_free_count(BadFree kind) const noexcept {
    return bad_free_counts_[static_cast<unsigned>(kind)].load(std::memory_order_relaxed);
  }
  std::vector<BadFreeEvent> bad_frees() const;

  std::uint64_t live_allocations() const;

 private:
  static constexpr unsigned kShards = 16;
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<std::uintptr_t, LiveAllocation> live;
  };
  Shard& shard(std::uintptr_t address) noexcept { return shards_[(address >> 9) % kShards]; }
  const Shard& shard(std::uintptr_t address) const noexcept { return shards_[(address >> 9) % kShards]; }

  CallSiteTable sites_;
  std::array<Shard, kShards> shards_;

  mutable std::mutex recent_mutex_;
  std::vector<FreedAllocation> recent_frees_;  // a ring: next_free_ is the oldest once full
  std::size_t next_free_ = 0;
  std::vector<std::uintptr_t> recent_streams_;
  std::size_t next_stream_ = 0;

  std::array<std::atomic<std::uint64_t>, kBadFreeKinds> bad_free_counts_{};
  mutable std::mutex bad_mutex_;
  std::vector<BadFreeEvent> bad_frees_;
  unsigned bad_frees_kept_;
};

}  // namespace streampool::insight
