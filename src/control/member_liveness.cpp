#include "member_liveness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace streampool::control::group {

std::optional<ProcStat> read_proc_stat(pid_t pid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  // The line is a few hundred bytes; a command name may hold spaces and parentheses, so the fields
  // are counted from the last ')'.
  char text[1024];
  ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return std::nullopt;
  text[got] = '\0';
  const char* close_paren = std::strrchr(text, ')');
  if (close_paren == nullptr || close_paren[1] != ' ') return std::nullopt;
  ProcStat stat;
  stat.state = close_paren[2];
  // After ')': field 3 (state) ... field 22 (starttime): skip 19 fields after the state.
  const char* cursor = close_paren + 2;
  for (int field = 3; field < 22; ++field) {
    cursor = std::strchr(cursor, ' ');
    if (cursor == nullptr) return std::nullopt;
    ++cursor;
  }
  std::uint64_t value = 0;
  bool any_digit = false;
  for (; *cursor >= '0' && *cursor <= '9'; ++cursor) {
    value = value * 10 + static_cast<std::uint64_t>(*cursor - '0');
    any_digit = true;
  }
  if (!any_digit) return std::nullopt;
  stat.start_time = value;
  return stat;
}

ProcessIdentity self_identity() noexcept {
  ProcessIdentity self;
  self.pid = ::getpid();
  if (auto stat = read_proc_stat(self.pid)) self.start_time = stat->start_time;
  struct stat ns {};
  if (::stat("/proc/self/ns/pid", &ns) == 0) self.pid_namespace = ns.st_ino;
  return self;
}

Liveness liveness_of(const ProcessIdentity& recorded, std::uint64_t own_pid_namespace) noexcept {
  if (recorded.pid_namespace != own_pid_namespace) return Liveness::kNotJudged;
  if (recorded.pid <= 0) return Liveness::kGone;
  if (::kill(recorded.pid, 0) != 0 && errno == ESRCH) return Liveness::kGone;
  auto stat = read_proc_stat(recorded.pid);
  // The pid exists but /proc hides it (hidepid) or is not mounted: it cannot be told apart from
  // the recorded owner, so it counts as alive.
  if (!stat) return Liveness::kAlive;
  if (stat->state == 'Z' || stat->state == 'X') return Liveness::kGone;
  if (recorded.start_time != 0 && stat->start_time != recorded.start_time) return Liveness::kGone;
  return Liveness::kAlive;
}

}  // namespace streampool::control::group
