// CappedBacking: a pool's backing with its device memory charged to a Budget.
//
// The engine maps and unmaps physical memory only through its backing, on its growth and release
// paths (under the pool's growth lock), so wrapping the backing counts every byte a pool holds,
// whatever path got it there: growth, trims, release thresholds, the retry after a failed growth,
// the pool's end. A map the budget refuses answers out_of_memory before the driver is asked, which
// the engine already handles as a full device: it reuses what it holds (inserting dependencies
// where the pool's flags allow, releasing its own free granules and trying again) and otherwise
// fails with the pool unchanged. A backing without separate reservation (whole chunks) charges at
// reserve and gives back at unreserve instead.
//
// It knows nothing of CUDA: the device it charges and the budget are given.
#pragma once

#include <memory>

#include "control/budget.hpp"
#include "core/backing.hpp"

namespace streampool::interpose::control_hooks {

class CappedBacking final : public core::Backing {
 public:
  CappedBacking(std::unique_ptr<core::Backing> inner, streampool::control::Budget& budget, int device) noexcept
      : inner_(std::move(inner)), budget_(budget), device_(device), chunked_(inner_->reservation_bytes() == 0) {}

  std::size_t granule_bytes() const override { return inner_->granule_bytes(); }
  std::size_t reservation_bytes() const override { return inner_->reservation_bytes(); }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override;
  core::Status unreserve(std::uintptr_t base, std::size_t bytes) override;
  core::Status map(std::uintptr_t address, std::size_t bytes,
                   std::span<const core::AccessDescriptor> access) override;
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override;
  core::Status set_access(std::uintptr_t address, std::size_t bytes,
                          std::span<const core::AccessDescriptor> access) override {
    return inner_->set_access(address, bytes, access);
  }

  core::Backing& inner() noexcept { return *inner_; }

 private:
  std::unique_ptr<core::Backing> inner_;
  streampool::control::Budget& budget_;
  int device_;
  bool chunked_;
};

}  // namespace streampool::interpose::control_hooks
