// cuMemAlloc, cuMemAllocPitch and cuMemFree of served memory (serve_malloc.hpp), and the end of
// what a context was served.
//
// The table of served blocks (base -> context) is what the driver would know of cuMemAlloc memory
// and a pool block does not: the context it belongs to, which its pointer attribute names, its
// cuMemFree synchronises and whose destruction frees it. A free and the removal of its entry are
// made under the table's lock, so that an allocation handed the same address just after the free
// always enters its own entry after the old one went.
#include "serve_malloc.hpp"

#include "hooks/control/process_limit.hpp"
#include "driver/driver_table.hpp"
#include "driver/settings.hpp"
#include "hooks/process_state.hpp"
#include "hooks/report/oom_report.hpp"
#include "hooks/tracking.hpp"
#include "serve_pools.hpp"

namespace streampool::interpose::serve_hooks {

namespace {

// The current context and its device, or the driver's error for the call (no context: the call
// is forwarded, and the driver answers as it always does).
bool current_place(CUcontext* context, CUdevice* device) noexcept {
  const driver::DriverTable& table = driver::real();
  return forward(table.cuCtxGetCurrent, context) == CUDA_SUCCESS && *context != nullptr &&
         forward(table.cuCtxGetDevice, device) == CUDA_SUCCESS;
}

// Serves `bytes` on `device` for `context`; a device no pool can serve gets the driver's
// allocation, counted as a forwarded one (control/process_limit.hpp).
CUresult serve(CUdeviceptr* dptr, std::size_t bytes, CUcontext context, CUdevice device) noexcept {
  core::Pool* pool = nullptr;
  CUresult result = serving_pool(device, &pool);
  if (result != CUDA_SUCCESS) return control_hooks::mem_alloc(dptr, bytes);
  void* address = nullptr;
  core::Status status = core::Status::out_of_memory;
  try {
    status = engine().allocate(pool, bytes, kServeKey, &address);
    // Over a cap: what the device's other pools hold unused goes back first, as for the pools.
    if (status == core::Status::out_of_memory && control_hooks::reclaim_for(pool)) {
      status = engine().allocate(pool, bytes, kServeKey, &address);
    }
  } catch (...) {
    status = core::Status::out_of_memory;
  }
  *dptr = 0;
  if (!core::ok(status)) {
    if (status == core::Status::out_of_memory) report_out_of_memory(pool, bytes, nullptr, false);
    return to_cuda(status);
  }
  ServeState& s = state().serve;
  try {
    std::lock_guard lock(s.blocks_mutex);
    s.blocks[reinterpret_cast<std::uintptr_t>(address)] = Served{context, device};
  } catch (...) {
    (void)engine().free_completed(address);  // nothing used it yet
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *dptr = reinterpret_cast<CUdeviceptr>(address);
  return CUDA_SUCCESS;
}

// Waits for everything `context` has queued, as cuCtxSynchronize in it would, and tells the engine.
CUresult synchronize(CUcontext context) noexcept {
  const driver::DriverTable& table = driver::real();
  const CUcontext current = current_context();
  const bool switch_to = context != nullptr && context != current;
  try {
    core::SyncTicket ticket = ticket_for_context(switch_to ? context : current, true);
    if (switch_to && forward(table.cuCtxPushCurrent_v2, context) != CUDA_SUCCESS) {
      // The block's context is gone (a destroyed context's blocks were freed with it): the
      // current one is what is left to wait for.
      return call_under_ticket([&] { return ticket_for_context(current, true); },
                               [&] { return forward(table.cuCtxSynchronize); });
    }
    const CUresult result = forward(table.cuCtxSynchronize);
    if (switch_to) {
      CUcontext popped = nullptr;
      (void)forward(table.cuCtxPopCurrent_v2, &popped);
    }
    if (result == CUDA_SUCCESS) engine().commit(ticket);
    return result;
  } catch (...) {
    return forward(table.cuCtxSynchronize);  // untracked: frees stay pending longer, nothing early
  }
}

}  // namespace

bool enabled() noexcept { return driver::serve_malloc_requested(); }

CUresult mem_alloc(CUdeviceptr* dptr, std::size_t bytes) noexcept {
  const driver::DriverTable& table = driver::real();
  CUcontext context = nullptr;
  CUdevice device = 0;
  if (dptr == nullptr || bytes == 0 || !current_place(&context, &device)) {
    return forward(table.cuMemAlloc_v2, dptr, bytes);
  }
  return serve(dptr, bytes, context, device);
}

CUresult mem_alloc_pitch(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width, std::size_t height,
                         unsigned element_bytes) noexcept {
  const driver::DriverTable& table = driver::real();
  CUcontext context = nullptr;
  CUdevice device = 0;
  const bool element_ok = element_bytes == 4 || element_bytes == 8 || element_bytes == 16;
  if (dptr == nullptr || pitch == nullptr || width == 0 || height == 0 || !element_ok ||
      !current_place(&context, &device)) {
    return forward(table.cuMemAllocPitch_v2, dptr, pitch, width, height, element_bytes);
  }
  CUresult result = CUDA_SUCCESS;
  const std::size_t alignment = pitch_alignment(device, &result);
  if (alignment == 0) return result;
  const std::size_t row = pitch_for(width, alignment);
  std::size_t bytes = 0;
  if (row == 0 || __builtin_mul_overflow(row, height, &bytes)) {
    *dptr = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  result = serve(dptr, bytes, context, device);
  if (result == CUDA_SUCCESS) *pitch = row;
  return result;
}

CUresult mem_free(CUdeviceptr dptr, const core::BlockInfo& info) noexcept {
  ServeState& s = state().serve;
  const auto base = static_cast<std::uintptr_t>(dptr);
  // cuMemFree waits as the driver's does: once it returned, nothing queued before it uses the block.
  const CUresult result = synchronize(context_of(base));
  if (result == CUDA_ERROR_DEINITIALIZED) return CUDA_SUCCESS;  // at exit, after the driver's teardown
  if (result != CUDA_SUCCESS) return result;
  core::Status status = core::Status::success;
  try {
    {
      std::lock_guard lock(s.blocks_mutex);
      status = engine().free_completed(reinterpret_cast<void*>(dptr));
      if (core::ok(status)) s.blocks.erase(base);
    }
    // The driver's cuMemFree gives the memory back to the device: so does this, by granule.
    if (core::ok(status)) (void)engine().trim_to(info.pool, 0);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
  return to_cuda(status);
}

CUcontext context_of(std::uintptr_t base) noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr) return nullptr;
  try {
    std::lock_guard lock(current->serve.blocks_mutex);
    const auto found = current->serve.blocks.find(base);
    return found == current->serve.blocks.end() ? nullptr : found->second.context;
  } catch (...) {
    return nullptr;
  }
}

void context_ended(CUcontext context) noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr || context == nullptr) return;
  ServeState& s = current->serve;
  try {
    bool freed_on[kMaxDevices] = {};
    {
      std::lock_guard lock(s.blocks_mutex);
      for (auto it = s.blocks.begin(); it != s.blocks.end();) {
        if (it->second.context != context) {
          ++it;
          continue;
        }
        // The driver destroyed the context after its work ended: nothing uses the block. An
        // entry whose block went back through cuMemFreeAsync is refused here, and only dropped.
        (void)current->engine.free_completed(reinterpret_cast<void*>(it->first));
        if (it->second.device >= 0 && it->second.device < kMaxDevices) freed_on[it->second.device] = true;
        it = s.blocks.erase(it);
      }
    }
    for (int device = 0; device < kMaxDevices; ++device) {
      core::Pool* pool = freed_on[device] ? s.pools[device].load(std::memory_order_acquire) : nullptr;
      if (pool != nullptr) (void)current->engine.trim_to(pool, 0);  // the granules go back, as the driver's would
    }
  } catch (...) {
  }
}

}  // namespace streampool::interpose::serve_hooks
