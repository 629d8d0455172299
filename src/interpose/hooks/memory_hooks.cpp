// The driver's synchronous device allocations and its memory figures, under the process cap
// (STREAMPOOL_LIMIT): cuMemAlloc_v2, cuMemAllocPitch_v2 and cuMemCreate are charged by these
// hooks and refused beyond the cap, cuMemRelease gives back, cuMemGetInfo_v2 answers within the
// cap. Without a cap each forwards unchanged. The logic is in control/process_limit.cpp;
// cuMemFree_v2 is pointer_hooks.cpp's (a pool pointer goes back to its pool). With
// STREAMPOOL_SERVE_MALLOC=1, cuMemAlloc_v2 and cuMemAllocPitch_v2 are served from streampool's
// pools instead (serve/serve_malloc.hpp), and counted there.
#include "call_counters.hpp"
#include "control/process_limit.hpp"
#include "process_state.hpp"
#include "serve/serve_malloc.hpp"

using streampool::interpose::Hook;
namespace sp = streampool::interpose;
namespace caps = streampool::interpose::control_hooks;
namespace serve = streampool::interpose::serve_hooks;
using streampool::driver::real;

STREAMPOOL_HOOK CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  sp::count_call(Hook::cuMemAlloc_v2);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuMemAlloc_v2, dptr, bytesize);
  if (serve::enabled()) return serve::mem_alloc(dptr, bytesize);
  return caps::mem_alloc(dptr, bytesize);
}

STREAMPOOL_HOOK CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                            unsigned int ElementSizeBytes) {
  sp::count_call(Hook::cuMemAllocPitch_v2);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  if (serve::enabled()) return serve::mem_alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  return caps::mem_alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

STREAMPOOL_HOOK CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                     const CUmemAllocationProp* prop, unsigned long long flags) {
  sp::count_call(Hook::cuMemCreate);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuMemCreate, handle, size, prop, flags);
  return caps::mem_create(handle, size, prop, flags);
}

STREAMPOOL_HOOK CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  sp::count_call(Hook::cuMemRelease);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuMemRelease, handle);
  return caps::mem_release(handle);
}

STREAMPOOL_HOOK CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  sp::count_call(Hook::cuMemGetInfo_v2);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuMemGetInfo_v2, free, total);
  return caps::mem_get_info(free, total);
}
