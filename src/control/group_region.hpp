#pragma once
// The shared region of a group budget: one file, mapped by every member, laid out as a header and a
// table of member slots. Each slot is written only by its owner (its charges) and, under the
// region's lock, by whoever claims it or reclaims it from a dead owner. The group's charge on a
// device is the sum of its live slots' charges on that device: there is no separate total that a
// member killed half-way through an update could leave wrong.
//
// The layout is versioned: a region whose magic, version, header size, slot count or file size does
// not match what this build expects is refused, never interpreted.
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace streampool::control::group {

inline constexpr std::uint64_t kMagic = 0x31505247'4c4f4f50;  // "POOLGRP1", little-endian
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::uint32_t kReady = 0x59444552;  // "REDY": written last by the creator
inline constexpr std::uint32_t kMaxDevices = 32;
inline constexpr std::uint32_t kMaxMembers = 256;  // the most slots a region may have
inline constexpr std::size_t kMaxNameLength = 64;
inline constexpr std::string_view kFilePrefix = "streampool-group-";

enum SlotState : std::uint32_t { kSlotFree = 0, kSlotLive = 1 };

struct alignas(64) RegionHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t header_bytes;    // sizeof(RegionHeader) of the creator: catches another ABI
  std::uint64_t region_bytes;    // the whole file
  std::uint32_t slot_bytes;      // sizeof(MemberSlot)
  std::uint32_t member_capacity;  // slots in the table, 1..kMaxMembers
  std::uint32_t device_count;    // kMaxDevices
  std::atomic<std::uint32_t> ready;
  char name[kMaxNameLength + 1];  // the group's name, NUL-terminated: a renamed file is refused
  // Process-shared and robust: a holder killed with it held hands the next locker EOWNERDEAD.
  alignas(64) pthread_mutex_t lock;
  alignas(64) std::atomic<std::uint64_t> limit[kMaxDevices];  // bytes, kNoLimit for none
};

struct alignas(64) MemberSlot {
  std::atomic<std::uint32_t> state;  // SlotState; kSlotLive is stored last when claiming
  std::atomic<std::int32_t> pid;
  std::atomic<std::uint64_t> start_time;     // the owner's start, in clock ticks since boot
  std::atomic<std::uint64_t> pid_namespace;  // the owner's pid namespace (inode), 0 if unknown
  alignas(64) std::atomic<std::uint64_t> charged[kMaxDevices];
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

inline constexpr std::uint64_t region_bytes(std::uint32_t member_capacity) {
  return sizeof(RegionHeader) + std::uint64_t{member_capacity} * sizeof(MemberSlot);
}

inline MemberSlot* slots(RegionHeader* header) {
  return reinterpret_cast<MemberSlot*>(reinterpret_cast<char*>(header) + sizeof(RegionHeader));
}
inline const MemberSlot* slots(const RegionHeader* header) {
  return reinterpret_cast<const MemberSlot*>(reinterpret_cast<const char*>(header) +
                                             sizeof(RegionHeader));
}

// A group name is 1..kMaxNameLength printable ASCII characters, none of them '/' or a space.
// On a bad name `why` says what is wrong.
bool valid_group_name(std::string_view name, std::string* why);

// $STREAMPOOL_GROUP_DIR is the caller's business; this is the fallback: /dev/shm where it is a
// writable folder, else $TMPDIR (when absolute), else /tmp.
std::string default_group_dir();

std::string group_file_path(std::string_view dir, std::string_view name);

// Checks a mapped region of `file_bytes` bytes against this build's layout and the group's name.
// Empty when it is usable; otherwise what is wrong, in a few words.
std::string region_problem(const RegionHeader* header, std::uint64_t file_bytes,
                           std::string_view name);

}  // namespace streampool::control::group
