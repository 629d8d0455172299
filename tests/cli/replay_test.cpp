// streampool replay: a trace written here record by record, replayed through the engine, with and
// without what-if settings.
#include <gtest/gtest.h>

#include <vector>

#include "cli/replay.hpp"

namespace {

using streampool::cli::ReplayResult;
using streampool::cli::WhatIf;
using streampool::trace::Op;
using streampool::trace::Record;

constexpr std::uint64_t kMiB = 1u << 20;
constexpr std::uint64_t kPool = 0x5000;
constexpr std::uint64_t kFirst = 0x1100;
constexpr std::uint64_t kSecond = 0x2200;
constexpr std::uint64_t kEvent = 0xe0;

class TraceBuilder {
 public:
  TraceBuilder& add(Op op, std::uint64_t stream, std::uint64_t size = 0, std::uint64_t address = 0) {
    Record record{};
    record.time_ns = ++time_;
    record.thread = 1;
    record.op = static_cast<std::uint16_t>(op);
    record.stream = stream;
    record.pool = kPool;
    record.size = size;
    record.address = address;
    trace_.records.push_back(record);
    return *this;
  }
  TraceBuilder& create(std::uint64_t stream) {
    add(Op::stream_create, 0);
    trace_.records.back().stream = stream;
    trace_.records.back().flags = 1;  // non-blocking
    return *this;
  }
  ReplayResult replay(const WhatIf& what_if = WhatIf{}, bool samples = false) const {
    return streampool::cli::replay(trace_, what_if, samples, {});
  }

 private:
  streampool::trace::Trace trace_;
  std::uint64_t time_ = 0;
};

// The engine's first growth of a pool is a 32 MiB chunk (as the driver's); later growth goes by granule.
constexpr std::uint64_t kFirstChunk = 32 * kMiB;

TEST(Replay, ReuseOnOneStreamKeepsThePeakAtWhatOneAllocationReserves) {
  TraceBuilder once;
  once.create(kFirst).add(Op::alloc, kFirst, 40 * kMiB, 0xa000);
  TraceBuilder twice;
  twice.create(kFirst)
      .add(Op::alloc, kFirst, 40 * kMiB, 0xa000)
      .add(Op::free, kFirst, 40 * kMiB, 0xa000)
      .add(Op::alloc, kFirst, 40 * kMiB, 0xb000)
      .add(Op::free, kFirst, 40 * kMiB, 0xb000);

  const ReplayResult result = twice.replay();

  ASSERT_EQ(result.pools.size(), 1u);
  EXPECT_EQ(result.pools[0].handle, kPool);
  EXPECT_EQ(result.pools[0].allocations, 2u);
  EXPECT_EQ(result.peak_used, 40 * kMiB);
  EXPECT_EQ(result.peak_reserved, once.replay().peak_reserved);
  EXPECT_GE(result.peak_reserved, 40 * kMiB);
  EXPECT_EQ(result.events, 5u);
}

TEST(Replay, AnotherStreamReusesAFreeOnlyWhenTheRecordedOrderingProvesIt) {
  TraceBuilder unordered;
  unordered.create(kFirst).create(kSecond)
      .add(Op::alloc, kFirst, 20 * kMiB, 0xa000)
      .add(Op::free, kFirst, 20 * kMiB, 0xa000)
      .add(Op::alloc, kSecond, 20 * kMiB, 0xb000);
  TraceBuilder ordered;
  ordered.create(kFirst).create(kSecond)
      .add(Op::alloc, kFirst, 20 * kMiB, 0xa000)
      .add(Op::free, kFirst, 20 * kMiB, 0xa000)
      .add(Op::event_record, kFirst, 0, kEvent)
      .add(Op::stream_wait_event, kSecond, 0, kEvent)
      .add(Op::alloc, kSecond, 20 * kMiB, 0xb000);
  WhatIf no_internal;
  no_internal.reuse_flags = 1 | 2;  // follow events, opportunistic; no inserted dependencies

  EXPECT_GT(unordered.replay(no_internal).peak_reserved, kFirstChunk);
  EXPECT_EQ(ordered.replay(no_internal).peak_reserved, kFirstChunk);
}

TEST(Replay, ReleaseThresholdWhatIfKeepsMemoryAcrossASynchronize) {
  TraceBuilder trace;
  trace.create(kFirst)
      .add(Op::alloc, kFirst, 3 * kMiB, 0xa000)
      .add(Op::free, kFirst, 3 * kMiB, 0xa000)
      .add(Op::stream_synchronize, kFirst);
  WhatIf keep;
  keep.release_threshold = 1ull << 30;

  const ReplayResult released = trace.replay(WhatIf{}, true);
  const ReplayResult kept = trace.replay(keep, true);

  ASSERT_FALSE(released.pools[0].samples.empty());
  EXPECT_EQ(released.pools[0].samples.back().reserved, 0u);
  ASSERT_FALSE(kept.pools[0].samples.empty());
  EXPECT_EQ(kept.pools[0].samples.back().reserved, kFirstChunk);
}

TEST(Replay, MaxPoolSizeWhatIfRefusesWhatDoesNotFit) {
  TraceBuilder trace;
  trace.create(kFirst).add(Op::alloc, kFirst, 20 * kMiB, 0xa000).add(Op::alloc, kFirst, 20 * kMiB, 0xb000);
  WhatIf small;
  small.max_pool_size = kFirstChunk;

  const ReplayResult unlimited = trace.replay();
  const ReplayResult limited = trace.replay(small);

  EXPECT_EQ(unlimited.pools[0].failed_allocations, 0u);
  EXPECT_EQ(limited.pools[0].failed_allocations, 1u);
  EXPECT_EQ(limited.peak_reserved, kFirstChunk);
}

TEST(Replay, ALargerGranuleReservesMoreBeyondTheFirstChunk) {
  TraceBuilder trace;
  trace.create(kFirst).add(Op::alloc, kFirst, kFirstChunk + kMiB, 0xa000);
  WhatIf coarse;
  coarse.granule_bytes = 32 * kMiB;

  EXPECT_EQ(trace.replay().peak_reserved, kFirstChunk + 2 * kMiB);
  EXPECT_EQ(trace.replay(coarse).peak_reserved, 2 * kFirstChunk);
}

TEST(Replay, CallsThatFailedInTheProgramAreSkippedAndFreesOfUnknownAddressesIgnored) {
  TraceBuilder trace;
  trace.create(kFirst).add(Op::alloc, kFirst, 3 * kMiB, 0xa000).add(Op::free, kFirst, 0, 0xdead);
  streampool::trace::Trace failing;
  Record refused{};
  refused.op = static_cast<std::uint16_t>(Op::alloc);
  refused.pool = kPool;
  refused.size = 3 * kMiB;
  refused.result = 2;  // CUDA_ERROR_OUT_OF_MEMORY in the program
  failing.records.push_back(refused);

  EXPECT_EQ(trace.replay().peak_used, 3 * kMiB);
  EXPECT_EQ(streampool::cli::replay(failing, WhatIf{}, false, {}).peak_used, 0u);
}

TEST(Replay, KeptAllocationsSpanFromAllocationToFreeOrTheTracesEnd) {
  TraceBuilder trace;
  trace.create(kFirst)
      .add(Op::alloc, kFirst, kMiB, 0xa000)
      .add(Op::alloc, kFirst, 2 * kMiB, 0xb000)
      .add(Op::free, kFirst, kMiB, 0xa000)
      .add(Op::stream_synchronize, kFirst);

  const ReplayResult result = trace.replay(WhatIf{}, true);

  ASSERT_EQ(result.allocations.size(), 2u);
  EXPECT_EQ(result.allocations[0].size, kMiB);
  EXPECT_EQ(result.allocations[0].start_ns, 2u);
  EXPECT_EQ(result.allocations[0].end_ns, 4u);
  EXPECT_EQ(result.allocations[1].end_ns, 5u);  // never freed: until the last event
}

}  // namespace
