// libFuzzer harness: any bytes as a trace file (src/trace/reader.cpp), then a bounded replay of
// what was read through the engine (src/cli/replay.cpp), under ASan+UBSan.
//
// What it checks, beyond the sanitizers and the absence of crashes, hangs and unbounded memory
// (run-fuzz.sh gives it -rss_limit_mb):
//   * a refused input has a one-line reason that names the file and an offset;
//   * a read trace has one file offset per record, inside the input, and its records are sorted
//     by time;
//   * the replay of its first records (at a 4 KiB or a 2 MiB granule, chosen by the header's
//     reserved word, and 2^16 granules in all) either finishes or stops at an unrepresentable
//     record it names;
//   * the exports of a representable replay (src/cli/export_*.cpp: PyTorch's snapshot and
//     Perfetto's JSON, written to /dev/null) succeed.
// A failed check prints what it saw and aborts, which libFuzzer reports as a crash.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "export.hpp"
#include "replay.hpp"
#include "trace/reader.hpp"

namespace {

// The replay stays fast whatever the input holds: the engine maps and unmaps granule by granule.
constexpr std::size_t kReplayedRecords = 2048;
constexpr std::uint64_t kReplayedGranules = 1u << 16;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_trace: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  streampool::trace::Trace trace;
  std::string error;
  if (!streampool::trace::parse_trace("input", bytes, &trace, &error)) {
    if (error.rfind("input: ", 0) != 0 || error.find(" at offset ") == std::string::npos ||
        error.find('\n') != std::string::npos) {
      fail("a refusal without the file and the offset", error);
    }
    return 0;
  }
  if (trace.offsets.size() != trace.records.size()) fail("offsets", std::to_string(trace.offsets.size()));
  for (std::size_t i = 0; i < trace.records.size(); ++i) {
    if (trace.offsets[i] >= size) fail("an offset past the input", std::to_string(trace.offsets[i]));
    if (i > 0 && trace.records[i - 1].time_ns > trace.records[i].time_ns) fail("unsorted", std::to_string(i));
  }
  if (trace.records.size() > kReplayedRecords) {
    trace.records.resize(kReplayedRecords);
    trace.offsets.resize(kReplayedRecords);
  }
  streampool::cli::WhatIf what_if;
  what_if.granule_bytes = (trace.header.reserved0 & 1) != 0 ? 4096 : std::size_t{2} << 20;
  what_if.max_granules = kReplayedGranules;
  const streampool::cli::ReplayResult result = streampool::cli::replay(trace, what_if, true, {});
  if (result.unrepresentable) {
    const std::string message = streampool::cli::unrepresentable_message("input", trace, what_if, result);
    if (message.find(" at offset ") == std::string::npos) fail("unrepresentable without an offset", message);
  } else if (result.events > trace.records.size()) {  // calls that failed in the program are no events
    fail("events", std::to_string(result.events));
  }
  if (!result.unrepresentable) {
    const int sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (sink < 0) fail("/dev/null", "cannot be opened");
    if (!streampool::cli::export_torch_snapshot("input", trace, what_if, sink, &error)) fail("torch snapshot", error);
    if (!streampool::cli::export_perfetto("input", trace, what_if, sink, &error)) fail("perfetto", error);
    close(sink);
  }
  return 0;
}
