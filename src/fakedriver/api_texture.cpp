// Entry points: texture objects over linear memory, pitched memory and arrays, surface objects over
// arrays. Nothing samples them (no kernels
// run); what the fake keeps is what was asked for, so cuTexObjectGetResourceDesc and
// cuTexObjectGetTextureDesc answer it back, after the checks the driver makes: a known format and
// channel count, memory the fake handed out, no arrays.
#include <map>
#include <mutex>

#include "api_guard.hpp"
#include "array.hpp"
#include "driver.hpp"
#include "pointer_info.hpp"

namespace fake {
namespace {

struct TextureObject {
  CUDA_RESOURCE_DESC resource;
  CUDA_TEXTURE_DESC texture;
};

struct TextureRegistry {
  std::mutex mutex;
  CUtexObject next = 1;
  std::map<CUtexObject, TextureObject> objects;
};

TextureRegistry& textures() {
  static auto* registry = new TextureRegistry();  // never destroyed
  return *registry;
}

bool valid_channels(unsigned channels) { return channels == 1 || channels == 2 || channels == 4; }

bool valid_resource(const CUDA_RESOURCE_DESC& resource) {
  if (resource.flags != 0) return false;
  if (resource.resType == CU_RESOURCE_TYPE_LINEAR) {
    const auto& linear = resource.res.linear;
    return format_bytes(linear.format) != 0 && valid_channels(linear.numChannels) && linear.sizeInBytes != 0 &&
           device_range_usable(linear.devPtr, linear.sizeInBytes);
  }
  if (resource.resType == CU_RESOURCE_TYPE_PITCH2D) {
    const auto& pitched = resource.res.pitch2D;
    const std::size_t row = pitched.width * format_bytes(pitched.format) * pitched.numChannels;
    return format_bytes(pitched.format) != 0 && valid_channels(pitched.numChannels) && pitched.width != 0 &&
           pitched.height != 0 && pitched.pitchInBytes >= row &&
           device_range_usable(pitched.devPtr, (pitched.height - 1) * pitched.pitchInBytes + row);
  }
  if (resource.resType == CU_RESOURCE_TYPE_ARRAY) {
    ArrayLayout layout;
    return array_layout(resource.res.array.hArray, &layout);
  }
  return false;  // mipmapped arrays: the fake has none
}

CUresult create(CUtexObject* out, const CUDA_RESOURCE_DESC* resource, const CUDA_TEXTURE_DESC* texture,
                const CUDA_RESOURCE_VIEW_DESC* view) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (out == nullptr || resource == nullptr || texture == nullptr || view != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_resource(*resource)) return CUDA_ERROR_INVALID_VALUE;
  TextureRegistry& registry = textures();
  std::lock_guard lock(registry.mutex);
  const CUtexObject handle = registry.next++;
  registry.objects.emplace(handle, TextureObject{*resource, *texture});
  *out = handle;
  return CUDA_SUCCESS;
}

// Surfaces: over arrays only; kept with an empty texture description.
CUresult create_surface(CUsurfObject* out, const CUDA_RESOURCE_DESC* resource) {
  if (resource == nullptr || resource->resType != CU_RESOURCE_TYPE_ARRAY) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_TEXTURE_DESC none{};
  return create(out, resource, &none, nullptr);
}

CUresult destroy(CUtexObject handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  TextureRegistry& registry = textures();
  std::lock_guard lock(registry.mutex);
  return registry.objects.erase(handle) != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

template <class Read>
CUresult query(CUtexObject handle, Read&& read) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  TextureRegistry& registry = textures();
  std::lock_guard lock(registry.mutex);
  auto found = registry.objects.find(handle);
  if (found == registry.objects.end()) return CUDA_ERROR_INVALID_VALUE;
  read(found->second);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

using namespace fake;

FAKE_EXPORT CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                                       const CUDA_TEXTURE_DESC* pTexDesc, const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  FAKE_ENTRY(create(pTexObject, pResDesc, pTexDesc, pResViewDesc));
}
FAKE_EXPORT CUresult cuTexObjectDestroy(CUtexObject texObject) { FAKE_ENTRY(destroy(texObject)); }
FAKE_EXPORT CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject) {
  if (pResDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FAKE_ENTRY(query(texObject, [pResDesc](const TextureObject& object) { *pResDesc = object.resource; }));
}
FAKE_EXPORT CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc, CUtexObject texObject) {
  if (pTexDesc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FAKE_ENTRY(query(texObject, [pTexDesc](const TextureObject& object) { *pTexDesc = object.texture; }));
}
FAKE_EXPORT CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc) {
  FAKE_ENTRY(create_surface(pSurfObject, pResDesc));
}
FAKE_EXPORT CUresult cuSurfObjectDestroy(CUsurfObject surfObject) { FAKE_ENTRY(destroy(surfObject)); }
