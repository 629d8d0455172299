// One message with, optionally, one file descriptor over a unix socket (SCM_RIGHTS): how the IPC
// tests and the GPU's pool-kinds program hand a pool's shareable handle to another process.
// Header-only, for test programs built by CMake and by nvcc alike.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstring>

namespace streampool_test {

// Sends `size` bytes and, when fd >= 0, the descriptor with them.
inline bool send_with_fd(int socket, const void* bytes, std::size_t size, int fd) {
  iovec part{const_cast<void*>(bytes), size};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
  }
  return sendmsg(socket, &message, MSG_NOSIGNAL) == static_cast<ssize_t>(size);
}

// Receives exactly `size` bytes; *fd (when fd is not null) is the descriptor sent with them, or -1.
inline bool receive_with_fd(int socket, void* bytes, std::size_t size, int* fd) {
  iovec part{bytes, size};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  if (recvmsg(socket, &message, MSG_WAITALL) != static_cast<ssize_t>(size)) return false;
  if (fd != nullptr) {
    *fd = -1;
    const cmsghdr* header = CMSG_FIRSTHDR(&message);
    if (header != nullptr && header->cmsg_type == SCM_RIGHTS) std::memcpy(fd, CMSG_DATA(header), sizeof *fd);
  }
  return true;
}

}  // namespace streampool_test
