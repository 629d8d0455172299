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
  header.record_bytes = sizeof(Record);
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

void write_file(const std::string& path, const FileHeader& header, const std::vector<Record>& records,
                std::size_t extra_bytes = 0) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&header), sizeof header);
  out.write(reinterpret_cast<const char*>(records.data()), static_cast<std::streamsize>(records.size() * sizeof(Record)));
  const std::string junk(extra_bytes, 'x');
  out.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

TEST(TraceFormat, SizesAreThoseTheDocumentSays) {
  EXPECT_EQ(sizeof(FileHeader), 64u);
  EXPECT_EQ(sizeof(Record), 56u);
  EXPECT_EQ(offsetof(Record, op), 16u);
  EXPECT_EQ(offsetof(Record, address), 48u);
}

TEST(TraceFormat, EveryOpHasAName) {
  for (std::uint16_t op = 1; op <= streampool::trace::kLastOp; ++op) {
    EXPECT_NE(streampool::trace::op_name(op), "unknown") << op;
  }
  EXPECT_EQ(streampool::trace::op_name(0), "unknown");
  EXPECT_EQ(streampool::trace::op_name(streampool::trace::kLastOp + 1), "unknown");
  EXPECT_EQ(streampool::trace::op_name(static_cast<std::uint16_t>(Op::alloc)), "alloc");
}

TEST(TraceFormat, ReaderSortsByTimeKeepingOneThreadsOrderAndSetsAPartialRecordAside) {
  const std::string path = temporary("sorted");
  write_file(path, valid_header(),
             {record_at(30, 1, Op::alloc), record_at(10, 2, Op::alloc), record_at(30, 1, Op::free), record_at(20, 2, Op::free)},
             13);
  streampool::trace::Trace trace;
  std::string error;

  ASSERT_TRUE(streampool::trace::read_trace(path, &trace, &error)) << error;

  ASSERT_EQ(trace.records.size(), 4u);
  EXPECT_EQ(trace.records[0].time_ns, 10u);
  EXPECT_EQ(trace.records[1].time_ns, 20u);
  EXPECT_EQ(trace.records[2].op, static_cast<std::uint16_t>(Op::alloc));  // same time: file order
  EXPECT_EQ(trace.records[3].op, static_cast<std::uint16_t>(Op::free));
  EXPECT_EQ(trace.trailing_bytes, 13u);
  EXPECT_EQ(trace.header.pid, 42u);
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

TEST(TraceFormat, ReaderTakesLargerRecordsOfALaterRevisionOfTheSameVersion) {
  const std::string path = temporary("larger");
  FileHeader header = valid_header();
  header.record_bytes = sizeof(Record) + 8;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&header), sizeof header);
    for (std::uint64_t time : {5u, 6u}) {
      Record record = record_at(time, 1, Op::pool_trim);
      record.size = time * 100;
      out.write(reinterpret_cast<const char*>(&record), sizeof record);
      const std::uint64_t extension = 0;
      out.write(reinterpret_cast<const char*>(&extension), sizeof extension);
    }
  }
  streampool::trace::Trace trace;
  std::string error;

  ASSERT_TRUE(streampool::trace::read_trace(path, &trace, &error)) << error;
  ASSERT_EQ(trace.records.size(), 2u);
  EXPECT_EQ(trace.records[1].size, 600u);
  unlink(path.c_str());
}

}  // namespace
