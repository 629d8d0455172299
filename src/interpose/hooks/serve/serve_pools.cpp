// The pool that serves a device's cuMemAlloc: one per device, created on the first served
// allocation, apart from the device's default pool so that what is served can be told apart
// (served_bytes, the reports) and so that the program's cuMemPoolSetAttribute on the default
// pool never changes how cuMemAlloc behaves.
//
// Why its memory is usable at once by every stream: it is allocated on kServeKey, which no stream
// has (serve_state.hpp), and the pool may not insert dependencies (an inserted wait would have to
// go on a stream, and there is none). So the engine hands kServeKey only blocks it knows nothing
// can still use: memory it maps for the request, or blocks whose free the host saw complete
// (cuMemFree after its synchronisation, and any free a later host synchronisation covered).
//
// Its backing is charged to the cap like every device pool's (control/process_limit.hpp), and is
// not an NVTX heap: compute-sanitizer sees its mappings as the plain device memory cuMemAlloc's is.
#include "serve_pools.hpp"

#include "serve_malloc.hpp"

#include "hooks/control/process_limit.hpp"
#include "driver/device_context.hpp"
#include "driver/vmm_backing.hpp"
#include "hooks/process_state.hpp"

namespace streampool::interpose::serve_hooks {

namespace {

CUresult create_pool(ServeState& s, CUdevice device, core::Pool** pool) noexcept {
  try {
    std::lock_guard lock(s.create_mutex);
    core::Pool* existing = s.pools[device].load(std::memory_order_acquire);
    if (existing == nullptr) {
      const core::PoolProps props = device_pool_props(device);
      std::unique_ptr<core::Backing> backing;
      core::Status status = driver::make_backing(props, &backing);
      if (!core::ok(status)) return to_cuda(status);
      status = engine().create_pool(props, control_hooks::capped(props, std::move(backing)), &existing);
      if (!core::ok(status)) return to_cuda(status);
      const int no = 0;
      (void)engine().set_attribute(existing, core::PoolAttribute::reuse_allow_internal_dependencies, &no);
      s.pools[device].store(existing, std::memory_order_release);
    }
    *pool = existing;
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

}  // namespace

CUresult serving_pool(CUdevice device, core::Pool** pool) noexcept {
  if (device < 0 || device >= kMaxDevices) return CUDA_ERROR_NOT_SUPPORTED;
  ServeState& s = state().serve;
  core::Pool* existing = s.pools[device].load(std::memory_order_acquire);
  if (existing != nullptr) {
    *pool = existing;
    return CUDA_SUCCESS;
  }
  return create_pool(s, device, pool);
}

bool is_serving_pool(const core::Pool* pool) noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr || pool == nullptr) return false;
  try {
    const int device = current->engine.props(pool).location_id;
    return device >= 0 && device < kMaxDevices && current->serve.pools[device].load(std::memory_order_acquire) == pool;
  } catch (...) {
    return false;
  }
}

std::uint64_t served_bytes(int device) noexcept {
  ProcessState* current = existing_state();
  if (current == nullptr || device < 0 || device >= kMaxDevices) return 0;
  core::Pool* pool = current->serve.pools[device].load(std::memory_order_acquire);
  if (pool == nullptr) return 0;
  try {
    return current->engine.stats(pool).used_current;
  } catch (...) {
    return 0;
  }
}

}  // namespace streampool::interpose::serve_hooks
