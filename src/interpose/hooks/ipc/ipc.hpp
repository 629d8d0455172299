// Pools shared between processes: what the other hooks call (the pool, free and pointer hooks). The
// design is in docs/DESIGN.md, "Pools shared between processes"; the wire in ipc_protocol.hpp.
//
// Exporting process: a pool created with handle types (POSIX_FILE_DESCRIPTOR) is registered here
// with the table of its physical allocations; cuMemPoolExportToShareableHandle hands out a
// descriptor served by a thread of the exporter; cuMemPoolExportPointer signs the allocation's
// export data; a free of an exported allocation makes its data stale at once.
// Importing process: cuMemPoolImportFromShareableHandle makes an engine pool that cannot allocate
// (its backing refuses to reserve), cuMemPoolImportPointer maps the allocation's physical memory
// at a fresh address, and cuMemFree(Async) of that address unmaps it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "driver/cuda_compat.hpp"
#include "core/engine.hpp"
#include "driver/granule_table.hpp"

namespace streampool::interpose::ipc {

// --- exporting process ---
CUresult register_exportable(core::Pool* pool, const core::PoolProps& props,
                             std::shared_ptr<driver::GranuleTable> granules) noexcept;
CUresult export_pool(core::Pool* pool, int handle_type, unsigned long long flags, void* handle_out) noexcept;
CUresult export_pointer(CUmemPoolPtrExportData* data, CUdeviceptr pointer) noexcept;

namespace detail {
extern std::atomic<bool> pointers_exported;
extern std::atomic<bool> pointers_imported;
void forget_export(std::uintptr_t address) noexcept;
void stop_exporting(const core::Pool* pool) noexcept;
}  // namespace detail
// An allocation was freed: data exported for it no longer imports. One relaxed load until the
// process first exports a pointer.
inline void allocation_freed(CUdeviceptr pointer) noexcept {
  if (detail::pointers_exported.load(std::memory_order_relaxed)) [[unlikely]] {
    detail::forget_export(static_cast<std::uintptr_t>(pointer));
  }
}

// --- importing process ---
CUresult import_pool(CUmemoryPool* pool_out, void* handle, int handle_type, unsigned long long flags) noexcept;
CUresult import_pointer(CUdeviceptr* pointer_out, core::Pool* pool, const CUmemPoolPtrExportData* data) noexcept;
bool is_imported_pool(const core::Pool* pool) noexcept;
bool is_imported_pointer(CUdeviceptr pointer) noexcept;
// cuMemFree of an imported allocation: unmaps it once the current context's work is done (the
// importer frees first, as the spec requires, so its use of the memory must have finished).
CUresult free_imported(CUdeviceptr pointer) noexcept;
// cuMemFreeAsync of an imported allocation: returns at once and unmaps it once `stream`'s work
// before the free is done, whatever context the stream belongs to (a host function behind it
// hands the mapping to a thread that unmaps).
CUresult free_imported_async(CUdeviceptr pointer, CUstream stream) noexcept;

// A pool is being destroyed (exported: stop serving it; imported: close its channel).
void pool_destroyed(const core::Pool* pool) noexcept;

}  // namespace streampool::interpose::ipc
