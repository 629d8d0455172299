#pragma once
// Whether the process that owns a group slot still lives. A pid alone is not enough: pids are
// reused, so a slot records its owner's start time (field 22 of /proc/<pid>/stat, clock ticks since
// boot) and a process with that pid but another start time is someone else. A zombie (killed, not
// yet reaped) is dead already. Pids mean nothing across pid namespaces, so a slot also records its
// owner's namespace, and only members of that namespace judge it.
#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace streampool::control::group {

struct ProcessIdentity {
  pid_t pid = 0;
  std::uint64_t start_time = 0;     // 0 where /proc could not tell
  std::uint64_t pid_namespace = 0;  // 0 where /proc could not tell
};

ProcessIdentity self_identity() noexcept;

enum class Liveness {
  kAlive,      // the recorded process still runs (or cannot be told apart from one that does)
  kGone,       // no such process, a zombie, or the pid now belongs to a process started later
  kNotJudged,  // recorded in another pid namespace: this process cannot tell
};

Liveness liveness_of(const ProcessIdentity& recorded, std::uint64_t own_pid_namespace) noexcept;

// What /proc/<pid>/stat says of a process: its state letter and start time. Empty when the file
// cannot be read or parsed.
struct ProcStat {
  char state = '?';
  std::uint64_t start_time = 0;
};
std::optional<ProcStat> read_proc_stat(pid_t pid) noexcept;

}  // namespace streampool::control::group
