// Reading a trace file (format.hpp) back: for the streampool command and the tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format.hpp"

namespace streampool::trace {

struct Trace {
  FileHeader header{};
  std::vector<Record> records;       // sorted by time (stable: one thread's order is kept)
  std::uint64_t trailing_bytes = 0;  // a partial block at the end (a process killed while writing)
};

// False with a one-line reason in *error for a file that is not a trace of a version this build reads.
bool read_trace(const std::string& path, Trace* trace, std::string* error);

}  // namespace streampool::trace
