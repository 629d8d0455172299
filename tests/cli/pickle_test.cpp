// The pickle writer (src/cli/pickle.hpp) against the bytes Python's pickle module documents for
// each opcode (Lib/pickletools.py): what `streampool export --format torch-snapshot` is made of.
#include "pickle.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

namespace streampool::cli {
namespace {

std::string pickled(const std::function<void(PickleWriter&)>& body) {
  return pickle_to_string([](PickleWriter& writer, void* context) { (*static_cast<const std::function<void(PickleWriter&)>*>(context))(writer); },
                          const_cast<std::function<void(PickleWriter&)>*>(&body));
}

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int value : values) out.push_back(static_cast<char>(value));
  return out;
}

TEST(PickleWriter, FramesEveryValueWithProtocolTwoAndStop) {
  EXPECT_EQ(pickled([](PickleWriter& w) { w.none(); }), bytes({0x80, 2, 'N', '.'}));
}

TEST(PickleWriter, WritesEachIntegerInTheSmallestOpcodeThatHoldsIt) {
  EXPECT_EQ(pickled([](PickleWriter& w) { w.integer(255); }), bytes({0x80, 2, 'K', 0xff, '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) { w.integer(256); }), bytes({0x80, 2, 'M', 0x00, 0x01, '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) { w.integer(65536); }), bytes({0x80, 2, 'J', 0, 0, 1, 0, '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) { w.integer(-1); }), bytes({0x80, 2, 'J', 0xff, 0xff, 0xff, 0xff, '.'}));
  // 2^31 needs a sign byte more than BININT has: LONG1 of five bytes.
  EXPECT_EQ(pickled([](PickleWriter& w) { w.integer(std::int64_t{1} << 31); }),
            bytes({0x80, 2, 0x8a, 5, 0, 0, 0, 0x80, 0, '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) { w.integer(-(std::int64_t{1} << 31) - 1); }),
            bytes({0x80, 2, 0x8a, 5, 0xff, 0xff, 0xff, 0x7f, 0xff, '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) { w.unsigned_integer(0x100000000000ULL); }),
            bytes({0x80, 2, 0x8a, 6, 0, 0, 0, 0, 0, 0x10, '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) { w.unsigned_integer(UINT64_MAX); }),
            bytes({0x80, 2, 0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, '.'}));
}

TEST(PickleWriter, WritesStringsAsLengthPrefixedUtf8AndBooleansAsTheirOpcodes) {
  EXPECT_EQ(pickled([](PickleWriter& w) { w.string("ab"); }), bytes({0x80, 2, 'X', 2, 0, 0, 0, 'a', 'b', '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) { w.boolean(true); }), bytes({0x80, 2, 0x88, '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) { w.boolean(false); }), bytes({0x80, 2, 0x89, '.'}));
}

TEST(PickleWriter, OpensContainersEmptyAndAddsTheirItemsAfterOneMark) {
  EXPECT_EQ(pickled([](PickleWriter& w) {
              w.begin_list();
              w.end();
            }),
            bytes({0x80, 2, ']', '.'}));
  EXPECT_EQ(pickled([](PickleWriter& w) {
              w.begin_dict();
              w.key("a");
              w.begin_list();
              w.integer(1);
              w.integer(2);
              w.end();
              w.end();
            }),
            bytes({0x80, 2, '}', '(', 'X', 1, 0, 0, 0, 'a', ']', '(', 'K', 1, 'K', 2, 'e', 'u', '.'}));
}

TEST(PickleWriter, AddsALongListsItemsInBatchesOfAThousand) {
  const std::string out = pickled([](PickleWriter& w) {
    w.begin_list();
    for (int i = 0; i < 2001; ++i) w.none();
    w.end();
  });
  EXPECT_EQ(std::count(out.begin(), out.end(), '('), 3);
  EXPECT_EQ(std::count(out.begin(), out.end(), 'e'), 3);
  EXPECT_EQ(out.size(), 2u + 1 + 3 * 2 + 2001 + 1);
}

TEST(PickleWriter, FinishFailsWhileAContainerIsOpen) {
  std::string sink;
  PickleWriter writer([](void* target, const char* data, std::size_t size) {
    static_cast<std::string*>(target)->append(data, size);
    return true;
  }, &sink);
  writer.begin_dict();
  EXPECT_FALSE(writer.finish());
}

}  // namespace
}  // namespace streampool::cli
