// Entry points: mipmapped arrays, each a list of arrays (array.hpp), one a level: level i halves the
// extent of level i-1 in every dimension it has (never below 1), a layered array keeping its layer
// count. Create, destroy, a level's array, and the memory the whole takes
// (cuMipmappedArrayGetMemoryRequirements: the levels' array sizes summed, answered only for a
// mipmapped array made with CUDA_ARRAY3D_DEFERRED_MAPPING, as by NVIDIA's driver).
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "api_guard.hpp"
#include "array.hpp"
#include "driver.hpp"

namespace fake {
namespace {

struct FakeMipmap {
  std::vector<CUarray> levels;
  bool deferred = false;  // made with CUDA_ARRAY3D_DEFERRED_MAPPING
};

struct MipmapRegistry {
  std::mutex mutex;
  std::map<CUmipmappedArray, std::unique_ptr<FakeMipmap>> mipmaps;
};

MipmapRegistry& registry() {
  static auto* instance = new MipmapRegistry();  // never destroyed
  return *instance;
}

std::size_t halved(std::size_t extent, unsigned level) { return extent == 0 ? 0 : std::max<std::size_t>(1, extent >> level); }

// As NVIDIA's driver: at most 1 + floor(log2(the largest extent)) levels.
unsigned most_levels(const CUDA_ARRAY3D_DESCRIPTOR& descriptor) {
  const bool layered = (descriptor.Flags & CUDA_ARRAY3D_LAYERED) != 0;
  std::size_t largest = std::max(descriptor.Width, descriptor.Height);
  if (!layered) largest = std::max(largest, descriptor.Depth);
  unsigned levels = 1;
  while (largest > 1) {
    largest >>= 1;
    ++levels;
  }
  return levels;
}

CUresult create(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* descriptor, unsigned count) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (out == nullptr || descriptor == nullptr || descriptor->Width == 0 || count == 0 ||
      count > most_levels(*descriptor)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto mipmap = std::make_unique<FakeMipmap>();
  mipmap->deferred = (descriptor->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) != 0;
  const bool layered = (descriptor->Flags & CUDA_ARRAY3D_LAYERED) != 0;
  for (unsigned level = 0; level < count; ++level) {
    CUDA_ARRAY3D_DESCRIPTOR level_descriptor = *descriptor;
    level_descriptor.Width = halved(descriptor->Width, level);
    level_descriptor.Height = halved(descriptor->Height, level);
    level_descriptor.Depth = layered ? descriptor->Depth : halved(descriptor->Depth, level);
    CUarray array = nullptr;
    if (CUresult status = create_array(&array, &level_descriptor); status != CUDA_SUCCESS) {
      for (CUarray made : mipmap->levels) destroy_array(made);
      return status;
    }
    mipmap->levels.push_back(array);
  }
  const auto handle = reinterpret_cast<CUmipmappedArray>(mipmap.get());
  MipmapRegistry& mipmaps = registry();
  std::lock_guard lock(mipmaps.mutex);
  mipmaps.mipmaps.emplace(handle, std::move(mipmap));
  *out = handle;
  return CUDA_SUCCESS;
}

CUresult destroy(CUmipmappedArray handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  std::unique_ptr<FakeMipmap> gone;
  {
    MipmapRegistry& mipmaps = registry();
    std::lock_guard lock(mipmaps.mutex);
    auto found = mipmaps.mipmaps.find(handle);
    if (found == mipmaps.mipmaps.end()) return CUDA_ERROR_INVALID_HANDLE;
    gone = std::move(found->second);
    mipmaps.mipmaps.erase(found);
  }
  for (CUarray level : gone->levels) destroy_array(level);
  return CUDA_SUCCESS;
}

CUresult get_level(CUarray* out, CUmipmappedArray handle, unsigned level) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  MipmapRegistry& mipmaps = registry();
  std::lock_guard lock(mipmaps.mutex);
  auto found = mipmaps.mipmaps.find(handle);
  if (found == mipmaps.mipmaps.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (level >= found->second->levels.size()) return CUDA_ERROR_INVALID_VALUE;
  *out = found->second->levels[level];
  return CUDA_SUCCESS;
}

CUresult requirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* out, CUmipmappedArray handle, CUdevice device) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  MipmapRegistry& mipmaps = registry();
  std::lock_guard lock(mipmaps.mutex);
  auto found = mipmaps.mipmaps.find(handle);
  if (found == mipmaps.mipmaps.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (!found->second->deferred) return CUDA_ERROR_INVALID_VALUE;  // as NVIDIA's driver
  *out = CUDA_ARRAY_MEMORY_REQUIREMENTS{};
  for (CUarray level : found->second->levels) out->size += array_required_bytes(level);
  out->alignment = kArrayAlignment;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                            unsigned int numMipmapLevels) {
  FAKE_ENTRY(create(pHandle, pMipmappedArrayDesc, numMipmapLevels));
}
FAKE_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) { FAKE_ENTRY(destroy(hMipmappedArray)); }
FAKE_EXPORT CUresult cuMipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmappedArray,
                                              unsigned int level) {
  FAKE_ENTRY(get_level(pLevelArray, hMipmappedArray, level));
}
FAKE_EXPORT CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements,
                                                           CUmipmappedArray mipmap, CUdevice device) {
  FAKE_ENTRY(requirements(memoryRequirements, mipmap, device));
}
