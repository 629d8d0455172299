#include "array_charges.hpp"

#include <mutex>

#include "driver/driver_table.hpp"
#include "hooks/process_state.hpp"
#include "process_limit.hpp"

namespace streampool::interpose::control_hooks {

namespace ctl = streampool::control;

namespace {

std::uint64_t format_bytes(CUarray_format format) noexcept {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

std::uint64_t times(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? UINT64_MAX : out;
}

// The size on `device` of an array of this descriptor: a deferred twin's (deferred_twin_bytes),
// else the elements' bytes.
std::uint64_t array_bytes(CUdevice device, const CUDA_ARRAY3D_DESCRIPTOR& descriptor) noexcept {
  const driver::DriverTable& table = driver::real();
  if (table.cuArray3DCreate_v2 != nullptr && table.cuArrayGetMemoryRequirements != nullptr) {
    CUDA_ARRAY3D_DESCRIPTOR deferred = descriptor;
    deferred.Flags |= CUDA_ARRAY3D_DEFERRED_MAPPING;
    const std::uint64_t bytes = deferred_twin_bytes<CUarray>(
        [&](CUarray* twin) { return table.cuArray3DCreate_v2(twin, &deferred); },
        [&](CUDA_ARRAY_MEMORY_REQUIREMENTS* out, CUarray twin) { return table.cuArrayGetMemoryRequirements(out, twin, device); },
        [&](CUarray twin) { (void)forward(table.cuArrayDestroy, twin); });
    if (bytes != 0) return bytes;
  }
  return array_element_bytes(descriptor);
}

// Charges the array just made, or destroys it again (CUDA_ERROR_OUT_OF_MEMORY) if the cap cannot take it.
CUresult charge_made(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR& descriptor) noexcept {
  const driver::DriverTable& table = driver::real();
  try {
    CUdevice device = 0;
    if (forward(table.cuCtxGetDevice, &device) != CUDA_SUCCESS) return CUDA_SUCCESS;
    CUcontext context = nullptr;
    (void)forward(table.cuCtxGetCurrent, &context);
    const std::uint64_t bytes = array_bytes(device, descriptor);
    if (!charge_driver_memory(ctl::Holder::arrays, device, bytes)) {
      (void)forward(table.cuArrayDestroy, *handle);
      *handle = nullptr;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CapState& s = state().caps;
    try {
      std::lock_guard lock(s.forwarded_mutex);
      s.arrays[reinterpret_cast<std::uintptr_t>(*handle)] = Forwarded{device, bytes, context};
    } catch (...) {
      s.cap.uncharge(ctl::Holder::arrays, device, bytes);
      throw;
    }
    return CUDA_SUCCESS;
  } catch (...) {
    (void)forward(table.cuArrayDestroy, *handle);
    *handle = nullptr;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

}  // namespace

std::uint64_t array_element_bytes(const CUDA_ARRAY3D_DESCRIPTOR& descriptor) noexcept {
  const std::uint64_t height = descriptor.Height == 0 ? 1 : descriptor.Height;
  const std::uint64_t depth = descriptor.Depth == 0 ? 1 : descriptor.Depth;
  const std::uint64_t element = times(format_bytes(descriptor.Format), descriptor.NumChannels);
  return times(times(times(descriptor.Width, height), depth), element);
}

CUresult array_create(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR* descriptor) noexcept {
  const driver::DriverTable& table = driver::real();
  const CUresult result = forward(table.cuArrayCreate_v2, handle, descriptor);
  if (result != CUDA_SUCCESS || handle == nullptr || *handle == nullptr || descriptor == nullptr || !limit_set()) {
    return result;
  }
  CUDA_ARRAY3D_DESCRIPTOR full{};
  full.Width = descriptor->Width;
  full.Height = descriptor->Height;
  full.Format = descriptor->Format;
  full.NumChannels = descriptor->NumChannels;
  return charge_made(handle, full);
}

CUresult array_create_3d(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* descriptor) noexcept {
  const driver::DriverTable& table = driver::real();
  const CUresult result = forward(table.cuArray3DCreate_v2, handle, descriptor);
  if (result != CUDA_SUCCESS || handle == nullptr || *handle == nullptr || descriptor == nullptr || !limit_set()) {
    return result;
  }
  // A deferred-mapping array holds no memory: what is mapped into it (cuMemMapArrayAsync) comes
  // from cuMemCreate, charged there.
  if ((descriptor->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) != 0) return result;
  return charge_made(handle, *descriptor);
}

CUresult array_destroy(CUarray handle) noexcept {
  const driver::DriverTable& table = driver::real();
  ProcessState* current = existing_state();
  if (current == nullptr) return forward(table.cuArrayDestroy, handle);
  CapState& s = current->caps;
  try {
    std::lock_guard lock(s.forwarded_mutex);
    if (s.arrays.empty()) return forward(table.cuArrayDestroy, handle);
    const CUresult result = forward(table.cuArrayDestroy, handle);
    const auto found = s.arrays.find(reinterpret_cast<std::uintptr_t>(handle));
    if (found != s.arrays.end() && (result == CUDA_SUCCESS || result == CUDA_ERROR_DEINITIALIZED)) {
      s.cap.uncharge(ctl::Holder::arrays, found->second.device, found->second.bytes);
      s.arrays.erase(found);
    }
    return result;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace streampool::interpose::control_hooks
