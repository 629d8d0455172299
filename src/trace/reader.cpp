#include "reader.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace streampool::trace {

bool read_trace(const std::string& path, Trace* trace, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open " + path;
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(FileHeader) || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    *error = path + " is not a streampool trace";
    return false;
  }
  std::memcpy(&trace->header, bytes.data(), sizeof(FileHeader));
  const FileHeader& header = trace->header;
  if (header.version != kFormatVersion) {
    *error = path + ": trace format version " + std::to_string(header.version) + ", this build reads version " +
             std::to_string(kFormatVersion);
    return false;
  }
  if (header.header_bytes < sizeof(FileHeader) || header.header_bytes > bytes.size()) {
    *error = path + ": damaged header";
    return false;
  }
  if (header.block_version != kBlockVersion) {
    *error = path + ": record encoding " + std::to_string(header.block_version) + ", this build reads " +
             std::to_string(kBlockVersion);
    return false;
  }
  // Blocks until the end; a last block cut short (a process killed while writing) is set aside.
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t at = header.header_bytes;
  trace->records.clear();
  while (at < bytes.size()) {
    BlockHeader block{};
    if (bytes.size() - at < sizeof block) break;
    std::memcpy(&block, data + at, sizeof block);
    if (std::memcmp(block.magic, kBlockMagic, sizeof kBlockMagic) != 0) {
      *error = path + ": damaged block at offset " + std::to_string(at);
      return false;
    }
    if (bytes.size() - at - sizeof block < block.bytes) break;
    if (block.count > block.bytes) {  // every record takes at least 3 bytes
      *error = path + ": damaged block at offset " + std::to_string(at);
      return false;
    }
    const std::size_t first = trace->records.size();
    trace->records.resize(first + block.count);
    if (!decode_block(block, data + at + sizeof block, trace->records.data() + first)) {
      *error = path + ": damaged block at offset " + std::to_string(at);
      return false;
    }
    at += sizeof block + block.bytes;
  }
  trace->trailing_bytes = bytes.size() - at;
  std::stable_sort(trace->records.begin(), trace->records.end(),
                   [](const Record& a, const Record& b) { return a.time_ns < b.time_ns; });
  return true;
}

}  // namespace streampool::trace
