// The trace file format (docs/TRACE_FORMAT.md is its specification; keep the two in step).
//
// A trace is a 64-byte header followed by blocks, all little-endian. A block holds the records of
// one thread, each encoded against the one before it (a mask of the fields that repeat, varints of
// the rest: a same-stream allocate/free pair takes about 12 bytes instead of 112), so records are ordered by time within
// one thread only; readers sort by time. A file cut short by a crash is readable up to its last
// whole block. In memory (the recorder's buffers, the reader's result) a record is the fixed
// 56-byte Record below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace streampool::trace {

inline constexpr char kMagic[8] = {'S', 'P', 'T', 'R', 'A', 'C', 'E', '\0'};
inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr std::uint32_t kBlockVersion = 1;

struct FileHeader {
  char magic[8];                 // kMagic
  std::uint32_t version;         // kFormatVersion
  std::uint32_t header_bytes;    // sizeof(FileHeader): blocks start here
  std::uint32_t block_version;   // kBlockVersion: how records are encoded
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
  out_of_memory = 18,      // an allocation failed: stream, pool, size requested, address = the device's free
                           // memory (within the cap; 0: unknown), flags = the explanation (OomCause), result
};
inline constexpr std::uint16_t kLastOp = 18;

// Record::flags of an out_of_memory record: what explains the failure (src/insight/oom_report.hpp).
enum class OomCause : std::uint16_t {
  pending_frees = 1,
  fragmentation = 2,
  held_outside = 3,
  cap_reached = 4,
  device_full = 5,
  pool_limit = 6,
};
inline constexpr std::uint16_t kLastOomCause = 6;
// "pending_frees" ..., "unknown" for another value.
std::string_view oom_cause_name(std::uint16_t cause) noexcept;

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

// A block: this header, then `bytes` bytes encoding `count` records of thread `thread`.
struct BlockHeader {
  char magic[4];  // "SPB1"
  std::uint32_t thread;
  std::uint32_t count;
  std::uint32_t bytes;
};
static_assert(sizeof(BlockHeader) == 16);
inline constexpr char kBlockMagic[4] = {'S', 'P', 'B', '1'};

// The most bytes one encoded record takes.
inline constexpr std::size_t kMaxEncodedRecord = 2 + 10 + 3 + 5 + 5 + 4 * 10;

// Encodes `count` records (one thread's, in its order) as one block, header included, into `out`,
// which must hold sizeof(BlockHeader) + count * kMaxEncodedRecord bytes. Returns the bytes used.
std::size_t encode_block(const Record* records, std::uint32_t count, std::uint32_t thread, unsigned char* out) noexcept;
// Decodes a block's payload; false when it is damaged. `offsets` (may be null) receives where in
// the payload each record begins.
bool decode_block(const BlockHeader& header, const unsigned char* payload, Record* records,
                  std::uint32_t* offsets = nullptr) noexcept;

std::string_view op_name(std::uint16_t op) noexcept;

}  // namespace streampool::trace
