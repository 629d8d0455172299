#include "format.hpp"

#include <cstring>

namespace streampool::trace {

// Each record, against the previous one of its block (and the last non-zero pool), is
//   u8 op, u8 mask, varint time difference,
// then, only where the mask's bit is clear: varint flags (bit 6: flags are 0), varint duration
// (bit 5: 0), zigzag varint result (bit 4: 0), varint stream XOR previous stream (bit 0: the same
// stream), varint pool (bit 1: pool 0; bit 2: the last non-zero pool), varint size (bit 3: 0),
// zigzag varint of the address minus the previous address (bit 7: the same address).
namespace {

unsigned char* put_varint(unsigned char* out, std::uint64_t value) noexcept {
  while (value >= 0x80) {
    *out++ = static_cast<unsigned char>(value | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<unsigned char>(value);
  return out;
}

std::uint64_t zigzag(std::int64_t value) noexcept {
  return (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
}

std::int64_t unzigzag(std::uint64_t value) noexcept {
  return static_cast<std::int64_t>(value >> 1) ^ -static_cast<std::int64_t>(value & 1);
}

// Reads a varint; false past `end` or beyond 64 bits.
bool get_varint(const unsigned char*& in, const unsigned char* end, std::uint64_t* value) noexcept {
  std::uint64_t result = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (in >= end) return false;
    const unsigned char byte = *in++;
    result |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

}  // namespace

namespace {
constexpr unsigned kSameStream = 1u << 0;
constexpr unsigned kPoolZero = 1u << 1;
constexpr unsigned kSamePool = 1u << 2;
constexpr unsigned kSizeZero = 1u << 3;
constexpr unsigned kResultZero = 1u << 4;
constexpr unsigned kDurationZero = 1u << 5;
constexpr unsigned kFlagsZero = 1u << 6;
constexpr unsigned kSameAddress = 1u << 7;
}  // namespace

std::size_t encode_block(const Record* records, std::uint32_t count, std::uint32_t thread, unsigned char* out) noexcept {
  unsigned char* cursor = out + sizeof(BlockHeader);
  Record previous{};
  std::uint64_t last_pool = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    const Record& record = records[i];
    unsigned mask = 0;
    if (record.stream == previous.stream) mask |= kSameStream;
    if (record.pool == 0) mask |= kPoolZero;
    else if (record.pool == last_pool) mask |= kSamePool;
    if (record.size == 0) mask |= kSizeZero;
    if (record.result == 0) mask |= kResultZero;
    if (record.duration_ns == 0) mask |= kDurationZero;
    if (record.flags == 0) mask |= kFlagsZero;
    if (record.address == previous.address) mask |= kSameAddress;
    *cursor++ = static_cast<unsigned char>(record.op);
    *cursor++ = static_cast<unsigned char>(mask);
    cursor = put_varint(cursor, record.time_ns - previous.time_ns);  // times rise within a thread
    if ((mask & kFlagsZero) == 0) cursor = put_varint(cursor, record.flags);
    if ((mask & kDurationZero) == 0) cursor = put_varint(cursor, record.duration_ns);
    if ((mask & kResultZero) == 0) cursor = put_varint(cursor, zigzag(record.result));
    if ((mask & kSameStream) == 0) cursor = put_varint(cursor, record.stream ^ previous.stream);
    if ((mask & (kPoolZero | kSamePool)) == 0) cursor = put_varint(cursor, record.pool);
    if ((mask & kSizeZero) == 0) cursor = put_varint(cursor, record.size);
    if ((mask & kSameAddress) == 0) {
      cursor = put_varint(cursor, zigzag(static_cast<std::int64_t>(record.address - previous.address)));
    }
    if (record.pool != 0) last_pool = record.pool;
    previous = record;
  }
  BlockHeader header{};
  std::memcpy(header.magic, kBlockMagic, sizeof kBlockMagic);
  header.thread = thread;
  header.count = count;
  header.bytes = static_cast<std::uint32_t>(cursor - out - sizeof(BlockHeader));
  std::memcpy(out, &header, sizeof header);
  return static_cast<std::size_t>(cursor - out);
}

namespace {

// decode_block's loop; `in` is left where it stopped.
bool decode_records(const BlockHeader& header, const unsigned char*& in, const unsigned char* end, Record* records,
                    std::uint32_t* offsets) noexcept {
  const unsigned char* const payload = in;
  Record previous{};
  std::uint64_t last_pool = 0;
  for (std::uint32_t i = 0; i < header.count; ++i) {
    if (end - in < 3) return false;
    if (offsets != nullptr) offsets[i] = static_cast<std::uint32_t>(in - payload);
    Record record{};
    record.thread = header.thread;
    record.op = *in++;
    const unsigned mask = *in++;
    std::uint64_t value = 0;
    if (!get_varint(in, end, &value)) return false;
    record.time_ns = previous.time_ns + value;
    if ((mask & kFlagsZero) == 0) {
      if (!get_varint(in, end, &value)) return false;
      record.flags = static_cast<std::uint16_t>(value);
    }
    if ((mask & kDurationZero) == 0) {
      if (!get_varint(in, end, &value)) return false;
      record.duration_ns = static_cast<std::uint32_t>(value);
    }
    if ((mask & kResultZero) == 0) {
      if (!get_varint(in, end, &value)) return false;
      record.result = static_cast<std::int32_t>(unzigzag(value));
    }
    record.stream = previous.stream;
    if ((mask & kSameStream) == 0) {
      if (!get_varint(in, end, &value)) return false;
      record.stream ^= value;
    }
    if ((mask & kSamePool) != 0) {
      record.pool = last_pool;
    } else if ((mask & kPoolZero) == 0) {
      if (!get_varint(in, end, &record.pool)) return false;
    }
    if ((mask & kSizeZero) == 0 && !get_varint(in, end, &record.size)) return false;
    record.address = previous.address;
    if ((mask & kSameAddress) == 0) {
      if (!get_varint(in, end, &value)) return false;
      record.address += static_cast<std::uint64_t>(unzigzag(value));
    }
    if (record.pool != 0) last_pool = record.pool;
    records[i] = record;
    previous = record;
  }
  return true;
}

}  // namespace

bool decode_block(const BlockHeader& header, const unsigned char* payload, Record* records,
                  std::uint32_t* offsets) noexcept {
  const unsigned char* in = payload;
  const unsigned char* end = payload + header.bytes;
  return decode_records(header, in, end, records, offsets) && in == end;
}

std::string_view op_name(std::uint16_t op) noexcept {
  static constexpr std::string_view kNames[] = {
      "unknown",           "alloc",          "alloc_from_pool",   "free",
      "free_completed",    "pool_create",    "pool_destroy",      "pool_trim",
      "pool_set_attribute", "event_record",  "stream_wait_event", "stream_synchronize",
      "stream_query",      "event_synchronize", "event_query",    "context_synchronize",
      "stream_create",     "stream_destroy",    "out_of_memory"};
  static_assert(sizeof kNames / sizeof kNames[0] == kLastOp + 1);
  return op <= kLastOp ? kNames[op] : kNames[0];
}

std::string_view oom_cause_name(std::uint16_t cause) noexcept {
  static constexpr std::string_view kNames[] = {"unknown",     "pending_frees", "fragmentation", "held_outside",
                                                "cap_reached", "device_full",   "pool_limit"};
  static_assert(sizeof kNames / sizeof kNames[0] == kLastOomCause + 1);
  return cause <= kLastOomCause ? kNames[cause] : kNames[0];
}

}  // namespace streampool::trace
