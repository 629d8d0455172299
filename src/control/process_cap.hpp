// The process's own cap (STREAMPOOL_LIMIT): a Budget of per-device counters.
//
// What it counts is device memory this process holds through streampool's hooks, in two parts:
// what the pools have mapped (their granules, or whole chunks where VMM cannot serve), and what
// the program allocated through the driver's synchronous calls that the hooks forward (cuMemAlloc,
// cuMemAllocPitch, cuMemCreate), the CUDA arrays it created (cuArrayCreate, cuArray3DCreate, and
// the mipmapped ones), and the memory the driver reserves for its graphs' memory nodes (as the
// graph memory attributes report it). Each part has its own counter, so a report can say how much of the
// cap each holds; the limit applies to their sum. A charge is one compare-and-swap loop on the
// device's total: asked only where memory is mapped or released, never on the allocation fast path.
//
// Limits are set once, per device, before the first charge there (set_limit); a device never set
// has no limit but is still counted.
#pragma once

#include <atomic>
#include <cstdint>

#include "budget.hpp"
#include "limit_spec.hpp"

namespace streampool::control {

enum class Holder : int { pools = 0, forwarded = 1, arrays = 2, graph = 3 };
inline constexpr int kHolders = 4;

class ProcessCap final : public Budget {
 public:
  ProcessCap() noexcept;

  void set_limit(int device, std::uint64_t bytes) noexcept;
  // A budget every charge must also pass (the group's, STREAMPOOL_GROUP): a charge is made on both
  // or on neither, and what is given back here is given back there. Set once, before the first
  // charge; the budget must outlive the cap.
  void share_with(Budget* shared) noexcept;

  // Budget: charges made as the pools' (what CappedBacking charges).
  bool try_charge(int device, std::uint64_t bytes) noexcept override { return try_charge(Holder::pools, device, bytes); }
  void uncharge(int device, std::uint64_t bytes) noexcept override { uncharge(Holder::pools, device, bytes); }
  std::uint64_t limit(int device) const noexcept override;
  std::uint64_t charged(int device) const noexcept override;

  bool try_charge(Holder holder, int device, std::uint64_t bytes) noexcept;
  void uncharge(Holder holder, int device, std::uint64_t bytes) noexcept;
  // Counts memory the driver already took, whether or not the limit admits it (graph memory: the
  // driver reserves it at a launch, and the cap learns of it after): later charges are refused
  // until it goes back. The shared budget is asked too; where it refuses, giving the bytes back
  // later lowers this member's count there by as much (never below zero): the group then counts
  // less than the process holds, in a case that is already past its limit.
  void charge_past_limit(Holder holder, int device, std::uint64_t bytes) noexcept;
  std::uint64_t held(Holder holder, int device) const noexcept;
  // Under the limit: what may still be charged on the device (kNoLimit where there is none).
  std::uint64_t headroom(int device) const noexcept;
  // The limit and the headroom with the shared budget's taken into account: the lower of the two.
  std::uint64_t effective_limit(int device) const noexcept;
  std::uint64_t effective_headroom(int device) const noexcept;
  // The most ever charged on the device at once.
  std::uint64_t peak(int device) const noexcept;
  // Whether any device has a limit.
  bool any_limit() const noexcept {
    return any_limit_.load(std::memory_order_acquire) || shared_.load(std::memory_order_acquire) != nullptr;
  }

 private:
  struct alignas(64) Device {
    std::atomic<std::uint64_t> limit{kNoLimit};
    std::atomic<std::uint64_t> total{0};  // the sum of the holders: what the limit applies to
    std::atomic<std::uint64_t> held[kHolders]{};
    std::atomic<std::uint64_t> peak{0};
  };
  static bool valid(int device) noexcept { return device >= 0 && device < kMaxDevices; }

  Device devices_[kMaxDevices];
  std::atomic<bool> any_limit_{false};
  std::atomic<Budget*> shared_{nullptr};
};

}  // namespace streampool::control
