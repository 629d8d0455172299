// The trace file format (docs/TRACE_FORMAT.md is its specification; keep the two in step).
//
// A trace is a 64-byte header followed by fixed-size 56-byte records, all little-endian. Records
// are written in per-thread chunks, so they are ordered by time within one thread only; readers
// sort by time. Fixed-size records keep the recorder's hot path to a few stores and make a file
// cut short by a crash readable up to its last whole record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace streampool::trace {

inline constexpr char kMagic[8] = {'S', 'P', 'T', 'R', 'A', 'C', 'E', '\0'};
inline constexpr std::uint32_t kFormatVersion = 1;

struct FileHeader {
  char magic[8];                 // kMagic
  std::uint32_t version;         // kFormatVersion
  std::uint32_t header_bytes;    // sizeof(FileHeader): records start here
  std::uint32_t record_bytes;    // sizeof(Record)
  std::uint32_t pid;             // the process that wrote the file
  std::uint64_t start_unix_ns;   // wall clock when the trace started (CLOCK_REALTIME)
  std::uint32_t parent_pid;      // for a forked child's trace: the parent's pid, else 0
  std::uint32_t reserved0;
  std::uint64_t reserved[3];
};
static_assert(sizeof(FileHeader) == 64);

// What happened. Numbers are part of the format: never reuse one.
enum class Op : std::uint16_t {
  alloc = 1,               // cuMemAllocAsync: stream, pool (the one served), size, address, result
  alloc_from_pool = 2,     // cuMemAllocFromPoolAsync: the same
  free = 3,                // cuMemFreeAsync: stream, address (pool and size: 0, those of its allocation)
  free_completed = 4,      // cuMemFree of a pool allocation: address
  pool_create = 5,         // pool, size = max pool size, address = location_type << 32 | location_id, flags = kind
  pool_destroy = 6,        // pool
  pool_trim = 7,           // pool, size = bytes to keep
  pool_set_attribute = 8,  // pool, address = CUmemPool_attribute, size = value
  event_record = 9,        // stream, address = event
  stream_wait_event = 10,  // stream = the waiter, address = event
  stream_synchronize = 11, // stream
  stream_query = 12,       // stream (result 0: complete)
  event_synchronize = 13,  // address = event
  event_query = 14,        // address = event (result 0: complete)
  context_synchronize = 15,
  stream_create = 16,      // stream, flags = creation flags (1: non-blocking)
  stream_destroy = 17,     // stream
};
inline constexpr std::uint16_t kLastOp = 17;

// Record::flags bits.
inline constexpr std::uint16_t kPerThreadVariant = 1u << 15;  // the _ptsz entry point

struct Record {
  std::uint64_t time_ns;      // since the trace started (CLOCK_MONOTONIC based)
  std::uint32_t duration_ns;  // time spent in the call, saturating
  std::uint32_t thread;       // 1, 2, ... in the order threads first made a traced call
  std::uint16_t op;           // Op
  std::uint16_t flags;        // per op; kPerThreadVariant
  std::int32_t result;        // the CUresult returned to the program
  std::uint64_t stream;       // the CUstream handle as the program passed it (0: legacy default)
  std::uint64_t pool;         // the CUmemoryPool handle
  std::uint64_t size;         // bytes, or per op
  std::uint64_t address;      // device address, event handle, or per op
};
static_assert(sizeof(Record) == 56);

std::string_view op_name(std::uint16_t op) noexcept;

}  // namespace streampool::trace
