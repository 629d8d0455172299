#pragma once
// What the group budget's tests share: a fresh folder per test for the region files, a group's
// options, memory shared with forked children, and the wait for a child's end.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "group_budget.hpp"

namespace streampool::control::testing_support {

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

class GroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/streampool-group-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  GroupOptions options(std::uint64_t limit, std::string name = "job") const {
    GroupOptions options;
    options.name = std::move(name);
    options.dir = dir_;
    options.default_limit = limit;
    return options;
  }
  std::unique_ptr<GroupBudget> join(std::uint64_t limit, std::string name = "job") const {
    GroupBudget::Opened opened = GroupBudget::open(options(limit, std::move(name)));
    EXPECT_TRUE(opened.budget) << opened.error;
    return std::move(opened.budget);
  }
  GroupView view(const std::string& name = "job") const {
    std::string error;
    std::optional<GroupView> view = read_group(name, dir_, &error);
    EXPECT_TRUE(view) << error;
    return view.value_or(GroupView{});
  }

  std::string dir_;
};

// Memory a forked child writes and its parent reads. Never unmapped: tests are short processes.
template <typename T>
T* shared_with_children() {
  void* memory = ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) std::abort();
  return new (memory) T{};
}

// Leaves a member as a killed process leaves it: its destructor never runs (so it never frees its
// slot). The object stays reachable, so leak checkers see no leak.
inline void abandon(std::unique_ptr<GroupBudget> member) {
  static auto* graveyard = new std::vector<GroupBudget*>;
  graveyard->push_back(member.release());
}

// The child's wait status once it has ended.
inline int wait_for(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
  return status;
}

// Lets other threads and processes run between an admission's sum and its charge, so that an
// admission that did not hold the lock over both would be caught passing the limit.
inline void yield_inside_admission(GroupPoint point) {
  if (point == GroupPoint::kAdmitLocked) ::sched_yield();
}

inline bool killed_by_sigkill(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }
inline bool exited_cleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

}  // namespace streampool::control::testing_support
