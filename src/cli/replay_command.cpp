// `streampool replay TRACE [what-if options]`: the trace through the engine on the CPU, and what
// it would have reserved.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "replay.hpp"

namespace streampool::cli {

namespace {

void usage() {
  std::cerr << "usage: streampool replay TRACE [--release-threshold BYTES] [--reuse-flags FLAGS] [--granule BYTES]\n"
               "                         [--max-pool-size BYTES] [--json]\n"
               "  BYTES: a number with an optional K, M or G suffix (powers of 1024)\n"
               "  FLAGS: 'none' or a comma list of follow (event dependencies), opportunistic, internal\n"
               "         (internal dependencies); every pool gets exactly these\n";
}

bool parse_reuse(const std::string& text, int* flags) {
  *flags = 0;
  if (text == "none") return true;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    if (item == "follow") *flags |= 1;
    else if (item == "opportunistic") *flags |= 2;
    else if (item == "internal") *flags |= 4;
    else return false;
  }
  return true;
}

}  // namespace

bool parse_what_if(const std::vector<std::string>& args, WhatIf* what_if, std::vector<std::string>* rest) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    std::uint64_t bytes = 0;
    if (arg == "--release-threshold" && has_value && parse_size(args[i + 1], &bytes)) {
      what_if->release_threshold = bytes;
    } else if (arg == "--max-pool-size" && has_value && parse_size(args[i + 1], &bytes)) {
      what_if->max_pool_size = bytes;
    } else if (arg == "--granule" && has_value && parse_size(args[i + 1], &bytes) && bytes >= 4096 &&
               bytes <= (std::uint64_t{1} << 30) && (bytes & (bytes - 1)) == 0) {
      what_if->granule_bytes = bytes;
    } else if (arg == "--reuse-flags" && has_value) {
      int flags = 0;
      if (!parse_reuse(args[i + 1], &flags)) {
        std::cerr << "streampool: bad --reuse-flags " << args[i + 1] << "\n";
        return false;
      }
      what_if->reuse_flags = flags;
    } else if (arg == "--release-threshold" || arg == "--max-pool-size" || arg == "--granule" ||
               arg == "--reuse-flags") {
      std::cerr << "streampool: bad or missing value for " << arg
                << (arg == "--granule" ? " (a power of two from 4096 to 1G)" : "") << "\n";
      return false;
    } else {
      rest->push_back(arg);
      continue;
    }
    ++i;
  }
  return true;
}

// Progress on a terminal for long runs: a percentage on stderr, rewritten in place.
std::function<void(double)> terminal_progress(const char* what, std::size_t records) {
  if (records < 200000 || isatty(STDERR_FILENO) == 0) return {};
  return [what, last = -1](double fraction) mutable {
    const int percent = static_cast<int>(fraction * 100.0);
    if (percent == last) return;
    last = percent;
    std::fprintf(stderr, "\r%s: %3d%%%s", what, percent, percent == 100 ? "\n" : "");
    std::fflush(stderr);
  };
}

int replay_command(const std::vector<std::string>& args) {
  WhatIf what_if;
  std::vector<std::string> rest;
  if (!parse_what_if(args, &what_if, &rest)) return 2;
  bool json = false;
  std::string path;
  for (const std::string& arg : rest) {
    if (arg == "--json") json = true;
    else if (path.empty() && !arg.empty() && arg[0] != '-') path = arg;
    else {
      usage();
      return 2;
    }
  }
  if (path.empty()) {
    usage();
    return 2;
  }
  trace::Trace recorded;
  std::string error;
  if (!trace::read_trace(path, &recorded, &error)) {
    std::cerr << "streampool: " << error << "\n";
    return 1;
  }
  const ReplayResult result =
      replay(recorded, what_if, false, terminal_progress("replay", recorded.records.size()));
  if (result.unrepresentable) {
    std::cerr << "streampool: " << unrepresentable_message(path, recorded, what_if, result) << "\n";
    return 1;
  }
  const double fragmentation =
      result.peak_reserved > 0
          ? 1.0 - static_cast<double>(result.used_at_peak_reserved) / static_cast<double>(result.peak_reserved)
          : 0.0;
  const double per_call = result.engine_calls > 0 ? result.replay_ns / static_cast<double>(result.engine_calls) : 0;
  if (json) {
    std::printf("{\"trace\":\"%s\",\"events\":%llu,\"peak_reserved\":%llu,\"peak_used\":%llu,"
                "\"used_at_peak_reserved\":%llu,\"fragmentation\":%.4f,\"replay_ns\":%.0f,\"engine_calls\":%llu,"
                "\"pools\":[",
                path.c_str(), static_cast<unsigned long long>(result.events),
                static_cast<unsigned long long>(result.peak_reserved), static_cast<unsigned long long>(result.peak_used),
                static_cast<unsigned long long>(result.used_at_peak_reserved), fragmentation, result.replay_ns,
                static_cast<unsigned long long>(result.engine_calls));
    for (std::size_t i = 0; i < result.pools.size(); ++i) {
      const PoolResult& pool = result.pools[i];
      std::printf("%s{\"handle\":\"%#llx\",\"peak_reserved\":%llu,\"peak_used\":%llu,\"allocations\":%llu,"
                  "\"failed_allocations\":%llu}",
                  i == 0 ? "" : ",", static_cast<unsigned long long>(pool.handle),
                  static_cast<unsigned long long>(pool.peak_reserved), static_cast<unsigned long long>(pool.peak_used),
                  static_cast<unsigned long long>(pool.allocations),
                  static_cast<unsigned long long>(pool.failed_allocations));
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("replay of %s: %llu events over %.3f s of the program\n", path.c_str(),
              static_cast<unsigned long long>(result.events), static_cast<double>(result.duration_ns) / 1e9);
  std::printf("  %-18s %14s %14s %14s %12s\n", "pool", "peak reserved", "peak used", "allocations", "refused");
  for (const PoolResult& pool : result.pools) {
    std::printf("  %#-18llx %14s %14s %14llu %12llu\n", static_cast<unsigned long long>(pool.handle),
                human_bytes(static_cast<double>(pool.peak_reserved)).c_str(),
                human_bytes(static_cast<double>(pool.peak_used)).c_str(),
                static_cast<unsigned long long>(pool.allocations),
                static_cast<unsigned long long>(pool.failed_allocations));
  }
  std::printf("  all pools: peak reserved %s, peak used %s, fragmentation at the peak %.1f%%\n",
              human_bytes(static_cast<double>(result.peak_reserved)).c_str(),
              human_bytes(static_cast<double>(result.peak_used)).c_str(), 100.0 * fragmentation);
  std::printf("  time in the engine: %.3f ms (%.0f ns per call)", result.replay_ns / 1e6, per_call);
  if (result.recorded_allocator_calls > 0 && result.recorded_allocator_ns > 0) {  // STREAMPOOL_TIMING was on
    std::printf("; recorded in the program: %.3f ms (%.0f ns per alloc/free)",
                static_cast<double>(result.recorded_allocator_ns) / 1e6,
                static_cast<double>(result.recorded_allocator_ns) / static_cast<double>(result.recorded_allocator_calls));
  }
  std::printf("\n");
  return 0;
}

}  // namespace streampool::cli
