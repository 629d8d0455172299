// What the process holds right now, from /proc/self/status: resident memory (VmRSS) and the size
// of its address space (VmSize, which grows with every reservation a pool never gives back).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace lifetimes {

struct ProcessMemory {
  std::uint64_t rss_kib = 0;
  std::uint64_t vmsize_kib = 0;
};

inline ProcessMemory read_process_memory() {
  ProcessMemory memory;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) memory.rss_kib = std::stoull(line.substr(6));
    if (line.rfind("VmSize:", 0) == 0) memory.vmsize_kib = std::stoull(line.substr(7));
  }
  return memory;
}

}  // namespace lifetimes
