// The group budget within one process: exact counts, the limit at its boundary, members joining and
// leaving, the table's capacity, the group's limits, the read-only view and the limit's parser.
#include <thread>
#include <vector>

#include "group_test_support.hpp"

namespace streampool::control {
namespace {

using testing_support::GroupTest;
using testing_support::kMiB;

TEST_F(GroupTest, ChargesAreCountedExactlyPerDevice) {
  auto member = join(10 * kMiB);
  ASSERT_TRUE(member);

  EXPECT_TRUE(member->try_charge(0, 3 * kMiB));
  EXPECT_TRUE(member->try_charge(0, 512));
  EXPECT_TRUE(member->try_charge(1, 7 * kMiB));
  member->uncharge(0, 512);

  EXPECT_EQ(member->charged(0), 3 * kMiB);
  EXPECT_EQ(member->charged(1), 7 * kMiB);
  EXPECT_EQ(member->charged(2), 0u);
  EXPECT_EQ(member->member_charged(1), 7 * kMiB);
}

TEST_F(GroupTest, AdmissionStopsExactlyAtTheLimit) {
  auto member = join(10 * kMiB);
  ASSERT_TRUE(member);

  EXPECT_TRUE(member->try_charge(0, 10 * kMiB - 1));
  EXPECT_FALSE(member->try_charge(0, 2));
  EXPECT_TRUE(member->try_charge(0, 1));
  EXPECT_FALSE(member->try_charge(0, 1));

  EXPECT_EQ(member->charged(0), 10 * kMiB);
  EXPECT_EQ(member->limit(0), 10 * kMiB);
}

TEST_F(GroupTest, ARefusedChargeChargesNothing) {
  auto member = join(10 * kMiB);
  ASSERT_TRUE(member);
  ASSERT_TRUE(member->try_charge(0, 6 * kMiB));

  EXPECT_FALSE(member->try_charge(0, 5 * kMiB));

  EXPECT_EQ(member->charged(0), 6 * kMiB);
  EXPECT_TRUE(member->try_charge(0, 4 * kMiB));
}

TEST_F(GroupTest, MembersShareOneLimit) {
  auto first = join(10 * kMiB);
  auto second = join(10 * kMiB);
  ASSERT_TRUE(first && second);

  EXPECT_TRUE(first->try_charge(0, 6 * kMiB));
  EXPECT_FALSE(second->try_charge(0, 5 * kMiB));
  EXPECT_TRUE(second->try_charge(0, 4 * kMiB));

  EXPECT_EQ(first->charged(0), 10 * kMiB);
  EXPECT_EQ(second->charged(0), 10 * kMiB);
  EXPECT_EQ(second->member_charged(0), 4 * kMiB);
}

TEST_F(GroupTest, GivingBackMoreThanChargedStopsAtZero) {
  auto first = join(10 * kMiB);
  auto second = join(10 * kMiB);
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(first->try_charge(0, 2 * kMiB));
  ASSERT_TRUE(second->try_charge(0, 3 * kMiB));

  first->uncharge(0, 5 * kMiB);

  EXPECT_EQ(first->member_charged(0), 0u);
  EXPECT_EQ(first->charged(0), 3 * kMiB);
}

TEST_F(GroupTest, LeavingGivesBackTheMembersShare) {
  auto stays = join(10 * kMiB);
  auto leaves = join(10 * kMiB);
  ASSERT_TRUE(stays && leaves);
  ASSERT_TRUE(leaves->try_charge(0, 8 * kMiB));

  leaves.reset();

  EXPECT_EQ(stays->charged(0), 0u);
  EXPECT_TRUE(stays->try_charge(0, 10 * kMiB));
  EXPECT_EQ(view().members.size(), 1u);
}

TEST_F(GroupTest, AFullTableIsRefusedClearlyUntilAMemberLeaves) {
  GroupOptions small = options(kNoLimit);
  small.member_capacity = 2;
  auto first = GroupBudget::open(small);
  auto second = GroupBudget::open(small);
  ASSERT_TRUE(first.budget && second.budget);

  GroupBudget::Opened third = GroupBudget::open(small);
  EXPECT_FALSE(third.budget);
  EXPECT_EQ(third.error, "STREAMPOOL_GROUP=job: the group is full (2 members)");

  second.budget.reset();
  EXPECT_TRUE(GroupBudget::open(small).budget);
}

TEST_F(GroupTest, WithoutALimitEverythingIsAdmittedAndCounted) {
  auto member = join(kNoLimit);
  ASSERT_TRUE(member);

  EXPECT_TRUE(member->try_charge(0, std::uint64_t{1} << 50));
  EXPECT_EQ(member->limit(0), kNoLimit);
  EXPECT_EQ(member->charged(0), std::uint64_t{1} << 50);
}

TEST_F(GroupTest, PerDeviceLimitsApplyToTheirDevices) {
  GroupOptions per_device = options(kNoLimit);
  per_device.device_limits = {4 * kMiB, 8 * kMiB};
  auto member = GroupBudget::open(per_device).budget;
  ASSERT_TRUE(member);

  EXPECT_FALSE(member->try_charge(0, 5 * kMiB));
  EXPECT_TRUE(member->try_charge(1, 8 * kMiB));
  EXPECT_TRUE(member->try_charge(2, 100 * kMiB));
  EXPECT_EQ(member->limit(0), 4 * kMiB);
  EXPECT_EQ(member->limit(2), kNoLimit);
}

TEST_F(GroupTest, TheFirstMembersLimitStandsForLaterMembers) {
  auto first = join(10 * kMiB);
  ASSERT_TRUE(first);

  GroupBudget::Opened later = GroupBudget::open(options(20 * kMiB));
  ASSERT_TRUE(later.budget);

  EXPECT_EQ(later.budget->limit(0), 10 * kMiB);
  EXPECT_EQ(later.note, "STREAMPOOL_GROUP=job: the group's members set other limits; theirs stand");
  EXPECT_FALSE(later.budget->try_charge(0, 11 * kMiB));
}

TEST_F(GroupTest, AMemberFindingTheGroupEmptySetsItsLimit) {
  join(10 * kMiB).reset();

  auto next = join(20 * kMiB);
  ASSERT_TRUE(next);

  EXPECT_EQ(next->limit(0), 20 * kMiB);
  EXPECT_TRUE(next->try_charge(0, 20 * kMiB));
}

TEST_F(GroupTest, DevicesPastTheTableAreNotGoverned) {
  auto member = join(kMiB);
  ASSERT_TRUE(member);

  EXPECT_TRUE(member->try_charge(static_cast<int>(group::kMaxDevices), 100 * kMiB));
  EXPECT_EQ(member->charged(static_cast<int>(group::kMaxDevices)), 0u);
  EXPECT_FALSE(member->try_charge(-1, 1));
}

TEST_F(GroupTest, TheViewListsEveryMemberWithItsCharges) {
  auto first = join(10 * kMiB);
  auto second = join(10 * kMiB);
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(first->try_charge(0, 3 * kMiB));
  ASSERT_TRUE(second->try_charge(0, 5 * kMiB));
  ASSERT_TRUE(second->try_charge(1, kMiB));

  GroupView group = view();

  ASSERT_EQ(group.members.size(), 2u);
  EXPECT_EQ(group.members[0].pid, ::getpid());
  EXPECT_EQ(group.members[0].charged[0], 3 * kMiB);
  EXPECT_EQ(group.members[1].charged[0], 5 * kMiB);
  EXPECT_TRUE(group.members[1].alive);
  EXPECT_EQ(group.total[0], 8 * kMiB);
  EXPECT_EQ(group.total[1], kMiB);
  EXPECT_EQ(group.limit[0], 10 * kMiB);
  EXPECT_EQ(group.member_capacity, group::kMaxMembers);
}

TEST_F(GroupTest, ThreadsChargingTogetherNeverPassTheLimit) {
  constexpr std::uint64_t kLimit = 12 * kMiB;
  auto member = join(kLimit);
  ASSERT_TRUE(member);
  // What the threads hold by their own count: raised after a charge is admitted, lowered before it
  // is given back, so it never exceeds what the group holds.
  std::atomic<std::uint64_t> held{0};
  std::atomic<int> over_limit{0};
  std::atomic<int> refused{0};
  set_group_point_hook(testing_support::yield_inside_admission);
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 6; ++thread) {
    threads.emplace_back([&, thread] {
      std::uint64_t size = (static_cast<std::uint64_t>(thread) + 3) * kMiB;
      for (int round = 0; round < 2000; ++round) {
        if (!member->try_charge(0, size)) {
          refused.fetch_add(1);
          continue;
        }
        if (held.fetch_add(size) + size > kLimit) over_limit.fetch_add(1);
        std::this_thread::yield();
        held.fetch_sub(size);
        member->uncharge(0, size);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  set_group_point_hook(nullptr);

  EXPECT_EQ(over_limit.load(), 0);
  EXPECT_GT(refused.load(), 0);
  EXPECT_EQ(member->charged(0), 0u);
}

TEST_F(GroupTest, AForkedChildCannotChargeOnItsParentsSlot) {
  auto member = join(10 * kMiB);
  ASSERT_TRUE(member);
  ASSERT_TRUE(member->try_charge(0, 2 * kMiB));

  pid_t child = ::fork();
  if (child == 0) {
    bool charged = member->try_charge(0, kMiB);
    member->uncharge(0, 2 * kMiB);
    member.reset();
    ::_exit(charged ? 1 : 0);
  }

  EXPECT_TRUE(testing_support::exited_cleanly(testing_support::wait_for(child)));
  EXPECT_EQ(member->charged(0), 2 * kMiB);
  EXPECT_EQ(view().members.size(), 1u);
}

TEST(GroupLimit, ReadsBytesAndBinaryUnits) {
  EXPECT_EQ(parse_group_limit("1073741824"), std::uint64_t{1} << 30);
  EXPECT_EQ(parse_group_limit("40G"), std::uint64_t{40} << 30);
  EXPECT_EQ(parse_group_limit("512m"), std::uint64_t{512} << 20);
  EXPECT_EQ(parse_group_limit("2T"), std::uint64_t{2} << 40);
  EXPECT_EQ(parse_group_limit("64K"), std::uint64_t{64} << 10);
}

TEST(GroupLimit, RefusesWhatIsNotASize) {
  for (const char* bad : {"", "lots", "0", "G", "40GB", "-1", "1.5G", "4 G", "18446744073709551616",
                          "17179869184G", "99999999999999999999999999999999999"})
    EXPECT_FALSE(parse_group_limit(bad)) << bad;
}

TEST(GroupName, AcceptsPrintableNamesWithoutSlashes) {
  EXPECT_TRUE(group::valid_group_name("ddp-job_7.rank", nullptr));
  EXPECT_TRUE(group::valid_group_name(std::string(64, 'a'), nullptr));
}

TEST(GroupName, RefusesEmptyLongSlashedAndUnprintableNames) {
  std::string why;
  EXPECT_FALSE(group::valid_group_name("", &why));
  EXPECT_EQ(why, "is empty");
  EXPECT_FALSE(group::valid_group_name(std::string(65, 'a'), &why));
  EXPECT_EQ(why, "is longer than 64 characters");
  EXPECT_FALSE(group::valid_group_name("../etc", &why));
  EXPECT_EQ(why, "holds a '/'");
  EXPECT_FALSE(group::valid_group_name("a b", &why));
  EXPECT_FALSE(group::valid_group_name("tab\there", &why));
  EXPECT_FALSE(group::valid_group_name("caf\xc3\xa9", &why));
}

}  // namespace
}  // namespace streampool::control
