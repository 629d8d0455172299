// Messages with descriptors over unix-domain SOCK_SEQPACKET sockets: what the exporting and the
// importing process of a shared pool say to each other (see ipc_protocol.hpp). Each message is one
// fixed-size struct, optionally with descriptors (SCM_RIGHTS); a message of another size, or
// whose descriptors did not all arrive, is refused and what did arrive is closed.
#pragma once

#include <cstddef>
#include <vector>

namespace streampool::interpose::ipc {

// Descriptors per message: well under the kernel's SCM_MAX_FD (253).
inline constexpr std::size_t kMaxFdsPerMessage = 64;

// One message; never blocks when `dont_wait`, never raises SIGPIPE. False on any failure.
bool send_message(int socket, const void* bytes, std::size_t size, const int* fds, std::size_t fd_count,
                  bool dont_wait) noexcept;

// One message of exactly `size` bytes, waiting at most timeout_ms (-1: no limit). The descriptors
// that came with it are appended to *fds (close-on-exec); on failure none are left open.
bool receive_message(int socket, void* bytes, std::size_t size, std::vector<int>* fds, int timeout_ms) noexcept;

void close_all(std::vector<int>* fds) noexcept;

}  // namespace streampool::interpose::ipc
