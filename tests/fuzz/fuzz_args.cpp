// libFuzzer harness: any bytes as the command's arguments (split at NUL bytes) through its
// parsers: `run`'s options, replay's and plot's what-if options, sizes. Nothing is run or read.
//
// What it checks, beyond the sanitizers and the absence of crashes:
//   * `run`'s options, when accepted, leave the program inside the arguments;
//   * a size that parses is the digits times the suffix, without overflow (a larger text never
//     parses as a smaller size: "-1" and 2^64 are refused, not wrapped);
//   * a granule that the what-if options accept is a power of two from 4 KiB to 1 GiB.
// A failed check prints what it saw and aborts, which libFuzzer reports as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "replay.hpp"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_args: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::cerr.setstate(std::ios::badbit);  // the parsers' usage messages, once per input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.emplace_back();
    } else {
      args.back() += static_cast<char>(data[i]);
    }
  }
  streampool::cli::RunOptions options;
  if (streampool::cli::parse_run_options(args, &options) && options.program >= args.size()) {
    fail("a program past the arguments", std::to_string(options.program));
  }
  for (const std::string& arg : args) {
    std::uint64_t bytes = 0;
    if (!streampool::cli::parse_size(arg, &bytes)) continue;
    const std::uint64_t digits = std::strtoull(arg.c_str(), nullptr, 10);
    if (bytes < digits) fail("a size that wrapped", arg + " -> " + std::to_string(bytes));
  }
  streampool::cli::WhatIf what_if;
  std::vector<std::string> rest;
  if (streampool::cli::parse_what_if(args, &what_if, &rest)) {
    const std::size_t granule = what_if.granule_bytes;
    if (granule < 4096 || granule > (std::size_t{1} << 30) || (granule & (granule - 1)) != 0) {
      fail("a granule", std::to_string(granule));
    }
  }
  return 0;
}
