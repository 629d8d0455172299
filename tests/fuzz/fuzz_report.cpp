// libFuzzer harness: any bytes as a STREAMPOOL_STATS report (src/cli/json.cpp), and what parses
// through the report's table printer (render_report in src/cli/report.cpp), under ASan+UBSan.
//
// What it checks, beyond the sanitizers and the absence of crashes and stack exhaustion (a run of
// '[' or '{' stops at the nesting limit):
//   * a refused input has a one-line reason with an offset inside the input (or at its end);
//   * the table of a parsed input is text that starts with "streampool ".
// A failed check prints what it saw and aborts, which libFuzzer reports as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "commands.hpp"
#include "json.hpp"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_report: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  streampool::cli::Json report;
  std::string error;
  if (!streampool::cli::parse_json(text, &report, &error)) {
    const std::size_t at = error.rfind(" at offset ");
    if (error.find('\n') != std::string::npos) fail("a reason of more than one line", error);
    if (at != std::string::npos && std::strtoull(error.c_str() + at + 11, nullptr, 10) > size) {
      fail("an offset past the input", error);
    }
    if (at == std::string::npos && error != "trailing characters") fail("a reason without an offset", error);
    return 0;
  }
  const std::string table = streampool::cli::render_report(report, "input");
  if (table.rfind("streampool ", 0) != 0) fail("a table", table);
  return 0;
}
