#pragma once
// A budget of device memory: what the hooks charge when a pool (or a forwarded allocation) takes
// device memory and give back when it is released. Two kinds exist: the process's own cap
// (STREAMPOOL_LIMIT) and a cap shared by a group of processes (STREAMPOOL_GROUP). Both are asked only
// where memory is mapped or released, never on the allocation fast path.
#include <cstdint>

namespace streampool::control {

inline constexpr std::uint64_t kNoLimit = UINT64_MAX;

class Budget {
 public:
  virtual ~Budget() = default;
  // Charges `bytes` on `device`; false, with nothing charged, when that would pass the limit.
  virtual bool try_charge(int device, std::uint64_t bytes) noexcept = 0;
  // Gives back bytes charged before (never more than was charged on that device).
  virtual void uncharge(int device, std::uint64_t bytes) noexcept = 0;
  // The limit on `device` (kNoLimit where there is none) and what is charged there now.
  virtual std::uint64_t limit(int device) const noexcept = 0;
  virtual std::uint64_t charged(int device) const noexcept = 0;
};

}  // namespace streampool::control
