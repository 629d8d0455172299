#include "process_state.hpp"
#include "pool_backing.hpp"

#include <pthread.h>

#include "driver/capture_tracker.hpp"
#include "driver/device_context.hpp"
#include "driver/stream_registry.hpp"
#include "driver/vmm_backing.hpp"
#include "report/stats_report.hpp"

namespace streampool::interpose {

namespace detail {
std::atomic<ProcessState*> process_state{nullptr};
}  // namespace detail

namespace {

std::atomic<bool> first_use_noted{false};
std::atomic<ProcessState*> abandoned_state{nullptr};  // until a fresh state holds it

void per_thread_stream_ended(core::StreamKey key) {
  ProcessState* current = existing_state();
  if (current == nullptr) return;
  HookScope scope;
  try {
    current->engine.stream_destroyed(key);
  } catch (...) {
  }
}

void child_after_fork() {
  // Abandoned, not destroyed: its locks may be held by threads that did not survive the fork.
  if (ProcessState* parents = detail::process_state.exchange(nullptr, std::memory_order_acq_rel)) {
    abandoned_state.store(parents, std::memory_order_release);
  }
  driver::reset_stream_registry_after_fork();
  driver::forget_captures();
}

}  // namespace

core::PoolProps device_pool_props(CUdevice device) noexcept {
  core::PoolProps props;
  props.kind = core::PoolKind::device;
  props.allocation_type = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location_type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location_id = device;
  return props;
}

namespace detail {

ProcessState& create_process_state() noexcept {
  note_first_use();
  auto* fresh = new ProcessState;
  fresh->abandoned_before_fork = abandoned_state.load(std::memory_order_acquire);
  if (driver::auto_release_requested()) fresh->engine.set_release_policy(core::ReleasePolicy::self_tuning());
  ProcessState* expected = nullptr;
  if (!process_state.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    delete fresh;  // another thread won; nothing was created in ours
    return *expected;
  }
  driver::set_per_thread_exit_handler(&per_thread_stream_ended);
  fresh->engine.set_strict_reuse(driver::strict_reuse_requested());
  return *fresh;
}

}  // namespace detail

void note_first_use() noexcept {
  if (first_use_noted.load(std::memory_order_acquire)) return;
  bool expected = false;
  if (!first_use_noted.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  pthread_atfork(nullptr, nullptr, &child_after_fork);
  register_stats_report_at_exit();
}

CUresult to_cuda_slow(core::Status status) noexcept {
  switch (status) {
    case core::Status::success:
      return CUDA_SUCCESS;
    case core::Status::invalid_value:
      return CUDA_ERROR_INVALID_VALUE;
    case core::Status::out_of_memory:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case core::Status::not_supported:
      return CUDA_ERROR_NOT_SUPPORTED;
    case core::Status::not_ready:
      return CUDA_ERROR_NOT_READY;
    case core::Status::deinitialized:
      return CUDA_ERROR_DEINITIALIZED;
    case core::Status::backend_error:
      break;
  }
  return CUDA_ERROR_UNKNOWN;
}

// --- PoolDirectory ---------------------------------------------------------------------------

CUresult PoolDirectory::create_default(const core::PoolProps& props, std::atomic<core::Pool*>& default_slot,
                                       std::atomic<core::Pool*>& current_slot, core::Pool** pool) noexcept {
  try {
    std::lock_guard lock(create_mutex_);
    core::Pool* existing = default_slot.load(std::memory_order_acquire);
    if (existing == nullptr) {
      std::unique_ptr<core::Backing> backing;
      core::Status status = driver::make_backing(props, &backing, insight_hooks::nvtx_enabled());
      if (!core::ok(status)) return to_cuda(status);
      status = engine_.create_pool(props, hooked_backing(props, std::move(backing)), &existing);
      if (!core::ok(status)) return to_cuda(status);
      default_slot.store(existing, std::memory_order_release);
      core::Pool* no_current = nullptr;
      current_slot.compare_exchange_strong(no_current, existing, std::memory_order_acq_rel);
    }
    *pool = existing;
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult PoolDirectory::device_default(CUdevice device, core::Pool** pool) noexcept {
  if (!driver::valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (device >= kMaxDevices) return CUDA_ERROR_NOT_SUPPORTED;
  core::Pool* existing = device_default_[device].load(std::memory_order_acquire);
  if (existing != nullptr) {
    *pool = existing;
    return CUDA_SUCCESS;
  }
  return create_default(device_pool_props(device), device_default_[device], device_current_[device], pool);
}

CUresult PoolDirectory::set_device_current(CUdevice device, core::Pool* pool) noexcept {
  core::Pool* ignored = nullptr;
  CUresult result = device_default(device, &ignored);  // the slot exists and holds a default
  if (result != CUDA_SUCCESS) return result;
  device_current_[device].store(pool, std::memory_order_release);
  driver::invalidate_routes();
  return CUDA_SUCCESS;
}

bool PoolDirectory::is_default(const core::Pool* pool) const noexcept {
  if (pool == nullptr) return false;
  for (const auto& slot : device_default_) {
    if (slot.load(std::memory_order_acquire) == pool) return true;
  }
  return false;
}

void PoolDirectory::forget(const core::Pool* pool) noexcept {
  bool was_current = false;
  for (int device = 0; device < kMaxDevices; ++device) {
    core::Pool* expected = const_cast<core::Pool*>(pool);
    was_current |= device_current_[device].compare_exchange_strong(
        expected, device_default_[device].load(std::memory_order_acquire), std::memory_order_acq_rel);
  }
  if (was_current) driver::invalidate_routes();
}

}  // namespace streampool::interpose
