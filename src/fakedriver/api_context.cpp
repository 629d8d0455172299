// Entry points: primary contexts, created contexts, the per-thread context stack.
#include "allocations.hpp"
#include "api_guard.hpp"
#include "driver.hpp"
#include "graph_memory.hpp"

namespace fake {
namespace {

CUresult context_from_handle(CUcontext handle, Context*& out) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr) return require_current_context(out);
  auto* context = reinterpret_cast<Context*>(handle);
  if (!Driver::instance().live_context(context)) return CUDA_ERROR_INVALID_CONTEXT;
  out = context;
  return CUDA_SUCCESS;
}

constexpr unsigned kContextFlagMask = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                                      CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS;

CUresult primary_retain(CUcontext* pctx, CUdevice device) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* primary = Driver::instance().device(device).primary;
  std::lock_guard lock(primary->primary_mutex);
  ++primary->primary_retains;
  *pctx = primary->handle();
  return CUDA_SUCCESS;
}

void reset(Context* context) {
  Driver::instance().unregister_streams_of(context);
  context->tear_down();
  free_allocations_of(context);
  graph_memory_context_ended(context, context->device());
}

CUresult primary_release(CUdevice device) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  Context* primary = Driver::instance().device(device).primary;
  std::lock_guard lock(primary->primary_mutex);
  if (primary->primary_retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--primary->primary_retains == 0) reset(primary);
  return CUDA_SUCCESS;
}

CUresult primary_reset(CUdevice device) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  Context* primary = Driver::instance().device(device).primary;
  std::lock_guard lock(primary->primary_mutex);
  reset(primary);
  return CUDA_SUCCESS;
}

CUresult primary_set_flags(CUdevice device, unsigned flags) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if ((flags & ~kContextFlagMask) != 0) return CUDA_ERROR_INVALID_VALUE;
  Driver::instance().device(device).primary->set_flags(flags);
  return CUDA_SUCCESS;
}

CUresult primary_get_state(CUdevice device, unsigned* flags, int* active) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* primary = Driver::instance().device(device).primary;
  std::lock_guard lock(primary->primary_mutex);
  *flags = primary->flags();
  *active = primary->primary_retains > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult context_create(CUcontext* pctx, unsigned flags, CUdevice device) {
  if (CUresult status = require_device(device); status != CUDA_SUCCESS) return status;
  if (pctx == nullptr || (flags & ~kContextFlagMask) != 0) return CUDA_ERROR_INVALID_VALUE;
  Context* context = Driver::instance().create_context(device, flags);
  push_current_context(context);
  *pctx = context->handle();
  return CUDA_SUCCESS;
}

CUresult context_destroy(CUcontext handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* context = reinterpret_cast<Context*>(handle);
  if (!Driver::instance().live_context(context)) return CUDA_ERROR_INVALID_CONTEXT;
  if (context->is_primary()) return CUDA_ERROR_INVALID_CONTEXT;  // primary contexts are released, not destroyed
  if (!Driver::instance().forget_context(context)) return CUDA_ERROR_INVALID_CONTEXT;  // a racing destroy won
  reset(context);
  if (current_context() == context) pop_current_context();
  Driver::instance().retire_context(context);
  return CUDA_SUCCESS;
}

CUresult context_get_current(CUcontext* pctx) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* context = current_context();
  *pctx = context == nullptr ? nullptr : context->handle();
  return CUDA_SUCCESS;
}

CUresult context_set_current(CUcontext handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  auto* context = reinterpret_cast<Context*>(handle);
  if (context != nullptr && !Driver::instance().live_context(context)) return CUDA_ERROR_INVALID_CONTEXT;
  set_current_context(context);
  return CUDA_SUCCESS;
}

CUresult context_push(CUcontext handle) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  auto* context = reinterpret_cast<Context*>(handle);
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!Driver::instance().live_context(context)) return CUDA_ERROR_INVALID_CONTEXT;
  push_current_context(context);
  return CUDA_SUCCESS;
}

CUresult context_pop(CUcontext* pctx) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (current_context() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  Context* popped = pop_current_context();
  if (pctx != nullptr) *pctx = popped->handle();
  return CUDA_SUCCESS;
}

CUresult context_get_device(CUdevice* device, CUcontext handle) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* context = nullptr;
  if (CUresult status = context_from_handle(handle, context); status != CUDA_SUCCESS) return status;
  *device = context->device();
  return CUDA_SUCCESS;
}

CUresult context_synchronize(CUcontext handle) {
  Context* context = nullptr;
  if (CUresult status = context_from_handle(handle, context); status != CUDA_SUCCESS) return status;
  context->synchronize();
  return CUDA_SUCCESS;
}

CUresult context_get_api_version(CUcontext handle, unsigned* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* context = nullptr;
  if (CUresult status = context_from_handle(handle, context); status != CUDA_SUCCESS) return status;
  *version = 3020;  // what NVIDIA's driver reports for every context since CUDA 3.2
  return CUDA_SUCCESS;
}

CUresult context_get_id(CUcontext handle, unsigned long long* id) {
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* context = nullptr;
  if (CUresult status = context_from_handle(handle, context); status != CUDA_SUCCESS) return status;
  *id = context->id();
  return CUDA_SUCCESS;
}

CUresult context_get_flags(unsigned* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  *flags = context->flags();
  return CUDA_SUCCESS;
}

CUresult context_stream_priority_range(int* least, int* greatest) {
  Context* context = nullptr;
  if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

using namespace fake;

// The names cuda.h maps to their newest versions are declared here in their own forms.
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev);
FAKE_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
FAKE_EXPORT CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev);
FAKE_EXPORT CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);
FAKE_EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                    unsigned int flags, CUdevice dev);
FAKE_EXPORT CUresult cuCtxDestroy(CUcontext ctx);
FAKE_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx);
FAKE_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx);

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) { FAKE_ENTRY(primary_retain(pctx, dev)); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { FAKE_ENTRY(primary_release(dev)); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { FAKE_ENTRY(primary_release(dev)); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) { FAKE_ENTRY(primary_reset(dev)); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) { FAKE_ENTRY(primary_reset(dev)); }
FAKE_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  FAKE_ENTRY(primary_set_flags(dev, flags));
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  FAKE_ENTRY(primary_set_flags(dev, flags));
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  FAKE_ENTRY(primary_get_state(dev, flags, active));
}

FAKE_EXPORT CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  FAKE_ENTRY(context_create(pctx, flags, dev));
}
FAKE_EXPORT CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  FAKE_ENTRY(context_create(pctx, flags, dev));
}
FAKE_EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                    unsigned int flags, CUdevice dev) {
  FAKE_ENTRY((numParams > 0 && paramsArray == nullptr) ? CUDA_ERROR_INVALID_VALUE : context_create(pctx, flags, dev));
}
FAKE_EXPORT CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                                    CUdevice dev) {
  // Execution affinity and CIG parameters describe hardware partitioning; the fake accepts and ignores them.
  static_cast<void>(ctxCreateParams);
  FAKE_ENTRY(context_create(pctx, flags, dev));
}
FAKE_EXPORT CUresult cuCtxDestroy(CUcontext ctx) { FAKE_ENTRY(context_destroy(ctx)); }
FAKE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) { FAKE_ENTRY(context_destroy(ctx)); }
FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) { FAKE_ENTRY(context_get_current(pctx)); }
FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) { FAKE_ENTRY(context_set_current(ctx)); }
FAKE_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) { FAKE_ENTRY(context_push(ctx)); }
FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) { FAKE_ENTRY(context_push(ctx)); }
FAKE_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx) { FAKE_ENTRY(context_pop(pctx)); }
FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* pctx) { FAKE_ENTRY(context_pop(pctx)); }
FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* device) { FAKE_ENTRY(context_get_device(device, nullptr)); }
FAKE_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) { FAKE_ENTRY(context_get_device(device, ctx)); }
FAKE_EXPORT CUresult cuCtxSynchronize() { FAKE_ENTRY(context_synchronize(nullptr)); }
FAKE_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) { FAKE_ENTRY(context_synchronize(ctx)); }
FAKE_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  FAKE_ENTRY(context_get_api_version(ctx, version));
}
FAKE_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) { FAKE_ENTRY(context_get_id(ctx, ctxId)); }
FAKE_EXPORT CUresult cuCtxGetFlags(unsigned int* flags) { FAKE_ENTRY(context_get_flags(flags)); }
FAKE_EXPORT CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  FAKE_ENTRY(context_stream_priority_range(leastPriority, greatestPriority));
}
