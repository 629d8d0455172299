#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace streampool::trace {

namespace {

constexpr const char* kNotRegular = "not a regular file";

std::string size_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 30) && bytes % (std::size_t{1} << 30) == 0) {
    return std::to_string(bytes >> 30) + " GiB";
  }
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  return std::to_string(bytes) + " bytes";
}

}  // namespace

bool read_regular_file(const std::string& path, std::size_t max_bytes, std::string* bytes, std::string* error) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    *error = path + ": " + (S_ISDIR(status.st_mode) ? "a directory, " : "") + kNotRegular;
    ::close(fd);
    return false;
  }
  if (static_cast<std::uint64_t>(status.st_size) > max_bytes) {
    *error = path + ": " + std::to_string(status.st_size) + " bytes, larger than the " + size_text(max_bytes) +
             " this reads";
    ::close(fd);
    return false;
  }
  // The file may grow while it is read: at most max_bytes + 1 (to tell), never more.
  bytes->assign(static_cast<std::size_t>(status.st_size), '\0');
  std::size_t used = 0;
  for (;;) {
    if (used == bytes->size()) {
      if (used > max_bytes) break;
      bytes->resize(std::min(std::max<std::size_t>(used * 2, 65536), max_bytes + 1));
    }
    const ssize_t got = ::read(fd, bytes->data() + used, bytes->size() - used);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      *error = path + ": " + std::strerror(errno) + " at offset " + std::to_string(used);
      ::close(fd);
      return false;
    }
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  ::close(fd);
  bytes->resize(used);
  if (used > max_bytes) {
    *error = path + ": larger than the " + size_text(max_bytes) + " this reads";
    return false;
  }
  return true;
}

int open_output_file(const char* path, bool append, const char** why) noexcept {
  // Refused before opening where possible: opening a FIFO that has a reader would disturb it.
  struct stat status {};
  if (::stat(path, &status) == 0 && !S_ISREG(status.st_mode)) {
    *why = kNotRegular;
    errno = EINVAL;
    return -1;
  }
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (append ? O_APPEND : 0),
                        0644);
  if (fd < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  // What was opened, not what the path named a moment ago.
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    *why = kNotRegular;
    errno = EINVAL;
    return -1;
  }
  return fd;
}

}  // namespace streampool::trace
