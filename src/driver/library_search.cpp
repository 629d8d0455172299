#include "library_search.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace streampool::driver::search {

namespace {

constexpr const char* kUsualDirectories[] = {
#if defined(__aarch64__)
    "/usr/lib/aarch64-linux-gnu",
#else
    "/usr/lib/x86_64-linux-gnu",
#endif
    "/usr/lib64",
    "/usr/local/nvidia/lib64",
    "/usr/lib/wsl/lib",
    "/usr/lib",
};

void append_unique(std::vector<std::string>& paths, std::string path) {
  if (path.empty() || path.front() != '/') return;  // only absolute paths bypass SONAME matching
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(std::move(path));
}

std::string in_directory(std::string_view directory, std::string_view file) {
  std::string path(directory);
  if (!path.empty() && path.back() != '/') path.push_back('/');
  path.append(file);
  return path;
}

// glibc's new-format cache: a 48-byte header, nlibs 24-byte entries, then strings; key and value
// are offsets from the start of this header.
constexpr char kNewMagic[] = "glibc-ld.so.cache1.1";
constexpr std::size_t kHeaderBytes = 48;
constexpr std::size_t kEntryBytes = 24;

// The whole file, or "" when it cannot be read (plain POSIX: no iostreams inside other programs).
std::string read_file(const char* path) {
  std::string bytes;
  const int descriptor = ::open(path, O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) return bytes;
  struct stat info {};
  if (::fstat(descriptor, &info) == 0 && info.st_size > 0) {
    bytes.resize(static_cast<std::size_t>(info.st_size));
    std::size_t filled = 0;
    while (filled < bytes.size()) {
      const ssize_t got = ::read(descriptor, bytes.data() + filled, bytes.size() - filled);
      if (got <= 0) break;
      filled += static_cast<std::size_t>(got);
    }
    bytes.resize(filled);
  }
  ::close(descriptor);
  return bytes;
}

std::uint32_t read_u32(const std::string& bytes, std::size_t offset) {
  std::uint32_t value = 0;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

}  // namespace

std::vector<std::string> ld_cache_entries(const char* cache_file, std::string_view soname) {
  std::vector<std::string> paths;
  if (cache_file == nullptr) return paths;
  const std::string bytes = read_file(cache_file);

  const std::size_t base = bytes.find(kNewMagic, 0, sizeof kNewMagic - 1);
  if (base == std::string::npos || bytes.size() - base < kHeaderBytes) return paths;
  const std::uint32_t entry_count = read_u32(bytes, base + 20);
  const std::size_t available = (bytes.size() - base - kHeaderBytes) / kEntryBytes;
  if (entry_count > available) return paths;

  auto string_at = [&](std::uint32_t offset) -> std::string_view {
    const std::size_t start = base + offset;
    if (start >= bytes.size()) return {};
    const std::size_t end = bytes.find('\0', start);
    if (end == std::string::npos) return {};
    return std::string_view(bytes).substr(start, end - start);
  };
  for (std::uint32_t index = 0; index < entry_count; ++index) {
    const std::size_t entry = base + kHeaderBytes + index * kEntryBytes;
    if (string_at(read_u32(bytes, entry + 4)) != soname) continue;
    const std::string_view value = string_at(read_u32(bytes, entry + 8));
    if (!value.empty()) append_unique(paths, std::string(value));
  }
  return paths;
}

bool has_stubs_component(std::string_view path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) return false;  // the last component is the file itself
    if (path.substr(start, slash - start) == "stubs") return true;
    start = slash + 1;
  }
  return false;
}

std::vector<std::string> candidate_paths(const SearchInputs& inputs) {
  std::vector<std::string> paths;
  if (inputs.explicit_path != nullptr && inputs.explicit_path[0] != '\0') {
    paths.emplace_back(inputs.explicit_path);
    return paths;
  }
  if (inputs.ld_library_path != nullptr) {
    const std::string_view list(inputs.ld_library_path);
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = list.find_first_of(":;", start);
      if (end == std::string_view::npos) end = list.size();
      const std::string_view directory = list.substr(start, end - start);
      if (!directory.empty()) append_unique(paths, in_directory(directory, kDriverSoname));
      start = end + 1;
    }
  }
  for (std::string& path : ld_cache_entries(inputs.ld_cache_file, kDriverSoname)) {
    append_unique(paths, std::move(path));
  }
  for (const char* directory : kUsualDirectories) append_unique(paths, in_directory(directory, kDriverSoname));
  return paths;
}

}  // namespace streampool::driver::search
