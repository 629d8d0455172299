#pragma once
// A budget shared by the processes of a group (STREAMPOOL_GROUP=name, STREAMPOOL_GROUP_LIMIT): every
// member maps one file (group_region.hpp) and owns one slot of it. A member's charges live only in
// its own slot; the group's charge on a device is the sum over live slots. Admission takes the
// region's process-shared robust mutex, sums the slots and adds to its own slot only if the sum stays
// within the limit, so concurrent admissions (threads or processes) never pass it. Giving back takes
// no lock: it only lowers the owner's slot.
//
// A member killed at any instant leaves at worst a slot whose owner is gone (its share still counted)
// or, killed while holding the lock, EOWNERDEAD for the next locker. Either way the slots stay the
// truth: the next member to notice frees the dead slot and the count is exact again. Deaths are
// noticed when a member joins, when an admission would fail, when a locker inherits the lock of a
// dead holder, and on reclaim_dead_members(). docs/DESIGN.md has the design and its limits.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "budget.hpp"
#include "group_region.hpp"
#include "member_liveness.hpp"

namespace streampool::control {

struct GroupOptions {
  std::string name;
  std::string dir;  // empty: group::default_group_dir()
  // The limit per device in bytes: device_limits[d] where given, else default_limit. They become the
  // group's limits when this member finds the group without live members (it creates it or the
  // members before it are gone); otherwise the group's limits stand.
  std::uint64_t default_limit = kNoLimit;
  std::vector<std::uint64_t> device_limits;
  // Slots of a group this member creates (1..group::kMaxMembers); a group's table is fixed at creation.
  std::uint32_t member_capacity = group::kMaxMembers;
};

class GroupBudget final : public Budget {
 public:
  struct Opened {
    std::unique_ptr<GroupBudget> budget;  // null when the group could not be joined
    std::string error;                    // why not, one line without the "streampool: " prefix
    std::string note;                     // set when the group's limits differ from the options'
  };
  // Joins the group (creating its region when none exists). Never throws.
  static Opened open(const GroupOptions& options) noexcept;

  // STREAMPOOL_GROUP, STREAMPOOL_GROUP_LIMIT and STREAMPOOL_GROUP_DIR. Null without STREAMPOOL_GROUP;
  // on a bad setting or a region it cannot use, null after one line on stderr.
  static std::unique_ptr<GroupBudget> from_environment() noexcept;

  GroupBudget(const GroupBudget&) = delete;
  GroupBudget& operator=(const GroupBudget&) = delete;
  // Leaves the group: the slot and whatever it still holds are given back.
  ~GroupBudget() override;

  // Devices past group::kMaxDevices are not governed by the group: always admitted, never counted.
  // Called from a forked child of the member, try_charge refuses and uncharge does nothing: the
  // slot is the parent's.
  bool try_charge(int device, std::uint64_t bytes) noexcept override;
  void uncharge(int device, std::uint64_t bytes) noexcept override;
  std::uint64_t limit(int device) const noexcept override;
  std::uint64_t charged(int device) const noexcept override;  // the whole group's

  std::uint64_t member_charged(int device) const noexcept;  // this member's own share
  // Frees the slots of members found dead; how many.
  std::size_t reclaim_dead_members() noexcept;
  const std::string& path() const noexcept { return path_; }
  std::uint32_t slot_index() const noexcept { return slot_index_; }

 private:
  GroupBudget(std::string path, int fd, group::RegionHeader* header, std::size_t mapped_bytes);
  bool lock() noexcept;
  void unlock() noexcept;
  std::size_t reclaim_locked() noexcept;
  std::uint64_t sum_live(int device) const noexcept;

  std::string path_;
  int fd_;
  std::size_t mapped_bytes_;
  group::RegionHeader* header_;
  group::MemberSlot* slot_ = nullptr;
  std::uint32_t slot_index_ = 0;
  group::ProcessIdentity self_;
};

// What a group holds, read without joining it (for tools and reports). Read without the lock: a
// snapshot of slots that may be changing, each value one its owner wrote.
struct GroupMemberView {
  std::uint32_t slot = 0;
  int pid = 0;
  std::uint64_t start_time = 0;
  bool alive = true;  // false: found dead, not reclaimed yet
  std::array<std::uint64_t, group::kMaxDevices> charged{};
};
struct GroupView {
  std::string path;
  std::uint32_t member_capacity = 0;
  std::array<std::uint64_t, group::kMaxDevices> limit{};
  std::array<std::uint64_t, group::kMaxDevices> total{};  // over every live slot, dead or not yet found
  std::vector<GroupMemberView> members;
};
// Empty, with `error` set, when the region is missing or unusable.
std::optional<GroupView> read_group(std::string_view name, std::string_view dir, std::string* error);

// STREAMPOOL_GROUP_LIMIT's form here: bytes, or a whole number with K, M, G or T (powers of 1024).
// A richer parser (per device, shares of the device) can take its place: the budget takes bytes.
std::optional<std::uint64_t> parse_group_limit(std::string_view text) noexcept;

// Named points of the budget's updates, where a test can stop the process (SIGKILL) to pin that a
// death there leaves the group right. Null in production: one relaxed load per update.
enum class GroupPoint {
  kJoinLocked,      // join: lock held, slot not claimed yet
  kJoinClaiming,    // join: slot's owner written, not live yet
  kAdmitLocked,     // admission: lock held, the group's sum taken, nothing charged yet
  kAdmitCharged,    // admission: own slot charged, lock still held
  kUncharging,      // give-back: before the slot is lowered
  kReclaiming,      // a dead slot's charges cleared, not freed yet (lock held)
  kLeaving,         // leave: lock held, slot not freed yet
};
using GroupPointHook = void (*)(GroupPoint);
void set_group_point_hook(GroupPointHook hook) noexcept;

// How often this process took the group lock over from a holder that had died (EOWNERDEAD).
std::uint64_t group_lock_recoveries() noexcept;

}  // namespace streampool::control
