// Entry points: CUDA arrays (array.hpp): create with a 2D or 3D descriptor, destroy, describe, and
// the memory an array takes (cuArrayGetMemoryRequirements: its bytes rounded up to kArrayAlignment,
// answered, as by NVIDIA's driver, only for an array made with CUDA_ARRAY3D_DEFERRED_MAPPING).
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "api_guard.hpp"
#include "array.hpp"
#include "driver.hpp"

namespace fake {
namespace {

struct FakeArray {
  CUDA_ARRAY3D_DESCRIPTOR descriptor;
  std::vector<unsigned char> bytes;  // empty for a deferred-mapping array
  ArrayLayout layout;
};

// The bytes an array's layout takes (held, unless it is a deferred-mapping array).
std::size_t layout_bytes(const ArrayLayout& layout) { return layout.pitch * layout.height * layout.depth; }

struct ArrayRegistry {
  std::mutex mutex;
  std::map<CUarray, std::unique_ptr<FakeArray>> arrays;
};

ArrayRegistry& registry() {
  static auto* instance = new ArrayRegistry();  // never destroyed
  return *instance;
}

CUresult create(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* descriptor) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (out == nullptr || descriptor == nullptr || descriptor->Width == 0) return CUDA_ERROR_INVALID_VALUE;
  const std::size_t element = format_bytes(descriptor->Format) * descriptor->NumChannels;
  const unsigned channels = descriptor->NumChannels;
  if (element == 0 || (channels != 1 && channels != 2 && channels != 4)) return CUDA_ERROR_INVALID_VALUE;
  auto array = std::make_unique<FakeArray>();
  array->descriptor = *descriptor;
  array->layout.pitch = descriptor->Width * element;
  array->layout.height = descriptor->Height == 0 ? 1 : descriptor->Height;
  array->layout.depth = descriptor->Depth == 0 ? 1 : descriptor->Depth;
  // A deferred-mapping array holds no memory of its own (a program maps memory into it).
  if ((descriptor->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) == 0) array->bytes.resize(layout_bytes(array->layout));
  array->layout.base = reinterpret_cast<std::uintptr_t>(array->bytes.data());
  const auto handle = reinterpret_cast<CUarray>(array.get());
  ArrayRegistry& arrays = registry();
  std::lock_guard lock(arrays.mutex);
  arrays.arrays.emplace(handle, std::move(array));
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult destroy(CUarray handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  ArrayRegistry& arrays = registry();
  std::lock_guard lock(arrays.mutex);
  return arrays.arrays.erase(handle) != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult create_2d(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* descriptor) {
  if (descriptor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR full{};
  full.Width = descriptor->Width;
  full.Height = descriptor->Height;
  full.Format = descriptor->Format;
  full.NumChannels = descriptor->NumChannels;
  return create(out, &full);
}

// What NVIDIA's driver reports is its own layout's size; the fake's is its layout's bytes, rounded up.
std::size_t rounded(std::size_t bytes) { return (bytes + kArrayAlignment - 1) / kArrayAlignment * kArrayAlignment; }

CUresult requirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* out, CUarray handle, CUdevice device) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  ArrayRegistry& arrays = registry();
  std::lock_guard lock(arrays.mutex);
  auto found = arrays.arrays.find(handle);
  if (found == arrays.arrays.end()) return CUDA_ERROR_INVALID_HANDLE;
  // As NVIDIA's driver: only an array made for deferred mapping answers.
  if ((found->second->descriptor.Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) == 0) return CUDA_ERROR_INVALID_VALUE;
  *out = CUDA_ARRAY_MEMORY_REQUIREMENTS{};
  out->size = rounded(layout_bytes(found->second->layout));
  out->alignment = kArrayAlignment;
  return CUDA_SUCCESS;
}

CUresult describe(CUDA_ARRAY3D_DESCRIPTOR* out, CUarray handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ArrayRegistry& arrays = registry();
  std::lock_guard lock(arrays.mutex);
  auto found = arrays.arrays.find(handle);
  if (found == arrays.arrays.end()) return CUDA_ERROR_INVALID_HANDLE;
  *out = found->second->descriptor;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult create_array(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* descriptor) { return create(out, descriptor); }

bool destroy_array(CUarray handle) {
  ArrayRegistry& arrays = registry();
  std::lock_guard lock(arrays.mutex);
  return arrays.arrays.erase(handle) != 0;
}

std::size_t array_required_bytes(CUarray handle) {
  ArrayRegistry& arrays = registry();
  std::lock_guard lock(arrays.mutex);
  auto found = arrays.arrays.find(handle);
  return found == arrays.arrays.end() ? 0 : rounded(layout_bytes(found->second->layout));
}

bool array_layout(CUarray handle, ArrayLayout* layout) {
  ArrayRegistry& arrays = registry();
  std::lock_guard lock(arrays.mutex);
  auto found = arrays.arrays.find(handle);
  // A deferred-mapping array has no memory to copy to or from until something is mapped into it,
  // which the fake does not model.
  if (found == arrays.arrays.end() || found->second->bytes.empty()) return false;
  *layout = found->second->layout;
  return true;
}

}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  FAKE_ENTRY(create(pHandle, pAllocateArray));
}
FAKE_EXPORT CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  FAKE_ENTRY(create_2d(pHandle, pAllocateArray));
}
FAKE_EXPORT CUresult cuArrayDestroy(CUarray hArray) { FAKE_ENTRY(destroy(hArray)); }
FAKE_EXPORT CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements, CUarray array,
                                                  CUdevice device) {
  FAKE_ENTRY(requirements(memoryRequirements, array, device));
}
FAKE_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  FAKE_ENTRY(describe(pArrayDescriptor, hArray));
}
