// Backings over the real driver: where a pool's memory comes from.
//
// VmmBacking is the one streampool wants: it reserves a large virtual range per pool once
// (cuMemAddressReserve) and maps physical granules behind it only where live blocks are
// (cuMemCreate + cuMemMap + cuMemSetAccess; cuMemUnmap gives a granule back), so a pool grows
// contiguously and trims whole granules. The granule is cuMemGetAllocationGranularity(RECOMMENDED)
// (2 MiB on H200). It serves device memory, and pinned host memory (location HOST) where the
// driver can create it.
//
// ChunkBacking is the fallback for what VMM cannot do: managed pools, and device or host pools on a
// driver or device without VMM support. Each reserve() is one cuMemAlloc / cuMemHostAlloc /
// cuMemAllocManaged chunk, already usable, so reservation_bytes() == 0 and map/unmap are no-ops.
//
// Both make the owning device's context current around their driver calls (VMM calls need one on
// some drivers; cuMemAlloc allocates in the current context).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/backing.hpp"
#include "cuda_compat.hpp"
#include "core/pool_props.hpp"
#include "granule_table.hpp"

namespace streampool::driver {

class VmmBacking final : public core::Backing {
 public:
  // Fails with the driver's answer when VMM cannot serve this pool (callers fall back to chunks).
  static CUresult create(const core::PoolProps& props, std::unique_ptr<core::Backing>* out) noexcept;
  // An exportable pool (props.handle_types): every physical allocation is created shareable and its
  // handle kept in `granules` while it is mapped.
  static CUresult create(const core::PoolProps& props, std::shared_ptr<GranuleTable> granules,
                         std::unique_ptr<core::Backing>* out) noexcept;

  std::size_t granule_bytes() const override { return granule_bytes_; }
  std::size_t reservation_bytes() const override { return reservation_bytes_; }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override;
  core::Status unreserve(std::uintptr_t base, std::size_t bytes) override;
  core::Status map(std::uintptr_t address, std::size_t bytes,
                   std::span<const core::AccessDescriptor> access) override;
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override;
  core::Status set_access(std::uintptr_t address, std::size_t bytes,
                          std::span<const core::AccessDescriptor> access) override;

 private:
  // A mapping whose handle the driver would not release: released again once it is unmapped
  // (until then the handle and the mapping both hold the physical memory).
  struct UnreleasedHandle {
    std::uintptr_t address;
    CUmemGenericAllocationHandle handle;
  };
  void release_after_unmap(std::uintptr_t address) noexcept;
  core::Status map_exportable(std::uintptr_t address, std::size_t bytes, CUmemGenericAllocationHandle handle,
                              std::span<const core::AccessDescriptor> access);
  VmmBacking(const CUmemAllocationProp& prop, CUdevice context_device, std::size_t granule_bytes,
             std::size_t reservation_bytes);
  // The owner's own access plus the pool's access list, in the driver's terms.
  std::vector<CUmemAccessDesc> access_list(std::span<const core::AccessDescriptor> access) const;
  CUresult apply_access(std::uintptr_t address, std::size_t bytes,
                        std::span<const core::AccessDescriptor> access);

  CUmemAllocationProp prop_;
  CUdevice context_device_;  // whose context VMM calls run in
  std::size_t granule_bytes_;
  std::size_t reservation_bytes_;
  bool host_access_rejected_ = false;  // the driver refused a host access descriptor once
  std::vector<UnreleasedHandle> unreleased_;  // rare: only after a failed cuMemRelease
  std::shared_ptr<GranuleTable> granules_;    // exportable pools only
};

class ChunkBacking final : public core::Backing {
 public:
  explicit ChunkBacking(const core::PoolProps& props) noexcept;

  std::size_t granule_bytes() const override { return kChunkGranule; }
  std::size_t reservation_bytes() const override { return 0; }
  core::Status reserve(std::size_t bytes, std::uintptr_t* base) override;
  core::Status unreserve(std::uintptr_t base, std::size_t bytes) override;
  core::Status map(std::uintptr_t address, std::size_t bytes,
                   std::span<const core::AccessDescriptor> access) override;
  core::Status unmap(std::uintptr_t address, std::size_t bytes) override;
  core::Status set_access(std::uintptr_t address, std::size_t bytes,
                          std::span<const core::AccessDescriptor> access) override;

 private:
  static constexpr std::size_t kChunkGranule = std::size_t{2} << 20;
  core::PoolProps props_;
  CUdevice context_device_;
};

// The backing for a pool: VMM where it can serve the pool, else whole chunks; whole chunks only
// when `chunks_only` (NVTX registration: compute-sanitizer takes an NVTX heap only over memory
// cuMemAlloc made, not over VMM mappings). invalid_value for a pool no backing can serve (a device
// that does not exist).
core::Status make_backing(const core::PoolProps& props, std::unique_ptr<core::Backing>* out,
                          bool chunks_only = false) noexcept;
// The backing of a pool with export handle types: VMM with shareable physical allocations, or
// not_supported where the driver cannot create them (no chunk fallback: chunks cannot be shared).
core::Status make_exportable_backing(const core::PoolProps& props, std::shared_ptr<GranuleTable>* granules,
                                     std::unique_ptr<core::Backing>* out) noexcept;

}  // namespace streampool::driver
