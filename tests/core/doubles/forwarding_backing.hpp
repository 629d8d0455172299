// ForwardingBacking: a core::Backing that passes every call to a backing the test owns, so that
// the test can still read that backing's counts after the engine has reclaimed the pool (and
// destroyed the backing it was given); `released` tells the test that it did.
#pragma once

#include "core/backing.hpp"

namespace streampool::testing {

class ForwardingBacking final : public core::Backing {
 public:
  ForwardingBacking(core::Backing& target, bool* released) : target_(target), released_(released) {}
  ~ForwardingBacking() override {
    if (released_ != nullptr) *released_ = true;
  }

  std::size_t granule_bytes() const override { return target_.granule_bytes(); }
  std::size_t reservation_bytes() const override { return target_.reservation_bytes(); }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override { return target_.reserve(bytes, base); }
  core::Status unreserve(std::uintptr_t base, std::size_t bytes) override { return target_.unreserve(base, bytes); }
  core::Status map(std::uintptr_t address, std::size_t bytes,
                   std::span<const core::AccessDescriptor> access) override {
    return target_.map(address, bytes, access);
  }
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override { return target_.unmap(address, bytes); }
  core::Status set_access(std::uintptr_t address, std::size_t bytes,
                          std::span<const core::AccessDescriptor> access) override {
    return target_.set_access(address, bytes, access);
  }

 private:
  core::Backing& target_;
  bool* released_;
};

}  // namespace streampool::testing
