#include "group_budget.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace streampool::control {

namespace {

using group::MemberSlot;
using group::RegionHeader;

std::atomic<GroupPointHook> point_hook{nullptr};
std::atomic<std::uint64_t> lock_recoveries{0};

void at(GroupPoint point) noexcept {
  if (GroupPointHook hook = point_hook.load(std::memory_order_relaxed)) hook(point);
}

// A holder stopped (SIGSTOP, a debugger) keeps the lock: admission then fails after this long rather
// than waiting for ever. Held only for a sum over the slots, so a live holder never comes close.
constexpr int kLockWaitSeconds = 2;

std::uint64_t option_limit(const GroupOptions& options, std::uint32_t device) {
  return device < options.device_limits.size() ? options.device_limits[device] : options.default_limit;
}

bool options_set_a_limit(const GroupOptions& options) {
  if (options.default_limit != kNoLimit) return true;
  return std::any_of(options.device_limits.begin(), options.device_limits.end(),
                     [](std::uint64_t limit) { return limit != kNoLimit; });
}

std::string errno_text(int error) { return std::strerror(error); }

// Makes a complete region under a temporary name and links it to `path`: the final name only ever
// names an initialised region, so processes starting together never see a half-made one, and a
// creator killed half-way leaves at most its temporary file. 0 when this call's region was linked,
// EEXIST when another's stands, another errno (with `error` set) when neither.
int create_region(const std::string& path, const GroupOptions& options, std::string* error) {
  static std::atomic<unsigned> attempt{0};
  std::string temporary = path + ".init." + std::to_string(::getpid()) + "." +
                          std::to_string(attempt.fetch_add(1, std::memory_order_relaxed));
  int fd = ::open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0660);
  if (fd < 0) {
    int saved = errno;
    *error = "cannot create " + path + ": " + errno_text(saved);
    return saved;
  }
  std::uint64_t bytes = group::region_bytes(options.member_capacity);
  int result = 0;
  void* map = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      (map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    result = errno;
    *error = "cannot create " + path + ": " + errno_text(result);
  } else {
    auto* header = static_cast<RegionHeader*>(map);  // zero-filled by ftruncate
    header->magic = group::kMagic;
    header->version = group::kVersion;
    header->header_bytes = sizeof(RegionHeader);
    header->region_bytes = bytes;
    header->slot_bytes = sizeof(MemberSlot);
    header->member_capacity = options.member_capacity;
    header->device_count = group::kMaxDevices;
    std::memcpy(header->name, options.name.data(), options.name.size());
    for (std::uint32_t device = 0; device < group::kMaxDevices; ++device)
      header->limit[device].store(option_limit(options, device), std::memory_order_relaxed);
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
    result = pthread_mutex_init(&header->lock, &attributes);
    pthread_mutexattr_destroy(&attributes);
    if (result != 0) {
      *error = "cannot create " + path + ": its lock: " + errno_text(result);
    } else {
      header->ready.store(group::kReady, std::memory_order_release);
      if (::msync(map, bytes, MS_SYNC) != 0 || ::link(temporary.c_str(), path.c_str()) != 0) {
        result = errno;
        if (result != EEXIST) *error = "cannot create " + path + ": " + errno_text(result);
      }
    }
    ::munmap(map, bytes);
  }
  ::unlink(temporary.c_str());
  ::close(fd);
  return result;
}

}  // namespace

void set_group_point_hook(GroupPointHook hook) noexcept {
  point_hook.store(hook, std::memory_order_relaxed);
}

std::uint64_t group_lock_recoveries() noexcept { return lock_recoveries.load(std::memory_order_relaxed); }

GroupBudget::GroupBudget(std::string path, int fd, RegionHeader* header, std::size_t mapped_bytes)
    : path_(std::move(path)),
      fd_(fd),
      mapped_bytes_(mapped_bytes),
      header_(header),
      self_(group::self_identity()) {}

GroupBudget::Opened GroupBudget::open(const GroupOptions& options) noexcept {
  Opened opened;
  try {
    std::string why;
    std::string label = "STREAMPOOL_GROUP=" + options.name;
    if (!group::valid_group_name(options.name, &why)) {
      opened.error = "the group name " + why;
      return opened;
    }
    if (options.member_capacity == 0 || options.member_capacity > group::kMaxMembers) {
      opened.error = label + ": a group holds 1 to " + std::to_string(group::kMaxMembers) + " members";
      return opened;
    }
    std::string path = group::group_file_path(
        options.dir.empty() ? group::default_group_dir() : options.dir, options.name);
    int fd = -1;
    for (int attempt = 0; attempt < 4 && fd < 0; ++attempt) {
      fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
      if (fd >= 0) break;
      if (errno != ENOENT) {
        opened.error = label + ": cannot open " + path + ": " + errno_text(errno);
        return opened;
      }
      std::string create_error;
      int created = create_region(path, options, &create_error);
      if (created != 0 && created != EEXIST) {
        opened.error = label + ": " + create_error;
        return opened;
      }
    }
    if (fd < 0) {
      opened.error = label + ": " + path + " keeps disappearing";
      return opened;
    }
    struct stat file {};
    std::string problem;
    if (::fstat(fd, &file) != 0) problem = errno_text(errno);
    else if (!S_ISREG(file.st_mode)) problem = "it is not a regular file";
    else if (static_cast<std::uint64_t>(file.st_size) < sizeof(RegionHeader))
      problem = "it is too short to be a group region";
    else if (static_cast<std::uint64_t>(file.st_size) > group::region_bytes(group::kMaxMembers))
      problem = "it is too large to be a group region";
    void* map = MAP_FAILED;
    if (problem.empty()) {
      map = ::mmap(nullptr, static_cast<std::size_t>(file.st_size), PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) problem = errno_text(errno);
      else problem = group::region_problem(static_cast<RegionHeader*>(map),
                                           static_cast<std::uint64_t>(file.st_size), options.name);
    }
    if (!problem.empty()) {
      if (map != MAP_FAILED) ::munmap(map, static_cast<std::size_t>(file.st_size));
      ::close(fd);
      opened.error = label + ": " + path + " is refused: " + problem;
      return opened;
    }

    std::unique_ptr<GroupBudget> budget(new GroupBudget(path, fd, static_cast<RegionHeader*>(map),
                                                        static_cast<std::size_t>(file.st_size)));
    RegionHeader* header = budget->header_;
    if (!budget->lock()) {
      opened.error = label + ": the group's lock could not be taken";
      return opened;
    }
    at(GroupPoint::kJoinLocked);
    budget->reclaim_locked();
    MemberSlot* table = group::slots(header);
    std::uint32_t live = 0;
    MemberSlot* free_slot = nullptr;
    for (std::uint32_t index = 0; index < header->member_capacity; ++index) {
      if (table[index].state.load(std::memory_order_acquire) == group::kSlotLive) {
        ++live;
      } else if (free_slot == nullptr) {
        free_slot = &table[index];
        budget->slot_index_ = index;
      }
    }
    if (free_slot == nullptr) {
      budget->unlock();
      opened.error = label + ": the group is full (" + std::to_string(header->member_capacity) +
                     " members)";
      return opened;
    }
    bool limits_differ = false;
    for (std::uint32_t device = 0; device < group::kMaxDevices; ++device) {
      if (live == 0) header->limit[device].store(option_limit(options, device), std::memory_order_relaxed);
      else if (header->limit[device].load(std::memory_order_relaxed) != option_limit(options, device))
        limits_differ = true;
    }
    if (limits_differ && options_set_a_limit(options))
      opened.note = label + ": the group's members set other limits; theirs stand";
    const group::ProcessIdentity& self = budget->self_;
    free_slot->pid.store(self.pid, std::memory_order_relaxed);
    free_slot->start_time.store(self.start_time, std::memory_order_relaxed);
    free_slot->pid_namespace.store(self.pid_namespace, std::memory_order_relaxed);
    for (auto& charged : free_slot->charged) charged.store(0, std::memory_order_relaxed);
    at(GroupPoint::kJoinClaiming);
    free_slot->state.store(group::kSlotLive, std::memory_order_release);
    budget->slot_ = free_slot;
    budget->unlock();
    opened.budget = std::move(budget);
  } catch (...) {
    opened.budget.reset();
    opened.error = "STREAMPOOL_GROUP: out of memory while joining the group";
  }
  return opened;
}

GroupBudget::~GroupBudget() {
  if (slot_ != nullptr && ::getpid() == self_.pid) {
    bool locked = lock();
    at(GroupPoint::kLeaving);
    for (auto& charged : slot_->charged) charged.store(0, std::memory_order_release);
    slot_->state.store(group::kSlotFree, std::memory_order_release);
    if (locked) unlock();
  }
  ::munmap(header_, mapped_bytes_);
  ::close(fd_);
}

bool GroupBudget::lock() noexcept {
  timespec deadline{};
  ::clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += kLockWaitSeconds;
  int result = pthread_mutex_timedlock(&header_->lock, &deadline);
  if (result == EOWNERDEAD) {
    // The holder died inside an update. The slots are the truth whatever it was doing: free the
    // dead members' slots, then mark the lock usable again.
    reclaim_locked();
    pthread_mutex_consistent(&header_->lock);
    lock_recoveries.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return result == 0;
}

void GroupBudget::unlock() noexcept { pthread_mutex_unlock(&header_->lock); }

std::size_t GroupBudget::reclaim_locked() noexcept {
  std::size_t freed = 0;
  MemberSlot* table = group::slots(header_);
  for (std::uint32_t index = 0; index < header_->member_capacity; ++index) {
    MemberSlot& slot = table[index];
    if (&slot == slot_ || slot.state.load(std::memory_order_acquire) != group::kSlotLive) continue;
    group::ProcessIdentity owner;
    owner.pid = slot.pid.load(std::memory_order_relaxed);
    owner.start_time = slot.start_time.load(std::memory_order_relaxed);
    owner.pid_namespace = slot.pid_namespace.load(std::memory_order_relaxed);
    if (group::liveness_of(owner, self_.pid_namespace) != group::Liveness::kGone) continue;
    for (auto& charged : slot.charged) charged.store(0, std::memory_order_release);
    at(GroupPoint::kReclaiming);
    slot.state.store(group::kSlotFree, std::memory_order_release);
    ++freed;
  }
  return freed;
}

std::uint64_t GroupBudget::sum_live(int device) const noexcept {
  const MemberSlot* table = group::slots(header_);
  std::uint64_t total = 0;
  for (std::uint32_t index = 0; index < header_->member_capacity; ++index) {
    if (table[index].state.load(std::memory_order_acquire) != group::kSlotLive) continue;
    std::uint64_t charged = table[index].charged[device].load(std::memory_order_acquire);
    total = charged > UINT64_MAX - total ? UINT64_MAX : total + charged;
  }
  return total;
}

bool GroupBudget::try_charge(int device, std::uint64_t bytes) noexcept {
  if (device < 0) return false;
  if (device >= static_cast<int>(group::kMaxDevices) || bytes == 0) return true;
  if (::getpid() != self_.pid || !lock()) return false;
  std::uint64_t limit = header_->limit[device].load(std::memory_order_relaxed);
  auto fits = [&] {
    std::uint64_t total = sum_live(device);
    return total <= limit && bytes <= limit - total;
  };
  // Dead members are looked for only when their share is what stands in the way.
  bool admitted = fits() || (reclaim_locked() > 0 && fits());
  at(GroupPoint::kAdmitLocked);
  if (admitted) {
    slot_->charged[device].fetch_add(bytes, std::memory_order_acq_rel);
    at(GroupPoint::kAdmitCharged);
  }
  unlock();
  return admitted;
}

void GroupBudget::uncharge(int device, std::uint64_t bytes) noexcept {
  if (device < 0 || device >= static_cast<int>(group::kMaxDevices) || bytes == 0) return;
  if (::getpid() != self_.pid) return;
  at(GroupPoint::kUncharging);
  // Never below zero, whatever the caller claims: a count that wraps would lock the group out.
  auto& charged = slot_->charged[device];
  std::uint64_t current = charged.load(std::memory_order_relaxed);
  while (!charged.compare_exchange_weak(current, current - std::min(current, bytes),
                                        std::memory_order_acq_rel, std::memory_order_relaxed)) {
  }
}

std::uint64_t GroupBudget::limit(int device) const noexcept {
  if (device < 0 || device >= static_cast<int>(group::kMaxDevices)) return kNoLimit;
  return header_->limit[device].load(std::memory_order_relaxed);
}

std::uint64_t GroupBudget::charged(int device) const noexcept {
  if (device < 0 || device >= static_cast<int>(group::kMaxDevices)) return 0;
  return sum_live(device);
}

std::uint64_t GroupBudget::member_charged(int device) const noexcept {
  if (device < 0 || device >= static_cast<int>(group::kMaxDevices)) return 0;
  return slot_->charged[device].load(std::memory_order_acquire);
}

std::size_t GroupBudget::reclaim_dead_members() noexcept {
  if (!lock()) return 0;
  std::size_t freed = reclaim_locked();
  unlock();
  return freed;
}

std::optional<GroupView> read_group(std::string_view name, std::string_view dir, std::string* error) {
  std::string why;
  if (!group::valid_group_name(name, &why)) {
    *error = "the group name " + why;
    return std::nullopt;
  }
  GroupView view;
  view.path = group::group_file_path(dir.empty() ? group::default_group_dir() : std::string(dir), name);
  int fd = ::open(view.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *error = "cannot open " + view.path + ": " + errno_text(errno);
    return std::nullopt;
  }
  struct stat file {};
  std::string problem;
  void* map = MAP_FAILED;
  if (::fstat(fd, &file) != 0) problem = errno_text(errno);
  else if (!S_ISREG(file.st_mode)) problem = "it is not a regular file";
  else if (static_cast<std::uint64_t>(file.st_size) < sizeof(RegionHeader))
    problem = "it is too short to be a group region";
  else if (static_cast<std::uint64_t>(file.st_size) > group::region_bytes(group::kMaxMembers))
    problem = "it is too large to be a group region";
  else if ((map = ::mmap(nullptr, static_cast<std::size_t>(file.st_size), PROT_READ, MAP_SHARED, fd,
                         0)) == MAP_FAILED)
    problem = errno_text(errno);
  else
    problem = group::region_problem(static_cast<const RegionHeader*>(map),
                                    static_cast<std::uint64_t>(file.st_size), name);
  ::close(fd);
  if (!problem.empty()) {
    if (map != MAP_FAILED) ::munmap(map, static_cast<std::size_t>(file.st_size));
    *error = view.path + " is refused: " + problem;
    return std::nullopt;
  }
  const auto* header = static_cast<const RegionHeader*>(map);
  const group::ProcessIdentity self = group::self_identity();
  view.member_capacity = header->member_capacity;
  for (std::uint32_t device = 0; device < group::kMaxDevices; ++device)
    view.limit[device] = header->limit[device].load(std::memory_order_relaxed);
  const MemberSlot* table = group::slots(header);
  for (std::uint32_t index = 0; index < header->member_capacity; ++index) {
    const MemberSlot& slot = table[index];
    if (slot.state.load(std::memory_order_acquire) != group::kSlotLive) continue;
    GroupMemberView member;
    member.slot = index;
    group::ProcessIdentity owner;
    owner.pid = slot.pid.load(std::memory_order_relaxed);
    owner.start_time = slot.start_time.load(std::memory_order_relaxed);
    owner.pid_namespace = slot.pid_namespace.load(std::memory_order_relaxed);
    member.pid = owner.pid;
    member.start_time = owner.start_time;
    member.alive = group::liveness_of(owner, self.pid_namespace) != group::Liveness::kGone;
    for (std::uint32_t device = 0; device < group::kMaxDevices; ++device) {
      member.charged[device] = slot.charged[device].load(std::memory_order_acquire);
      view.total[device] += member.charged[device];
    }
    view.members.push_back(member);
  }
  ::munmap(map, static_cast<std::size_t>(file.st_size));
  return view;
}

std::optional<std::uint64_t> parse_group_limit(std::string_view text) noexcept {
  if (text.empty() || text.size() > 32) return std::nullopt;
  std::uint64_t value = 0;
  std::size_t at_char = 0;
  for (; at_char < text.size() && text[at_char] >= '0' && text[at_char] <= '9'; ++at_char) {
    auto digit = static_cast<std::uint64_t>(text[at_char] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (at_char == 0) return std::nullopt;
  std::uint64_t unit = 1;
  if (at_char < text.size()) {
    switch (text[at_char]) {
      case 'K': case 'k': unit = std::uint64_t{1} << 10; break;
      case 'M': case 'm': unit = std::uint64_t{1} << 20; break;
      case 'G': case 'g': unit = std::uint64_t{1} << 30; break;
      case 'T': case 't': unit = std::uint64_t{1} << 40; break;
      default: return std::nullopt;
    }
    if (++at_char != text.size()) return std::nullopt;
  }
  if (value == 0 || value > (UINT64_MAX - 1) / unit) return std::nullopt;
  return value * unit;
}

std::unique_ptr<GroupBudget> GroupBudget::from_environment() noexcept {
  const char* name = std::getenv("STREAMPOOL_GROUP");
  if (name == nullptr || name[0] == '\0') return nullptr;
  // What is echoed of a setting is bounded and printable, whatever the environment holds.
  auto shown = [](const char* text) {
    std::string out;
    for (std::size_t index = 0; text[index] != '\0' && index < 80; ++index)
      out += (text[index] > ' ' && text[index] <= '~') ? text[index] : '?';
    return out;
  };
  auto refuse = [](const std::string& line) {
    std::string full = "streampool: " + line + "; carrying on without the group\n";
    std::fputs(full.c_str(), stderr);
    return nullptr;
  };
  try {
    GroupOptions options;
    options.name = name;
    std::string why;
    if (!group::valid_group_name(options.name, &why))
      return refuse("STREAMPOOL_GROUP=" + shown(name) + ": the name " + why);
    if (const char* dir = std::getenv("STREAMPOOL_GROUP_DIR"); dir != nullptr) {
      if (dir[0] != '/' || std::strlen(dir) > 1024)
        return refuse("STREAMPOOL_GROUP_DIR=" + shown(dir) + " is not an absolute folder");
      options.dir = dir;
    }
    if (const char* limit = std::getenv("STREAMPOOL_GROUP_LIMIT"); limit != nullptr && limit[0] != '\0') {
      std::optional<std::uint64_t> bytes = parse_group_limit(limit);
      if (!bytes) {
        return refuse("STREAMPOOL_GROUP_LIMIT=" + shown(limit) +
                      " is not a size (bytes, or a whole number with K, M, G or T)");
      }
      options.default_limit = *bytes;
    }
    Opened opened = open(options);
    if (!opened.budget) return refuse(opened.error);
    if (!opened.note.empty()) std::fputs(("streampool: " + opened.note + "\n").c_str(), stderr);
    return std::move(opened.budget);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace streampool::control
