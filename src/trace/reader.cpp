#include "reader.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "files.hpp"

namespace streampool::trace {

bool read_trace(const std::string& path, Trace* trace, std::string* error) {
  std::string bytes;
  if (!read_regular_file(path, kMaxTraceBytes, &bytes, error)) return false;
  return parse_trace(path, bytes, trace, error);
}

bool parse_trace(const std::string& name, const std::string& bytes, Trace* trace, std::string* error) {
  *trace = Trace{};
  if (bytes.size() < sizeof(FileHeader) || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    *error = name + ": not a streampool trace (no SPTRACE header at offset 0)";
    return false;
  }
  std::memcpy(&trace->header, bytes.data(), sizeof(FileHeader));
  const FileHeader& header = trace->header;
  if (header.version != kFormatVersion) {
    *error = name + ": trace format version " + std::to_string(header.version) + " at offset 8, this build reads version " +
             std::to_string(kFormatVersion);
    return false;
  }
  if (header.header_bytes < sizeof(FileHeader) || header.header_bytes > kMaxHeaderBytes ||
      header.header_bytes > bytes.size()) {
    *error = name + ": damaged header (header_bytes " + std::to_string(header.header_bytes) + ") at offset 12";
    return false;
  }
  if (header.block_version != kBlockVersion) {
    *error = name + ": record encoding " + std::to_string(header.block_version) + " at offset 16, this build reads " +
             std::to_string(kBlockVersion);
    return false;
  }
  // Blocks until the end; a last block cut short (a process killed while writing) is set aside.
  // Each block's count is checked against its length before anything is allocated for it: every
  // record takes at least 3 bytes, so the records never take more than 19 times the file.
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t at = header.header_bytes;
  std::vector<Record> records;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> in_block;
  while (at < bytes.size()) {
    BlockHeader block{};
    if (bytes.size() - at < sizeof block) break;
    std::memcpy(&block, data + at, sizeof block);
    const auto damaged = [&](const char* what) {
      *error = name + ": " + what + " at offset " + std::to_string(at);
      return false;
    };
    if (std::memcmp(block.magic, kBlockMagic, sizeof kBlockMagic) != 0) return damaged("damaged block");
    if (bytes.size() - at - sizeof block < block.bytes) break;
    if (static_cast<std::uint64_t>(block.count) * 3 > block.bytes) {
      return damaged("damaged block (more records than its bytes can hold)");
    }
    const std::size_t first = records.size();
    records.resize(first + block.count);
    in_block.resize(block.count);
    if (!decode_block(block, data + at + sizeof block, records.data() + first, in_block.data())) {
      return damaged("damaged block");
    }
    offsets.reserve(records.size());
    for (std::uint32_t offset : in_block) offsets.push_back(at + sizeof block + offset);
    at += sizeof block + block.bytes;
  }
  trace->trailing_bytes = bytes.size() - at;
  std::vector<std::uint32_t> order(records.size());
  std::iota(order.begin(), order.end(), 0U);
  std::stable_sort(order.begin(), order.end(),
                   [&records](std::uint32_t a, std::uint32_t b) { return records[a].time_ns < records[b].time_ns; });
  trace->records.reserve(order.size());
  trace->offsets.reserve(order.size());
  for (std::uint32_t index : order) {
    trace->records.push_back(records[index]);
    trace->offsets.push_back(offsets[index]);
  }
  return true;
}

}  // namespace streampool::trace
