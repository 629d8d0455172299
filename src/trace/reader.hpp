// Reading a trace file (format.hpp) back: for the streampool command and the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format.hpp"

namespace streampool::trace {

struct Trace {
  FileHeader header{};
  std::vector<Record> records;        // sorted by time (stable: one thread's order is kept)
  std::vector<std::uint64_t> offsets;  // where in the file each of `records` begins, for messages
  std::uint64_t trailing_bytes = 0;   // a partial block at the end (a process killed while writing)
};

// The largest trace read (its records take up to 19 times as much memory), and the largest header
// a later revision may have.
inline constexpr std::size_t kMaxTraceBytes = std::size_t{1} << 30;
inline constexpr std::uint32_t kMaxHeaderBytes = 4096;

// False with a one-line reason in *error ("<path>: <what> at offset N") for a file that is not a
// trace of a version this build reads: not a regular file, larger than kMaxTraceBytes, damaged.
bool read_trace(const std::string& path, Trace* trace, std::string* error);
// The same over bytes already in memory; `name` is the path in messages.
bool parse_trace(const std::string& name, const std::string& bytes, Trace* trace, std::string* error);

}  // namespace streampool::trace
