// Several processes of one group charging and giving back at once, and starting at once.
#include <sched.h>

#include <random>
#include <vector>

#include "group_test_support.hpp"

namespace streampool::control {
namespace {

using testing_support::exited_cleanly;
using testing_support::GroupTest;
using testing_support::kMiB;
using testing_support::shared_with_children;
using testing_support::wait_for;

// What the children count by themselves, in memory they share: raised after a charge is admitted,
// lowered before it is given back, so it never exceeds what the group holds at that moment.
struct Ledger {
  std::atomic<std::uint64_t> held[2]{};  // per device
  std::atomic<int> over_limit{0};
  std::atomic<int> admitted{0};
  std::atomic<int> refused{0};
  std::atomic<int> start{0};
};

class GroupProcessesTest : public GroupTest, public ::testing::WithParamInterface<int> {};

TEST_P(GroupProcessesTest, ChargingTogetherNeverPassesTheLimitAndEndsAtZero) {
  constexpr std::uint64_t kLimit = 32 * kMiB;
  const int processes = GetParam();
  Ledger* ledger = shared_with_children<Ledger>();
  std::vector<pid_t> children;
  for (int child_index = 0; child_index < processes; ++child_index) {
    pid_t child = ::fork();
    if (child == 0) {
      auto member = GroupBudget::open(options(kLimit)).budget;
      if (!member) ::_exit(2);
      set_group_point_hook(testing_support::yield_inside_admission);
      while (ledger->start.load() == 0) ::sched_yield();
      std::minstd_rand random(static_cast<unsigned>(child_index) + 1);
      std::vector<std::uint64_t> standing;  // up to three charges held across rounds
      for (int round = 0; round < 3000; ++round) {
        if (standing.size() < 3) {
          std::uint64_t size = (random() % 24 + 1) * kMiB;
          if (member->try_charge(round % 2, size)) {
            if (ledger->held[round % 2].fetch_add(size) + size > kLimit) ledger->over_limit.fetch_add(1);
            ledger->admitted.fetch_add(1);
            standing.push_back(size * 2 + static_cast<std::uint64_t>(round % 2));
          } else {
            ledger->refused.fetch_add(1);
          }
        }
        if (!standing.empty() && random() % 2 == 0) {
          std::uint64_t entry = standing.back();
          standing.pop_back();
          ledger->held[entry % 2].fetch_sub(entry / 2);
          member->uncharge(static_cast<int>(entry % 2), entry / 2);
        }
      }
      for (std::uint64_t entry : standing) {
        ledger->held[entry % 2].fetch_sub(entry / 2);
        member->uncharge(static_cast<int>(entry % 2), entry / 2);
      }
      bool all_given_back = member->member_charged(0) == 0 && member->member_charged(1) == 0;
      member.reset();
      ::_exit(all_given_back ? 0 : 3);
    }
    children.push_back(child);
  }
  ledger->start.store(1);
  for (pid_t child : children) EXPECT_TRUE(exited_cleanly(wait_for(child)));

  EXPECT_EQ(ledger->over_limit.load(), 0);
  EXPECT_GT(ledger->admitted.load(), 0);
  EXPECT_GT(ledger->refused.load(), 0);
  GroupView group = view();
  EXPECT_EQ(group.total[0], 0u);
  EXPECT_EQ(group.total[1], 0u);
  EXPECT_TRUE(group.members.empty());
}

INSTANTIATE_TEST_SUITE_P(Members, GroupProcessesTest, ::testing::Values(2, 4),
                         [](const auto& test) { return std::to_string(test.param) + "Processes"; });

// Each child of a round reports whether it joined; all stay members until every one has tried.
struct StartLine {
  std::atomic<int> go{0};
  std::atomic<int> joined{0};
  std::atomic<int> failed{0};
  std::atomic<int> leave{0};
};

TEST_F(GroupTest, ProcessesStartingTogetherAllJoinOneRegion) {
  constexpr int kRounds = 12;
  constexpr int kProcesses = 6;
  for (int round = 0; round < kRounds; ++round) {
    std::string name = "start-" + std::to_string(round);
    StartLine* line = shared_with_children<StartLine>();
    std::vector<pid_t> children;
    for (int child_index = 0; child_index < kProcesses; ++child_index) {
      pid_t child = ::fork();
      if (child == 0) {
        while (line->go.load() == 0) ::sched_yield();
        auto member = GroupBudget::open(options(kMiB, name)).budget;
        (member ? line->joined : line->failed).fetch_add(1);
        while (line->leave.load() == 0) ::sched_yield();
        ::_exit(0);
      }
      children.push_back(child);
    }
    line->go.store(1);
    while (line->joined.load() + line->failed.load() < kProcesses) ::sched_yield();
    GroupView group = view(name);
    line->leave.store(1);
    for (pid_t child : children) wait_for(child);

    EXPECT_EQ(line->failed.load(), 0) << name;
    EXPECT_EQ(group.members.size(), static_cast<std::size_t>(kProcesses)) << name;
  }
  // Only the regions themselves are left: every creator's temporary file is gone.
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".init."), std::string::npos) << entry.path();
    ++files;
  }
  EXPECT_EQ(files, static_cast<std::size_t>(kRounds));
}

}  // namespace
}  // namespace streampool::control
