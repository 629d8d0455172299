// With STREAMPOOL_SHOW_MAPS set, prints the lines of /proc/self/maps naming a CUDA runtime or driver
// library: the proof that no NVIDIA cudart is mapped in a program linked to streampool::cudart.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>

static void show_cuda_maps() {
  if (std::getenv("STREAMPOOL_SHOW_MAPS") == nullptr) return;
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return;
  char line[1024];
  char last[1024] = "";
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    const char* path = std::strchr(line, '/');
    if (path == nullptr || (std::strstr(path, "cudart") == nullptr && std::strstr(path, "libcuda") == nullptr)) continue;
    if (std::strcmp(path, last) == 0) continue;  // one line per library
    std::snprintf(last, sizeof(last), "%s", path);
    std::printf("maps: %s", line);
  }
  std::fclose(maps);
}
