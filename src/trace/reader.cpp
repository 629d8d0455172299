#include "reader.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

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
  // Later versions of one format may grow the header or the record: both sizes come from the file.
  if (header.header_bytes < sizeof(FileHeader) || header.record_bytes < sizeof(Record) ||
      header.header_bytes > bytes.size()) {
    *error = path + ": damaged header";
    return false;
  }
  const std::size_t body = bytes.size() - header.header_bytes;
  const std::size_t count = body / header.record_bytes;
  trace->trailing_bytes = body % header.record_bytes;
  trace->records.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(&trace->records[i], bytes.data() + header.header_bytes + i * header.record_bytes, sizeof(Record));
  }
  std::stable_sort(trace->records.begin(), trace->records.end(),
                   [](const Record& a, const Record& b) { return a.time_ns < b.time_ns; });
  return true;
}

}  // namespace streampool::trace
