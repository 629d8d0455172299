// The four IPC calls of the pool family (ipc.hpp). Pass-through mode forwards them unchanged.
#include "hooks/call_counters.hpp"
#include "ipc.hpp"
#include "hooks/process_state.hpp"
#include "hooks/raw_enum.hpp"

using streampool::interpose::Hook;
namespace sp = streampool::interpose;

STREAMPOOL_HOOK CUresult cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool,
                                                          CUmemAllocationHandleType handleType,
                                                          unsigned long long flags) {
  sp::count_call(Hook::cuMemPoolExportToShareableHandle);
  sp::HookScope scope;
  if (sp::bypass(scope)) {
    return sp::forward(sp::as_int_abi(streampool::driver::real().cuMemPoolExportToShareableHandle), handle_out, pool,
                       sp::raw_enum(handleType), flags);
  }
  return sp::ipc::export_pool(reinterpret_cast<streampool::core::Pool*>(pool), sp::raw_enum(handleType), flags,
                              handle_out);
}

STREAMPOOL_HOOK CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                                            CUmemAllocationHandleType handleType,
                                                            unsigned long long flags) {
  sp::count_call(Hook::cuMemPoolImportFromShareableHandle);
  sp::HookScope scope;
  if (sp::bypass(scope)) {
    return sp::forward(sp::as_int_abi(streampool::driver::real().cuMemPoolImportFromShareableHandle), pool_out, handle,
                       sp::raw_enum(handleType), flags);
  }
  return sp::ipc::import_pool(pool_out, handle, sp::raw_enum(handleType), flags);
}

STREAMPOOL_HOOK CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr) {
  sp::count_call(Hook::cuMemPoolExportPointer);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(streampool::driver::real().cuMemPoolExportPointer, shareData_out, ptr);
  return sp::ipc::export_pointer(shareData_out, ptr);
}

STREAMPOOL_HOOK CUresult cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                                CUmemPoolPtrExportData* shareData) {
  sp::count_call(Hook::cuMemPoolImportPointer);
  sp::HookScope scope;
  if (sp::bypass(scope)) return sp::forward(streampool::driver::real().cuMemPoolImportPointer, ptr_out, pool, shareData);
  return sp::ipc::import_pointer(ptr_out, reinterpret_cast<streampool::core::Pool*>(pool), shareData);
}
