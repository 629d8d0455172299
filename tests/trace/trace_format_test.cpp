// The trace file format (docs/TRACE_FORMAT.md) as the reader takes it: what it accepts, refuses
// and how it orders records.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "trace/format.hpp"
#include "trace/reader.hpp"

namespace {

using streampool::trace::FileHeader;
using streampool::trace::Op;
using streampool::trace::Record;

std::string temporary(const char* stem) {
  return "/tmp/streampool_format_" + std::string(stem) + "_" + std::to_string(getpid()) + ".trace";
}

FileHeader valid_header() {
  FileHeader header{};
  std::memcpy(header.magic, streampool::trace::kMagic, sizeof header.magic);
  header.version = streampool::trace::kFormatVersion;
  header.header_bytes = sizeof(FileHeader);
  header.block_version = streampool::trace::kBlockVersion;
  header.pid = 42;
  return header;
}

Record record_at(std::uint64_t time, std::uint32_t thread, Op op) {
  Record record{};
  record.time_ns = time;
  record.thread = thread;
  record.op = static_cast<std::uint16_t>(op);
  return record;
}

std::string block_of(const std::vector<Record>& records) {
  std::vector<unsigned char> out(sizeof(streampool::trace::BlockHeader) +
                                 records.size() * streampool::trace::kMaxEncodedRecord);
  const std::size_t bytes = streampool::trace::encode_block(records.data(), static_cast<std::uint32_t>(records.size()),
                                                            records.empty() ? 0 : records[0].thread, out.data());
  return std::string(reinterpret_cast<const char*>(out.data()), bytes);
}

void write_file(const std::string& path, const FileHeader& header, const std::vector<std::string>& blocks) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&header), sizeof header);
  for (const std::string& block : blocks) out.write(block.data(), static_cast<std::streamsize>(block.size()));
}

std::vector<Record> round_trip(const std::vector<Record>& records) {
  const std::string block = block_of(records);
  streampool::trace::BlockHeader header{};
  std::memcpy(&header, block.data(), sizeof header);
  std::vector<Record> decoded(header.count);
  EXPECT_TRUE(streampool::trace::decode_block(
      header, reinterpret_cast<const unsigned char*>(block.data()) + sizeof header, decoded.data()));
  return decoded;
}

TEST(TraceFormat, SizesAreThoseTheDocumentSays) {
  EXPECT_EQ(sizeof(FileHeader), 64u);
  EXPECT_EQ(sizeof(streampool::trace::BlockHeader), 16u);
  EXPECT_EQ(sizeof(Record), 56u);  // in memory
}

TEST(TraceFormat, EveryOpHasAName) {
  for (std::uint16_t op = 1; op <= streampool::trace::kLastOp; ++op) {
    EXPECT_NE(streampool::trace::op_name(op), "unknown") << op;
  }
  EXPECT_EQ(streampool::trace::op_name(0), "unknown");
  EXPECT_EQ(streampool::trace::op_name(streampool::trace::kLastOp + 1), "unknown");
  EXPECT_EQ(streampool::trace::op_name(static_cast<std::uint16_t>(Op::alloc)), "alloc");
}

TEST(TraceFormat, EveryOutOfMemoryCauseHasAName) {
  EXPECT_EQ(streampool::trace::op_name(static_cast<std::uint16_t>(Op::out_of_memory)), "out_of_memory");
  for (std::uint16_t cause = 1; cause <= streampool::trace::kLastOomCause; ++cause) {
    EXPECT_NE(streampool::trace::oom_cause_name(cause), "unknown") << cause;
  }
  EXPECT_EQ(streampool::trace::oom_cause_name(0), "unknown");
  EXPECT_EQ(streampool::trace::oom_cause_name(streampool::trace::kLastOomCause + 1), "unknown");
  EXPECT_EQ(streampool::trace::oom_cause_name(static_cast<std::uint16_t>(streampool::trace::OomCause::cap_reached)),
            "cap_reached");
}

TEST(TraceFormat, EncodingKeepsEveryFieldAtItsExtremes) {
  std::vector<Record> records;
  Record first = record_at(5, 3, Op::alloc);
  first.flags = 0x8001;
  first.duration_ns = 0xffffffffu;
  first.result = -7;
  first.stream = 0x00007f0000001000ull;
  first.pool = ~0ull;
  first.size = ~0ull;
  first.address = ~0ull;
  records.push_back(first);
  Record second = record_at(5, 3, Op::free);  // the same time, a lower address
  second.result = 999;
  second.address = 0;
  records.push_back(second);
  Record third = record_at(~0ull >> 1, 3, Op::stream_destroy);
  third.stream = 2;
  third.address = 0x8000000000000000ull;
  records.push_back(third);

  const std::vector<Record> decoded = round_trip(records);

  ASSERT_EQ(decoded.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(std::memcmp(&decoded[i], &records[i], sizeof(Record)), 0) << "record " << i;
  }
}

TEST(TraceFormat, ASameStreamAllocateFreePairTakesFewBytes) {
  Record alloc = record_at(1000000, 1, Op::alloc);
  alloc.stream = 0x55d228dcc6a0;
  alloc.pool = 0x55d228dcc520;
  alloc.size = 1 << 20;
  alloc.address = 0x7f8ff0a00000;
  Record free = alloc;
  free.op = static_cast<std::uint16_t>(Op::free);
  free.time_ns += 40;
  free.pool = 0;
  free.size = 0;
  std::vector<Record> pairs;
  for (int i = 0; i < 100; ++i) {
    alloc.time_ns += 80;
    free.time_ns += 80;
    pairs.push_back(alloc);
    pairs.push_back(free);
  }

  const std::string block = block_of(pairs);

  EXPECT_LE(block.size() - sizeof(streampool::trace::BlockHeader), 100u * 14u);  // against 112 bytes in memory
  EXPECT_EQ(round_trip(pairs).back().address, alloc.address);
}

TEST(TraceFormat, ReaderSortsByTimeKeepingOneThreadsOrderAndSetsAPartialBlockAside) {
  const std::string path = temporary("sorted");
  const std::string partial = block_of({record_at(50, 1, Op::alloc)});
  write_file(path, valid_header(),
             {block_of({record_at(30, 1, Op::alloc), record_at(30, 1, Op::free)}),
              block_of({record_at(10, 2, Op::alloc), record_at(20, 2, Op::free)}), partial.substr(0, partial.size() - 1)});
  streampool::trace::Trace trace;
  std::string error;

  ASSERT_TRUE(streampool::trace::read_trace(path, &trace, &error)) << error;

  ASSERT_EQ(trace.records.size(), 4u);
  EXPECT_EQ(trace.records[0].time_ns, 10u);
  EXPECT_EQ(trace.records[0].thread, 2u);
  EXPECT_EQ(trace.records[1].time_ns, 20u);
  EXPECT_EQ(trace.records[2].op, static_cast<std::uint16_t>(Op::alloc));  // same time: file order
  EXPECT_EQ(trace.records[3].op, static_cast<std::uint16_t>(Op::free));
  EXPECT_EQ(trace.trailing_bytes, partial.size() - 1);
  EXPECT_EQ(trace.header.pid, 42u);
  unlink(path.c_str());
}

TEST(TraceFormat, ReaderRefusesADamagedBlock) {
  const std::string path = temporary("damaged");
  std::string block = block_of({record_at(1, 1, Op::alloc)});
  block[0] = 'X';
  write_file(path, valid_header(), {block});
  streampool::trace::Trace trace;
  std::string error;

  EXPECT_FALSE(streampool::trace::read_trace(path, &trace, &error));
  EXPECT_NE(error.find("damaged block at offset 64"), std::string::npos) << error;
  unlink(path.c_str());
}

TEST(TraceFormat, ReaderRefusesAFileThatIsNoTrace) {
  const std::string path = temporary("notrace");
  std::ofstream(path) << "{\"streampool\":{}}";
  streampool::trace::Trace trace;
  std::string error;

  EXPECT_FALSE(streampool::trace::read_trace(path, &trace, &error));
  EXPECT_NE(error.find("not a streampool trace"), std::string::npos) << error;
  unlink(path.c_str());
}

TEST(TraceFormat, ReaderRefusesAnotherVersionAndSaysWhich) {
  const std::string path = temporary("version");
  FileHeader header = valid_header();
  header.version = 99;
  write_file(path, header, {});
  streampool::trace::Trace trace;
  std::string error;

  EXPECT_FALSE(streampool::trace::read_trace(path, &trace, &error));
  EXPECT_NE(error.find("version 99"), std::string::npos) << error;
  unlink(path.c_str());
}

TEST(TraceFormat, ReaderKeepsWhereInTheFileEachRecordBeganThroughTheSort) {
  const std::string path = temporary("offsets");
  const std::string first = block_of({record_at(30, 1, Op::alloc)});
  write_file(path, valid_header(), {first, block_of({record_at(10, 2, Op::alloc)})});
  streampool::trace::Trace trace;
  std::string error;

  ASSERT_TRUE(streampool::trace::read_trace(path, &trace, &error)) << error;

  ASSERT_EQ(trace.offsets.size(), 2u);
  EXPECT_EQ(trace.offsets[0], 64u + first.size() + 16u);  // thread 2's record: the second block's payload
  EXPECT_EQ(trace.offsets[1], 64u + 16u);
  unlink(path.c_str());
}

TEST(TraceFormat, ReaderRefusesAHeaderBeyondTheFileOrBeyond4KiBAndSaysWhere) {
  const std::string path = temporary("header_bytes");
  FileHeader header = valid_header();
  header.header_bytes = 1u << 20;
  write_file(path, header, {std::string(8192, '\0')});
  streampool::trace::Trace trace;
  std::string error;

  EXPECT_FALSE(streampool::trace::read_trace(path, &trace, &error));
  EXPECT_EQ(error, path + ": damaged header (header_bytes 1048576) at offset 12");
  unlink(path.c_str());
}

}  // namespace

