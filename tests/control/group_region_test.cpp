// Region files the group budget must refuse (short, garbage, another version or size, another
// group's, not a file), folders it cannot write, and the settings read from the environment: each
// refused with one line, and streampool goes on without the group.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "group_test_support.hpp"

namespace streampool::control {
namespace {

using testing_support::GroupTest;
using testing_support::kMiB;

class GroupRegionTest : public GroupTest {
 protected:
  std::string region_path(const std::string& name = "job") const {
    return group::group_file_path(dir_, name);
  }
  void write_file(const std::string& path, const std::string& bytes) const {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  // A valid region of group "job", made by a member that has left, opened for the test to spoil.
  group::RegionHeader* made_region() const {
    join(kMiB).reset();
    int fd = ::open(region_path().c_str(), O_RDWR);
    EXPECT_GE(fd, 0);
    void* map = ::mmap(nullptr, group::region_bytes(group::kMaxMembers), PROT_READ | PROT_WRITE,
                       MAP_SHARED, fd, 0);
    ::close(fd);
    EXPECT_NE(map, MAP_FAILED);
    return static_cast<group::RegionHeader*>(map);
  }
  std::string refusal() const {
    GroupBudget::Opened opened = GroupBudget::open(options(kMiB));
    EXPECT_FALSE(opened.budget);
    return opened.error;
  }
  std::string refused_because(const std::string& why) const {
    return "STREAMPOOL_GROUP=job: " + region_path() + " is refused: " + why;
  }
};

TEST_F(GroupRegionTest, AShortFileIsRefused) {
  write_file(region_path(), "POOLGRP1");
  EXPECT_EQ(refusal(), refused_because("it is too short to be a group region"));
}

TEST_F(GroupRegionTest, AnEmptyFileIsRefused) {
  write_file(region_path(), "");
  EXPECT_EQ(refusal(), refused_because("it is too short to be a group region"));
}

TEST_F(GroupRegionTest, GarbageOfTheRightSizeIsRefused) {
  write_file(region_path(), std::string(group::region_bytes(group::kMaxMembers), '\x5a'));
  EXPECT_EQ(refusal(), refused_because("it is not a streampool group region"));
}

TEST_F(GroupRegionTest, AnotherLayoutVersionIsRefused) {
  made_region()->version = group::kVersion + 1;
  EXPECT_EQ(refusal(), refused_because("it has layout version 2, this streampool reads 1"));
}

TEST_F(GroupRegionTest, AnotherBuildsLayoutIsRefused) {
  made_region()->header_bytes = sizeof(group::RegionHeader) + 64;
  EXPECT_EQ(refusal(), refused_because("it was made by a streampool of another build"));
}

TEST_F(GroupRegionTest, AFileOfTheWrongSizeIsRefused) {
  made_region();
  ASSERT_EQ(::truncate(region_path().c_str(),
                       static_cast<off_t>(group::region_bytes(group::kMaxMembers) - 64)), 0);
  EXPECT_EQ(refusal(), refused_because("its size is " +
                                       std::to_string(group::region_bytes(group::kMaxMembers) - 64) +
                                       " bytes, its layout needs " +
                                       std::to_string(group::region_bytes(group::kMaxMembers))));
}

TEST_F(GroupRegionTest, ACorruptMemberCountIsRefused) {
  made_region()->member_capacity = group::kMaxMembers + 1;
  EXPECT_EQ(refusal(), refused_because("its member table is corrupt"));
}

TEST_F(GroupRegionTest, ARegionNeverInitialisedIsRefused) {
  made_region()->ready.store(0);
  EXPECT_EQ(refusal(), refused_because("it was never initialised"));
}

TEST_F(GroupRegionTest, AnotherGroupsRegionIsRefused) {
  made_region();
  ASSERT_EQ(::rename(region_path().c_str(), region_path("other").c_str()), 0);
  GroupBudget::Opened opened = GroupBudget::open(options(kMiB, "other"));
  EXPECT_FALSE(opened.budget);
  EXPECT_EQ(opened.error, "STREAMPOOL_GROUP=other: " + region_path("other") +
                              " is refused: it belongs to another group");
}

TEST_F(GroupRegionTest, ASymbolicLinkIsNotFollowed) {
  made_region();
  ASSERT_EQ(::rename(region_path().c_str(), (dir_ + "/elsewhere").c_str()), 0);
  ASSERT_EQ(::symlink((dir_ + "/elsewhere").c_str(), region_path().c_str()), 0);
  EXPECT_EQ(refusal(), "STREAMPOOL_GROUP=job: cannot open " + region_path() +
                           ": Too many levels of symbolic links");
}

TEST_F(GroupRegionTest, TheViewRefusesWhatJoiningRefuses) {
  write_file(region_path(), std::string(group::region_bytes(group::kMaxMembers), '\x5a'));
  std::string error;
  EXPECT_FALSE(read_group("job", dir_, &error));
  EXPECT_EQ(error, region_path() + " is refused: it is not a streampool group region");
}

TEST_F(GroupRegionTest, AFolderThatDoesNotExistIsRefused) {
  GroupOptions missing = options(kMiB);
  missing.dir = dir_ + "/missing";
  GroupBudget::Opened opened = GroupBudget::open(missing);
  EXPECT_FALSE(opened.budget);
  EXPECT_EQ(opened.error, "STREAMPOOL_GROUP=job: cannot create " +
                              group::group_file_path(missing.dir, "job") +
                              ": No such file or directory");
}

TEST_F(GroupRegionTest, AFolderThatIsAFileIsRefused) {
  write_file(dir_ + "/plain", "x");
  GroupOptions not_a_folder = options(kMiB);
  not_a_folder.dir = dir_ + "/plain";
  GroupBudget::Opened opened = GroupBudget::open(not_a_folder);
  EXPECT_FALSE(opened.budget);
  EXPECT_NE(opened.error.find(": Not a directory"), std::string::npos) << opened.error;
}

TEST_F(GroupRegionTest, AFolderWithoutWritePermissionIsRefused) {
  std::string locked = dir_ + "/locked";
  ASSERT_EQ(::mkdir(locked.c_str(), 0555), 0);
  // Root writes anywhere a mode bit forbids; /proc refuses every process a new file.
  GroupOptions unwritable = options(kMiB);
  unwritable.dir = ::geteuid() == 0 ? "/proc" : locked;
  GroupBudget::Opened opened = GroupBudget::open(unwritable);
  EXPECT_FALSE(opened.budget);
  EXPECT_EQ(opened.error.rfind("STREAMPOOL_GROUP=job: cannot create " + unwritable.dir, 0), 0u)
      << opened.error;
}

// The settings, read the way streampool reads them at start.
class GroupEnvironmentTest : public GroupTest {
 protected:
  void TearDown() override {
    ::unsetenv("STREAMPOOL_GROUP");
    ::unsetenv("STREAMPOOL_GROUP_LIMIT");
    ::unsetenv("STREAMPOOL_GROUP_DIR");
    GroupTest::TearDown();
  }
  // What from_environment() prints, and whether it joined.
  std::string stderr_of_joining(bool* joined) {
    ::testing::internal::CaptureStderr();
    auto member = GroupBudget::from_environment();
    *joined = member != nullptr;
    return ::testing::internal::GetCapturedStderr();
  }
};

TEST_F(GroupEnvironmentTest, TheSettingsMakeAGroupWithItsLimit) {
  ::setenv("STREAMPOOL_GROUP", "env-job", 1);
  ::setenv("STREAMPOOL_GROUP_LIMIT", "2M", 1);
  ::setenv("STREAMPOOL_GROUP_DIR", dir_.c_str(), 1);

  auto member = GroupBudget::from_environment();

  ASSERT_TRUE(member);
  EXPECT_EQ(member->limit(0), 2 * kMiB);
  EXPECT_EQ(member->path(), group::group_file_path(dir_, "env-job"));
}

TEST_F(GroupEnvironmentTest, WithoutAGroupNameNothingHappens) {
  ::setenv("STREAMPOOL_GROUP_LIMIT", "2M", 1);
  bool joined = true;
  EXPECT_EQ(stderr_of_joining(&joined), "");
  EXPECT_FALSE(joined);
}

TEST_F(GroupEnvironmentTest, AnUnwritableFolderIsOneLineAndNoGroup) {
  ::setenv("STREAMPOOL_GROUP", "env-job", 1);
  ::setenv("STREAMPOOL_GROUP_DIR", (dir_ + "/missing").c_str(), 1);
  bool joined = true;
  EXPECT_EQ(stderr_of_joining(&joined),
            "streampool: STREAMPOOL_GROUP=env-job: cannot create " + dir_ +
                "/missing/streampool-group-env-job: No such file or directory; carrying on without "
                "the group\n");
  EXPECT_FALSE(joined);
}

TEST_F(GroupEnvironmentTest, ABadLimitIsOneLineAndNoGroup) {
  ::setenv("STREAMPOOL_GROUP", "env-job", 1);
  ::setenv("STREAMPOOL_GROUP_DIR", dir_.c_str(), 1);
  ::setenv("STREAMPOOL_GROUP_LIMIT", "lots", 1);
  bool joined = true;
  EXPECT_EQ(stderr_of_joining(&joined),
            "streampool: STREAMPOOL_GROUP_LIMIT=lots is not a size (bytes, or a whole number with K, "
            "M, G or T); carrying on without the group\n");
  EXPECT_FALSE(joined);
}

TEST_F(GroupEnvironmentTest, ABadNameIsOneLineAndNoGroup) {
  ::setenv("STREAMPOOL_GROUP", "../../etc/x\x01", 1);
  bool joined = true;
  EXPECT_EQ(stderr_of_joining(&joined),
            "streampool: STREAMPOOL_GROUP=../../etc/x?: the name holds a '/'; carrying on without "
            "the group\n");
  EXPECT_FALSE(joined);
}

TEST_F(GroupEnvironmentTest, ARelativeFolderIsOneLineAndNoGroup) {
  ::setenv("STREAMPOOL_GROUP", "env-job", 1);
  ::setenv("STREAMPOOL_GROUP_DIR", "relative/dir", 1);
  bool joined = true;
  EXPECT_EQ(stderr_of_joining(&joined),
            "streampool: STREAMPOOL_GROUP_DIR=relative/dir is not an absolute folder; carrying on "
            "without the group\n");
  EXPECT_FALSE(joined);
}

TEST_F(GroupEnvironmentTest, ACorruptRegionIsOneLineAndNoGroup) {
  ::setenv("STREAMPOOL_GROUP", "env-job", 1);
  ::setenv("STREAMPOOL_GROUP_DIR", dir_.c_str(), 1);
  std::ofstream(group::group_file_path(dir_, "env-job"), std::ios::binary) << "garbage";
  bool joined = true;
  EXPECT_EQ(stderr_of_joining(&joined),
            "streampool: STREAMPOOL_GROUP=env-job: " + group::group_file_path(dir_, "env-job") +
                " is refused: it is too short to be a group region; carrying on without the group\n");
  EXPECT_FALSE(joined);
}

}  // namespace
}  // namespace streampool::control
