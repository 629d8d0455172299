// The out-of-memory report over figures made by hand: each explanation from the figures that
// should give it, and the text and JSON carrying what a person acts on.
#include "insight/oom_report.hpp"

#include <gtest/gtest.h>

namespace {

using streampool::insight::OomCause;
using streampool::insight::OomFigures;
using streampool::insight::OomPendingStream;
using streampool::insight::OomPool;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// A 4 MiB request on device 0 from a pool holding `reserved`, all of it in use.
OomFigures request_of(std::uint64_t bytes, std::uint64_t reserved) {
  OomFigures figures;
  figures.bytes = bytes;
  figures.pool = 0x1000;
  figures.stream = 0x2000;
  figures.device = 0;
  OomPool pool;
  pool.handle = 0x1000;
  pool.device = 0;
  pool.is_default = true;
  pool.reserved = reserved;
  pool.used = reserved;
  figures.pools.push_back(pool);
  return figures;
}

TEST(OomExplanation, CapReachedWhenThePoolsHoldTheChargedMemory) {
  OomFigures figures = request_of(4 * kMiB, 8 * kMiB);
  figures.limit = 8 * kMiB;
  figures.charged = 8 * kMiB;
  EXPECT_EQ(streampool::insight::explain_oom(figures).cause, OomCause::cap_reached);
}

TEST(OomExplanation, FragmentationWhenFreeBytesSufficeButNoRangeIsLargeEnough) {
  OomFigures figures = request_of(2 * kMiB, 4 * kMiB);
  figures.limit = 4 * kMiB;
  figures.charged = 4 * kMiB;
  figures.pools[0].used = 2 * kMiB;
  figures.pools[0].free_bytes = 2 * kMiB;
  figures.pools[0].largest_free = 1 * kMiB;
  const auto explanation = streampool::insight::explain_oom(figures);
  EXPECT_EQ(explanation.cause, OomCause::fragmentation);
  EXPECT_NE(explanation.line.find("2.0 MiB free"), std::string::npos) << explanation.line;
  EXPECT_DOUBLE_EQ(streampool::insight::fragmentation(figures.pools[0]), 0.5);
}

TEST(OomExplanation, PendingFreesOnTheStreamWhoseFreesWouldCoverTheRequest) {
  OomFigures figures = request_of(4 * kMiB, 8 * kMiB);
  figures.limit = 8 * kMiB;
  figures.charged = 8 * kMiB;
  figures.pools[0].used = 0;
  figures.pools[0].free_bytes = 8 * kMiB;
  figures.pools[0].largest_free = 8 * kMiB;
  figures.pools[0].pending.push_back(OomPendingStream{0x3000, 1 * kMiB, 1 * kMiB, 2, 1, false});
  figures.pools[0].pending.push_back(OomPendingStream{0x4000, 7 * kMiB, 7 * kMiB, 5, 3, false});
  const auto explanation = streampool::insight::explain_oom(figures);
  EXPECT_EQ(explanation.cause, OomCause::pending_frees);
  EXPECT_EQ(explanation.stream, 0x4000u);
  EXPECT_NE(explanation.line.find("stream 0x4000"), std::string::npos) << explanation.line;
}

TEST(OomExplanation, TheRequestingStreamsOwnFreesAreFragmentationNotPending) {
  // Its own frees are reusable at once: if they still do not serve it, they are too scattered.
  OomFigures figures = request_of(2 * kMiB, 4 * kMiB);
  figures.limit = 4 * kMiB;
  figures.charged = 4 * kMiB;
  figures.pools[0].free_bytes = 2 * kMiB;
  figures.pools[0].largest_free = 1 * kMiB;
  figures.pools[0].pending.push_back(OomPendingStream{figures.stream, 2 * kMiB, 1 * kMiB, 2, 1, false});
  EXPECT_EQ(streampool::insight::explain_oom(figures).cause, OomCause::fragmentation);
}

TEST(OomExplanation, HeldOutsideWhenForwardedMemoryTakesMostOfTheCap) {
  OomFigures figures = request_of(4 * kMiB, 2 * kMiB);
  figures.limit = 8 * kMiB;
  figures.charged = 8 * kMiB;
  figures.forwarded = 6 * kMiB;
  EXPECT_EQ(streampool::insight::explain_oom(figures).cause, OomCause::held_outside);
}

TEST(OomExplanation, HeldOutsideWhenTheDeviceIsLowAndThePoolsHoldLittle) {
  OomFigures figures = request_of(4 * kMiB, 2 * kMiB);
  figures.driver_known = true;
  figures.driver_total = 80 * kMiB;
  figures.driver_free = 1 * kMiB;
  EXPECT_EQ(streampool::insight::explain_oom(figures).cause, OomCause::held_outside);
}

TEST(OomExplanation, DeviceFullWhenThePoolsHoldMostOfTheDevice) {
  OomFigures figures = request_of(4 * kMiB, 70 * kMiB);
  figures.driver_known = true;
  figures.driver_total = 80 * kMiB;
  figures.driver_free = 1 * kMiB;
  EXPECT_EQ(streampool::insight::explain_oom(figures).cause, OomCause::device_full);
}

TEST(OomExplanation, PoolLimitWhenNeitherCapNorDeviceIsShort) {
  OomFigures figures = request_of(4 * kMiB, 2 * kMiB);
  figures.driver_known = true;
  figures.driver_total = 80 * kMiB;
  figures.driver_free = 60 * kMiB;
  EXPECT_EQ(streampool::insight::explain_oom(figures).cause, OomCause::pool_limit);
}

TEST(OomExplanation, PendingFreesTooSmallForTheRequestDoNotExplainIt) {
  OomFigures figures = request_of(4 * kMiB, 8 * kMiB);
  figures.limit = 8 * kMiB;
  figures.charged = 8 * kMiB;
  figures.pools[0].pending.push_back(OomPendingStream{0x3000, 1 * kMiB, 1 * kMiB, 2, 1, false});
  EXPECT_EQ(streampool::insight::explain_oom(figures).cause, OomCause::cap_reached);
}

TEST(OomExplanation, ADriverRequestIsNotExplainedByAPoolsFreeMemory) {
  // The pools' fragmented free memory does not serve a cuMemAlloc: the cap is what refused it.
  OomFigures figures = request_of(2 * kMiB, 4 * kMiB);
  figures.driver_request = true;
  figures.pool = 0;
  figures.limit = 4 * kMiB;
  figures.charged = 4 * kMiB;
  figures.pools[0].free_bytes = 2 * kMiB;
  figures.pools[0].largest_free = 1 * kMiB;
  const auto explanation = streampool::insight::explain_oom(figures);
  EXPECT_EQ(explanation.cause, OomCause::cap_reached);
  const std::string text = streampool::insight::oom_text(figures, explanation);
  EXPECT_EQ(text.rfind("streampool: out of memory: 2.0 MiB (2097152 bytes) of the driver's own", 0), 0u) << text;
  EXPECT_NE(streampool::insight::oom_json(figures, explanation).find("\"request\":\"driver\","), std::string::npos);
}

TEST(OomText, NamesTheRequestThePoolsThePendingStreamAndTheExplanation) {
  OomFigures figures = request_of(4 * kMiB, 8 * kMiB);
  figures.limit = 8 * kMiB;
  figures.charged = 8 * kMiB;
  figures.pools[0].pending.push_back(OomPendingStream{0x4000, 8 * kMiB, 8 * kMiB, 5, 3, false});
  figures.largest_live.push_back({0x7000, 3 * kMiB, 0x1000, "train.py:42"});
  const std::string text = streampool::insight::oom_text(figures, streampool::insight::explain_oom(figures));
  EXPECT_EQ(text.rfind("streampool: out of memory: 4.0 MiB (4194304 bytes) on stream 0x2000 from pool 0x1000, device 0\n", 0), 0u)
      << text;
  EXPECT_NE(text.find("cap 8.0 MiB, charged 8.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("pool 0x1000 default (device 0): reserved 8.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("pending on stream 0x4000: 8.0 MiB (largest 8.0 MiB), waits for its work through tick 5"),
            std::string::npos) << text;
  EXPECT_NE(text.find("live 0x7000: 3.0 MiB (pool 0x1000) at train.py:42"), std::string::npos) << text;
  EXPECT_NE(text.find("explanation: frees still pending on stream 0x4000"), std::string::npos) << text;
  for (std::size_t at = 0; at < text.size(); at = text.find('\n', at) + 1) {
    EXPECT_EQ(text.compare(at, 12, "streampool: "), 0) << text.substr(at);
  }
}

TEST(OomJson, CarriesEveryFigureAndTheCause) {
  OomFigures figures = request_of(2 * kMiB, 4 * kMiB);
  figures.limit = 4 * kMiB;
  figures.charged = 4 * kMiB;
  figures.failures = 3;
  figures.pools[0].free_bytes = 2 * kMiB;
  figures.pools[0].largest_free = 1 * kMiB;
  figures.largest_live.push_back({0x7000, 1 * kMiB, 0x1000, ""});
  const std::string json = streampool::insight::oom_json(figures, streampool::insight::explain_oom(figures));
  EXPECT_EQ(json.rfind("{\"request\":\"pool\",", 0), 0u) << json;
  EXPECT_EQ(json.back(), '}');
  for (const char* field : {"\"bytes\":2097152,", "\"pool\":\"0x1000\"", "\"stream\":\"0x2000\"", "\"device\":0,",
                            "\"limit\":4194304,", "\"charged\":4194304,", "\"failures\":3,", "\"driver\":null,",
                            "\"largest_free\":1048576,", "\"fragmentation\":0.5000,", "\"pending\":[]",
                            "\"largest_live\":[{\"address\":\"0x7000\",\"bytes\":1048576,\"pool\":\"0x1000\",\"call_site\":null}]",
                            "\"cause\":\"fragmentation\",", "\"explanation\":\"fragmentation: "}) {
    EXPECT_NE(json.find(field), std::string::npos) << field << " in " << json;
  }
}

TEST(OomJson, NoCapIsNullAndACallSiteIsEscaped) {
  OomFigures figures = request_of(4 * kMiB, 2 * kMiB);
  figures.largest_live.push_back({0x7000, 1 * kMiB, 0x1000, "a \"quoted\" site"});
  const std::string json = streampool::insight::oom_json(figures, streampool::insight::explain_oom(figures));
  EXPECT_NE(json.find("\"limit\":null,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"call_site\":\"a \\\"quoted\\\" site\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"cause\":\"pool_limit\""), std::string::npos) << json;
}

}  // namespace
