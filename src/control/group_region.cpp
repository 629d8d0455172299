#include "group_region.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace streampool::control::group {

bool valid_group_name(std::string_view name, std::string* why) {
  auto fail = [why](const char* reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  if (name.empty()) return fail("is empty");
  if (name.size() > kMaxNameLength) return fail("is longer than 64 characters");
  for (char c : name) {
    if (c == '/') return fail("holds a '/'");
    if (c <= ' ' || c > '~') return fail("holds a space or a character that is not printable ASCII");
  }
  return true;
}

std::string default_group_dir() {
  struct stat shm {};
  if (::stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) && ::access("/dev/shm", W_OK | X_OK) == 0)
    return "/dev/shm";
  const char* tmpdir = std::getenv("TMPDIR");
  if (tmpdir != nullptr && tmpdir[0] == '/' && std::strlen(tmpdir) < 1024) return tmpdir;
  return "/tmp";
}

std::string group_file_path(std::string_view dir, std::string_view name) {
  std::string path(dir);
  if (path.empty() || path.back() != '/') path += '/';
  path += kFilePrefix;
  path += name;
  return path;
}

std::string region_problem(const RegionHeader* header, std::uint64_t file_bytes,
                           std::string_view name) {
  if (file_bytes < sizeof(RegionHeader)) return "it is too short to be a group region";
  if (header->magic != kMagic) return "it is not a streampool group region";
  if (header->version != kVersion) {
    return "it has layout version " + std::to_string(header->version) + ", this streampool reads " +
           std::to_string(kVersion);
  }
  if (header->header_bytes != sizeof(RegionHeader) || header->slot_bytes != sizeof(MemberSlot) ||
      header->device_count != kMaxDevices)
    return "it was made by a streampool of another build";
  if (header->member_capacity == 0 || header->member_capacity > kMaxMembers)
    return "its member table is corrupt";
  std::uint64_t expected = region_bytes(header->member_capacity);
  if (header->region_bytes != expected || file_bytes != expected) {
    return "its size is " + std::to_string(file_bytes) + " bytes, its layout needs " +
           std::to_string(expected);
  }
  if (header->ready.load(std::memory_order_acquire) != kReady) return "it was never initialised";
  if (std::memchr(header->name, '\0', sizeof header->name) == nullptr ||
      std::string_view(header->name) != name)
    return "it belongs to another group";
  return {};
}

}  // namespace streampool::control::group
