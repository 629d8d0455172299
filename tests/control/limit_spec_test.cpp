// STREAMPOOL_LIMIT's grammar (src/control/limit_spec.hpp): what is accepted, what it resolves to,
// and that everything else is refused with nothing set.
#include "control/limit_spec.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace streampool::control {
namespace {

constexpr std::uint64_t KiB = 1ull << 10;
constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t GiB = 1ull << 30;
constexpr std::uint64_t kDevice = 141 * GiB;

std::uint64_t limit_of(const std::string& text, int device = 0, std::uint64_t total = kDevice) {
  LimitSpec spec;
  const char* error = parse_limit(text, &spec);
  EXPECT_EQ(error, nullptr) << text << ": " << (error ? error : "");
  return resolve_limit(spec, device, total);
}

const char* refusal(const std::string& text) {
  LimitSpec spec;
  const char* error = parse_limit(text, &spec);
  EXPECT_FALSE(limits_anything(spec)) << text;
  return error;
}

TEST(LimitSpec, ASizeWithAUnitLimitsEveryDevice) {
  EXPECT_EQ(limit_of("40G"), 40 * GiB);
  EXPECT_EQ(limit_of("40G", 5), 40 * GiB);
  EXPECT_EQ(limit_of("512M"), 512 * MiB);
  EXPECT_EQ(limit_of("64k"), 64 * KiB);
  EXPECT_EQ(limit_of("2T"), 2048 * GiB);
}

TEST(LimitSpec, UnitsMayCarryBOrIBInAnyCase) {
  EXPECT_EQ(limit_of("1.5GiB"), 3 * GiB / 2);
  EXPECT_EQ(limit_of("1.5gib"), 3 * GiB / 2);
  EXPECT_EQ(limit_of("20GB"), 20 * GiB);
  EXPECT_EQ(limit_of("7MiB"), 7 * MiB);
  EXPECT_EQ(limit_of("100B"), 100u);
}

TEST(LimitSpec, AWholeNumberWithoutUnitIsBytes) {
  EXPECT_EQ(limit_of("1073741824"), GiB);
  EXPECT_EQ(limit_of("1"), 1u);
}

TEST(LimitSpec, AFractionOrAPercentageIsAShareOfEachDevice) {
  EXPECT_EQ(limit_of("0.5"), kDevice / 2);
  EXPECT_EQ(limit_of("50%"), kDevice / 2);
  EXPECT_EQ(limit_of("1.0"), kDevice);
  EXPECT_EQ(limit_of("100%"), kDevice);
  EXPECT_EQ(limit_of("0.25", 1, 8 * GiB), 2 * GiB);
  EXPECT_EQ(limit_of("12.5%", 0, 8 * GiB), GiB);
}

TEST(LimitSpec, ATinyShareOfATinyDeviceIsStillOneByte) { EXPECT_EQ(limit_of("0.000001", 0, 10), 1u); }

TEST(LimitSpec, PerDeviceEntriesLimitOnlyTheDevicesNamed) {
  LimitSpec spec;
  ASSERT_EQ(parse_limit("0:40G,2:20G,3:25%", &spec), nullptr);
  EXPECT_EQ(resolve_limit(spec, 0, kDevice), 40 * GiB);
  EXPECT_EQ(resolve_limit(spec, 1, kDevice), kNoLimit);
  EXPECT_EQ(resolve_limit(spec, 2, kDevice), 20 * GiB);
  EXPECT_EQ(resolve_limit(spec, 3, 8 * GiB), 2 * GiB);
  EXPECT_EQ(resolve_limit(spec, 99, kDevice), kNoLimit);
}

TEST(LimitSpec, EntriesForDevicesTheMachineLacksAreFound) {
  LimitSpec spec;
  ASSERT_EQ(parse_limit("0:4G,2:4G", &spec), nullptr);
  EXPECT_EQ(first_device_missing(spec, 1), 2);
  EXPECT_EQ(first_device_missing(spec, 3), -1);
  ASSERT_EQ(parse_limit("4G", &spec), nullptr);
  EXPECT_EQ(first_device_missing(spec, 1), -1);  // one size names no device
}

TEST(LimitSpec, WordsAndEmptyTextAreRefused) {
  EXPECT_NE(refusal("lots"), nullptr);
  EXPECT_NE(refusal(""), nullptr);
  EXPECT_NE(refusal("G"), nullptr);
  EXPECT_NE(refusal("."), nullptr);
  EXPECT_NE(refusal(" 40G"), nullptr);
}

TEST(LimitSpec, SharesAboveTheWholeDeviceAreRefused) {
  EXPECT_NE(refusal("150%"), nullptr);
  EXPECT_NE(refusal("100.5%"), nullptr);
  EXPECT_NE(refusal("1.5"), nullptr);
  EXPECT_NE(refusal("0:150%"), nullptr);
}

TEST(LimitSpec, ZeroAndNegativeValuesAreRefused) {
  EXPECT_NE(refusal("0"), nullptr);
  EXPECT_NE(refusal("0G"), nullptr);
  EXPECT_NE(refusal("0%"), nullptr);
  EXPECT_NE(refusal("0.0"), nullptr);
  EXPECT_NE(refusal("-1G"), nullptr);
  EXPECT_NE(refusal("0:-4G"), nullptr);
}

TEST(LimitSpec, SizesPast64BitsAreRefused) {
  EXPECT_NE(refusal("18446744073709551616"), nullptr);
  EXPECT_NE(refusal("16777216T"), nullptr);
  EXPECT_NE(refusal("99999999999999999999999G"), nullptr);
  EXPECT_EQ(limit_of("16777215T"), 16777215ull << 40);
}

TEST(LimitSpec, JunkAfterAValueIsRefused) {
  EXPECT_NE(refusal("40Gx"), nullptr);
  EXPECT_NE(refusal("40G,"), nullptr);
  EXPECT_NE(refusal("40 G"), nullptr);
  EXPECT_NE(refusal("40Gi"), nullptr);
  EXPECT_NE(refusal("30%%"), nullptr);
  EXPECT_NE(refusal("0:4G,"), nullptr);
  EXPECT_NE(refusal("0:4G;1:2G"), nullptr);
  EXPECT_NE(refusal("0:"), nullptr);
  EXPECT_NE(refusal("0:4G,x:2G"), nullptr);
  EXPECT_NE(refusal("1.0000001"), nullptr);  // more digits than a millionth
}

TEST(LimitSpec, ADeviceNamedTwiceIsRefused) { EXPECT_NE(refusal("0:4G,1:2G,0:8G"), nullptr); }

TEST(LimitSpec, DevicesPastTheTableAreRefused) {
  EXPECT_NE(refusal("64:4G"), nullptr);
  EXPECT_NE(refusal("00000001:4G"), nullptr);
  EXPECT_EQ(limit_of("63:4G", 63), 4 * GiB);
}

TEST(LimitSpec, TextLongerThanTheBoundIsRefusedBeforeItIsRead) {
  EXPECT_NE(refusal(std::string(kMaxText + 1, '1')), nullptr);
}

TEST(LimitSpec, ARefusalLeavesAPreviousSpecCleared) {
  LimitSpec spec;
  ASSERT_EQ(parse_limit("0:4G", &spec), nullptr);
  EXPECT_NE(parse_limit("0:4G,0:4G", &spec), nullptr);
  EXPECT_FALSE(limits_anything(spec));
  EXPECT_EQ(resolve_limit(spec, 0, kDevice), kNoLimit);
}

// Random texts over the grammar's own characters: every one is either refused with nothing set, or
// accepted with a limit that resolves to at least one byte on every device it names.
TEST(LimitSpec, RandomTextsAreRefusedCleanlyOrResolveToSomething) {
  const std::string alphabet = "0123456789.:,%kKmMgGtTiIbB-x ";
  std::mt19937 random(18);
  std::size_t accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text(random() % 16, ' ');
    for (char& c : text) c = alphabet[random() % alphabet.size()];
    LimitSpec spec;
    const char* error = parse_limit(text, &spec);
    if (error != nullptr) {
      ASSERT_FALSE(limits_anything(spec)) << text;
      continue;
    }
    ++accepted;
    ASSERT_TRUE(limits_anything(spec)) << text;
    bool some = false;
    for (int device = 0; device < kMaxDevices; ++device) {
      const std::uint64_t limit = resolve_limit(spec, device, kDevice);
      if (limit == kNoLimit) continue;
      some = true;
      ASSERT_GE(limit, 1u) << text;
    }
    ASSERT_TRUE(some) << text;
  }
  EXPECT_GT(accepted, 100u);
}

}  // namespace
}  // namespace streampool::control
