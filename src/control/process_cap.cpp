#include "process_cap.hpp"

namespace streampool::control {

ProcessCap::ProcessCap() noexcept = default;

void ProcessCap::set_limit(int device, std::uint64_t bytes) noexcept {
  if (!valid(device)) return;
  devices_[device].limit.store(bytes, std::memory_order_release);
  if (bytes != kNoLimit) any_limit_.store(true, std::memory_order_release);
}

void ProcessCap::share_with(Budget* shared) noexcept { shared_.store(shared, std::memory_order_release); }

std::uint64_t ProcessCap::effective_limit(int device) const noexcept {
  const std::uint64_t own = limit(device);
  const Budget* shared = shared_.load(std::memory_order_acquire);
  const std::uint64_t theirs = shared == nullptr ? kNoLimit : shared->limit(device);
  return own < theirs ? own : theirs;
}

std::uint64_t ProcessCap::effective_headroom(int device) const noexcept {
  const std::uint64_t own = headroom(device);
  const Budget* shared = shared_.load(std::memory_order_acquire);
  if (shared == nullptr) return own;
  const std::uint64_t group_limit = shared->limit(device);
  if (group_limit == kNoLimit) return own;
  const std::uint64_t group_charged = shared->charged(device);
  const std::uint64_t theirs = group_charged >= group_limit ? 0 : group_limit - group_charged;
  return own < theirs ? own : theirs;
}

std::uint64_t ProcessCap::limit(int device) const noexcept {
  return valid(device) ? devices_[device].limit.load(std::memory_order_acquire) : kNoLimit;
}

std::uint64_t ProcessCap::charged(int device) const noexcept {
  return valid(device) ? devices_[device].total.load(std::memory_order_acquire) : 0;
}

std::uint64_t ProcessCap::held(Holder holder, int device) const noexcept {
  return valid(device) ? devices_[device].held[static_cast<int>(holder)].load(std::memory_order_acquire) : 0;
}

std::uint64_t ProcessCap::peak(int device) const noexcept {
  return valid(device) ? devices_[device].peak.load(std::memory_order_acquire) : 0;
}

std::uint64_t ProcessCap::headroom(int device) const noexcept {
  const std::uint64_t cap = limit(device);
  if (cap == kNoLimit) return kNoLimit;
  const std::uint64_t now = charged(device);
  return now >= cap ? 0 : cap - now;
}

bool ProcessCap::try_charge(Holder holder, int device, std::uint64_t bytes) noexcept {
  if (!valid(device)) return true;  // a device past the table: counted nowhere, limited by nothing
  Device& slot = devices_[device];
  const std::uint64_t cap = slot.limit.load(std::memory_order_acquire);
  std::uint64_t now = slot.total.load(std::memory_order_relaxed);
  while (true) {
    std::uint64_t next = 0;
    if (__builtin_add_overflow(now, bytes, &next) || next > cap) return false;
    if (slot.total.compare_exchange_weak(now, next, std::memory_order_acq_rel, std::memory_order_relaxed)) break;
  }
  // The group's admission after the process's own: a refusal there takes back what was taken here.
  if (Budget* shared = shared_.load(std::memory_order_acquire); shared != nullptr && !shared->try_charge(device, bytes)) {
    slot.total.fetch_sub(bytes, std::memory_order_acq_rel);
    return false;
  }
  slot.held[static_cast<int>(holder)].fetch_add(bytes, std::memory_order_acq_rel);
  const std::uint64_t reached = now + bytes;  // what the successful exchange made the total
  std::uint64_t seen = slot.peak.load(std::memory_order_relaxed);
  while (seen < reached && !slot.peak.compare_exchange_weak(seen, reached, std::memory_order_relaxed)) {
  }
  return true;
}

void ProcessCap::charge_past_limit(Holder holder, int device, std::uint64_t bytes) noexcept {
  if (!valid(device) || bytes == 0) return;
  Device& slot = devices_[device];
  // The group learns of it too where it can take it (process_cap.hpp says what a refusal there costs).
  if (Budget* shared = shared_.load(std::memory_order_acquire); shared != nullptr) (void)shared->try_charge(device, bytes);
  slot.held[static_cast<int>(holder)].fetch_add(bytes, std::memory_order_acq_rel);
  const std::uint64_t reached = slot.total.fetch_add(bytes, std::memory_order_acq_rel) + bytes;
  std::uint64_t seen = slot.peak.load(std::memory_order_relaxed);
  while (seen < reached && !slot.peak.compare_exchange_weak(seen, reached, std::memory_order_relaxed)) {
  }
}

void ProcessCap::uncharge(Holder holder, int device, std::uint64_t bytes) noexcept {
  if (!valid(device)) return;
  Device& slot = devices_[device];
  // Never below zero: a caller giving back more than it charged is a bug, and an underflow would
  // report exabytes held (and refuse every later charge).
  std::atomic<std::uint64_t>& part = slot.held[static_cast<int>(holder)];
  std::uint64_t had = part.load(std::memory_order_relaxed);
  std::uint64_t taken = 0;
  do {
    taken = bytes < had ? bytes : had;
  } while (!part.compare_exchange_weak(had, had - taken, std::memory_order_acq_rel, std::memory_order_relaxed));
  slot.total.fetch_sub(taken, std::memory_order_acq_rel);
  if (Budget* shared = shared_.load(std::memory_order_acquire); shared != nullptr && taken != 0) {
    shared->uncharge(device, taken);
  }
}

}  // namespace streampool::control
