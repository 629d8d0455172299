#include "ipc_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace streampool::interpose::ipc {

namespace {

constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage);

bool wait_readable(int socket, int timeout_ms) noexcept {
  pollfd entry{socket, POLLIN, 0};
  for (;;) {
    int ready = poll(&entry, 1, timeout_ms);
    if (ready > 0) return true;
    if (ready == 0) return false;  // timed out
    if (errno != EINTR) return false;
  }
}

}  // namespace

void close_all(std::vector<int>* fds) noexcept {
  for (int fd : *fds) close(fd);
  fds->clear();
}

bool send_message(int socket, const void* bytes, std::size_t size, const int* fds, std::size_t fd_count,
                  bool dont_wait) noexcept {
  if (fd_count > kMaxFdsPerMessage) return false;
  iovec part{const_cast<void*>(bytes), size};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) unsigned char control[kControlBytes];
  if (fd_count > 0) {
    std::memset(control, 0, sizeof control);
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
    std::memcpy(CMSG_DATA(header), fds, sizeof(int) * fd_count);
  }
  const int flags = MSG_NOSIGNAL | (dont_wait ? MSG_DONTWAIT : 0);
  for (;;) {
    ssize_t sent = sendmsg(socket, &message, flags);
    if (sent >= 0) return static_cast<std::size_t>(sent) == size;
    if (errno != EINTR) return false;
  }
}

bool receive_message(int socket, void* bytes, std::size_t size, std::vector<int>* fds, int timeout_ms) noexcept {
  if (!wait_readable(socket, timeout_ms)) return false;
  iovec part{bytes, size};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) unsigned char control[kControlBytes];
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t received = -1;
  for (;;) {
    received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (received >= 0 || errno != EINTR) break;
  }
  if (received < 0) return false;
  std::vector<int> arrived;
  try {
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
        arrived.push_back(fd);
      }
    }
    const bool whole = static_cast<std::size_t>(received) == size &&
                       (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0;
    if (!whole) {
      close_all(&arrived);
      return false;
    }
    fds->insert(fds->end(), arrived.begin(), arrived.end());
  } catch (...) {
    close_all(&arrived);
    return false;
  }
  return true;
}

}  // namespace streampool::interpose::ipc
