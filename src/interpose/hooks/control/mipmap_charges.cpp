#include "mipmap_charges.hpp"

#include <mutex>

#include "array_charges.hpp"
#include "driver/driver_table.hpp"
#include "hooks/process_state.hpp"
#include "process_limit.hpp"

namespace streampool::interpose::control_hooks {

namespace ctl = streampool::control;

namespace {

std::size_t halved(std::size_t extent, unsigned level) noexcept {
  if (extent == 0) return 0;
  const std::size_t out = level >= 64 ? 0 : extent >> level;
  return out == 0 ? 1 : out;
}

// A deferred twin's size (deferred_twin_bytes, array_charges.hpp), else the levels' elements' bytes.
std::uint64_t mipmap_bytes(CUdevice device, const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels) noexcept {
  const driver::DriverTable& table = driver::real();
  if (table.cuMipmappedArrayCreate != nullptr && table.cuMipmappedArrayGetMemoryRequirements != nullptr) {
    CUDA_ARRAY3D_DESCRIPTOR deferred = descriptor;
    deferred.Flags |= CUDA_ARRAY3D_DEFERRED_MAPPING;
    const std::uint64_t bytes = deferred_twin_bytes<CUmipmappedArray>(
        [&](CUmipmappedArray* twin) { return table.cuMipmappedArrayCreate(twin, &deferred, levels); },
        [&](CUDA_ARRAY_MEMORY_REQUIREMENTS* out, CUmipmappedArray twin) {
          return table.cuMipmappedArrayGetMemoryRequirements(out, twin, device);
        },
        [&](CUmipmappedArray twin) { (void)forward(table.cuMipmappedArrayDestroy, twin); });
    if (bytes != 0) return bytes;
  }
  return mipmap_element_bytes(descriptor, levels);
}

}  // namespace

std::uint64_t mipmap_element_bytes(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels) noexcept {
  const bool layered = (descriptor.Flags & CUDA_ARRAY3D_LAYERED) != 0;
  std::uint64_t total = 0;
  // Asked only once the driver made the mipmapped array, so `levels` is one it took (a few dozen).
  for (unsigned level = 0; level < levels; ++level) {
    CUDA_ARRAY3D_DESCRIPTOR one = descriptor;
    one.Width = halved(descriptor.Width, level);
    one.Height = halved(descriptor.Height, level);
    one.Depth = layered ? descriptor.Depth : halved(descriptor.Depth, level);
    if (__builtin_add_overflow(total, array_element_bytes(one), &total)) return UINT64_MAX;
  }
  return total;
}

CUresult mipmap_create(CUmipmappedArray* handle, const CUDA_ARRAY3D_DESCRIPTOR* descriptor, unsigned levels) noexcept {
  const driver::DriverTable& table = driver::real();
  const CUresult result = forward(table.cuMipmappedArrayCreate, handle, descriptor, levels);
  if (result != CUDA_SUCCESS || handle == nullptr || *handle == nullptr || descriptor == nullptr || !limit_set()) {
    return result;
  }
  // A deferred-mapping mipmapped array holds no memory (what is mapped into it is cuMemCreate's).
  if ((descriptor->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) != 0) return result;
  // Charged once made (the driver alone knows the size), destroyed again if the cap cannot take it.
  try {
    CUdevice device = 0;
    if (forward(table.cuCtxGetDevice, &device) != CUDA_SUCCESS) return CUDA_SUCCESS;
    CUcontext context = nullptr;
    (void)forward(table.cuCtxGetCurrent, &context);
    const std::uint64_t bytes = mipmap_bytes(device, *descriptor, levels);
    if (!charge_driver_memory(ctl::Holder::arrays, device, bytes)) {
      (void)forward(table.cuMipmappedArrayDestroy, *handle);
      *handle = nullptr;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CapState& s = state().caps;
    try {
      std::lock_guard lock(s.forwarded_mutex);
      s.mipmaps[reinterpret_cast<std::uintptr_t>(*handle)] = Forwarded{device, bytes, context};
    } catch (...) {
      s.cap.uncharge(ctl::Holder::arrays, device, bytes);
      throw;
    }
    return CUDA_SUCCESS;
  } catch (...) {
    (void)forward(table.cuMipmappedArrayDestroy, *handle);
    *handle = nullptr;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult mipmap_destroy(CUmipmappedArray handle) noexcept {
  const driver::DriverTable& table = driver::real();
  ProcessState* current = existing_state();
  if (current == nullptr) return forward(table.cuMipmappedArrayDestroy, handle);
  CapState& s = current->caps;
  try {
    std::lock_guard lock(s.forwarded_mutex);
    if (s.mipmaps.empty()) return forward(table.cuMipmappedArrayDestroy, handle);
    const CUresult result = forward(table.cuMipmappedArrayDestroy, handle);
    const auto found = s.mipmaps.find(reinterpret_cast<std::uintptr_t>(handle));
    if (found != s.mipmaps.end() && (result == CUDA_SUCCESS || result == CUDA_ERROR_DEINITIALIZED)) {
      s.cap.uncharge(ctl::Holder::arrays, found->second.device, found->second.bytes);
      s.mipmaps.erase(found);
    }
    return result;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace streampool::interpose::control_hooks
