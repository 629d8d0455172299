// What the exporting and the importing process of a shared pool exchange (docs/DESIGN.md, "Pools
// shared between processes").
//
// The shareable handle of a pool is one end of a unix SOCK_SEQPACKET socket pair; the exporter's
// service thread reads the other end. An importer asks by sending a Request on the handle with a
// fresh socket of its own attached (SCM_RIGHTS): the answer comes back on that private socket, so
// several importers holding the same handle never read each other's answers, and only a holder of
// the handle can ask at all.
//   describe_pool -> PoolDescription
//   map_pointer   -> PointerReply, then MappingBatch messages carrying one descriptor per physical
//                    allocation behind the pointer (cuMemExportToShareableHandle), in address order;
//                    the exporter exports them batch by batch and the importer maps each batch as
//                    it arrives, so neither holds more than a batch of descriptors open.
//
// ExportData is the 64 bytes of CUmemPoolPtrExportData: which allocation, the pool's token, a
// generation that changes whenever an allocation at that address is exported anew, and a tag
// (ipc_mac.hpp) under the pool's secret. Only the exporter can check the tag; it answers
// map_pointer only for data it made for an allocation that is still live and still exported.
#pragma once

#include <cstdint>
#include <cstring>

#include "ipc_channel.hpp"
#include "ipc_mac.hpp"

namespace streampool::interpose::ipc {

inline constexpr std::uint32_t kRequestMagic = 0x51525053u;      // "SPRQ"
inline constexpr std::uint32_t kReplyMagic = 0x50525053u;        // "SPRP"
inline constexpr std::uint32_t kExportDataMagic = 0x31585053u;   // "SPX1"
inline constexpr std::uint32_t kExportDataVersion = 1;
inline constexpr int kReplyTimeoutMs = 10000;  // an exporter that does not answer: a refusal

enum class RequestKind : std::uint32_t { describe_pool = 1, map_pointer = 2 };

struct Request {
  std::uint32_t magic = kRequestMagic;
  std::uint32_t kind = 0;
  unsigned char data[64] = {};  // ExportData for map_pointer
};

struct PoolDescription {
  std::uint32_t magic = kReplyMagic;
  std::int32_t status = 0;  // a CUresult
  std::int32_t allocation_type = 0;
  std::int32_t location_type = 0;
  std::int32_t location_id = 0;
  std::int32_t kind = 0;  // core::PoolKind
  std::uint64_t token = 0;
};

struct PointerReply {
  std::uint32_t magic = kReplyMagic;
  std::int32_t status = 0;  // a CUresult; the batches follow only on success
  std::uint32_t mappings = 0;
  std::uint32_t reserved = 0;
  std::uint64_t offset = 0;  // of the pointer in the first mapping
  std::uint64_t bytes = 0;   // the allocation's size
  std::uint64_t total = 0;   // the mappings' sizes added up: what the importer reserves
};

struct MappingBatch {
  std::uint32_t magic = kReplyMagic;
  std::uint32_t count = 0;  // descriptors attached, one per size below
  std::uint64_t sizes[kMaxFdsPerMessage] = {};
};

// The layout inside CUmemPoolPtrExportData.
struct ExportData {
  std::uint32_t magic = 0;
  std::uint32_t version = 0;
  std::uint64_t token = 0;       // the exporting pool (random per pool)
  std::uint64_t address = 0;     // the allocation in the exporter
  std::uint64_t bytes = 0;       // its size
  std::uint64_t generation = 0;  // which export of that address
  MacTag tag;                    // over the 40 bytes above
  std::uint64_t zero = 0;        // must be 0
};
static_assert(sizeof(ExportData) == 64);
inline constexpr std::size_t kSignedBytes = 40;

inline ExportData read_export_data(const unsigned char (&bytes)[64]) noexcept {
  ExportData data;
  std::memcpy(&data, bytes, sizeof data);
  return data;
}

inline MacTag tag_for(const MacKey& key, const ExportData& data) noexcept {
  unsigned char signed_bytes[kSignedBytes];
  std::memcpy(signed_bytes, &data, kSignedBytes);
  return mac_of(key, signed_bytes, kSignedBytes);
}

// What the importer can check without the key: the frame of the data.
inline bool well_formed(const ExportData& data) noexcept {
  return data.magic == kExportDataMagic && data.version == kExportDataVersion && data.zero == 0 &&
         data.address != 0 && data.bytes != 0 && data.generation != 0;
}

}  // namespace streampool::interpose::ipc
