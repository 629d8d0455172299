#include "numa_nodes.hpp"

#include <sys/stat.h>

#include <cstdio>

namespace streampool::driver {

bool host_numa_node_exists(int node) noexcept {
  if (node < 0) return false;
  struct stat info {};
  if (stat("/sys/devices/system/node", &info) != 0) return node == 0;
  char path[64];
  std::snprintf(path, sizeof path, "/sys/devices/system/node/node%d", node);
  return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace streampool::driver
