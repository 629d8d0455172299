// CUDA arrays under the process cap (STREAMPOOL_LIMIT): cuArrayCreate_v2, cuArray3DCreate_v2 and
// cuMipmappedArrayCreate are charged and refused beyond the cap, cuArrayDestroy and
// cuMipmappedArrayDestroy give back. Without a cap each forwards unchanged. The logic is in
// control/array_charges.cpp and control/mipmap_charges.cpp.
#include "call_counters.hpp"
#include "control/array_charges.hpp"
#include "control/mipmap_charges.hpp"
#include "process_state.hpp"

using streampool::interpose::Hook;
namespace sp = streampool::interpose;
namespace caps = streampool::interpose::control_hooks;
using streampool::driver::real;

STREAMPOOL_HOOK CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  sp::count_call(Hook::cuArrayCreate_v2);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuArrayCreate_v2, pHandle, pAllocateArray);
  return caps::array_create(pHandle, pAllocateArray);
}

STREAMPOOL_HOOK CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  sp::count_call(Hook::cuArray3DCreate_v2);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuArray3DCreate_v2, pHandle, pAllocateArray);
  return caps::array_create_3d(pHandle, pAllocateArray);
}

STREAMPOOL_HOOK CUresult cuArrayDestroy(CUarray hArray) {
  sp::count_call(Hook::cuArrayDestroy);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuArrayDestroy, hArray);
  return caps::array_destroy(hArray);
}

STREAMPOOL_HOOK CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
                                                unsigned int numMipmapLevels) {
  sp::count_call(Hook::cuMipmappedArrayCreate);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuMipmappedArrayCreate, pHandle, pMipmappedArrayDesc, numMipmapLevels);
  return caps::mipmap_create(pHandle, pMipmappedArrayDesc, numMipmapLevels);
}

STREAMPOOL_HOOK CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  sp::count_call(Hook::cuMipmappedArrayDestroy);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(real().cuMipmappedArrayDestroy, hMipmappedArray);
  return caps::mipmap_destroy(hMipmappedArray);
}
