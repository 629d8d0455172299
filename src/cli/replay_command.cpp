// `streampool replay TRACE [what-if options]`: the trace through the engine on the CPU, and what
// it would have reserved.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <utility>

#include "commands.hpp"
#include "core/sizes.hpp"
#include "replay.hpp"

namespace streampool::cli {

namespace {

void usage(std::ostream& out) {
  out << "usage: streampool replay TRACE [--release-threshold BYTES] [--reuse-flags FLAGS] [--granule BYTES]\n"
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

std::string reuse_names(int flags) {
  if (flags == 0) return "none";
  std::string names;
  for (const auto& [bit, name] : {std::pair{1, "follow"}, std::pair{2, "opportunistic"}, std::pair{4, "internal"}}) {
    if ((flags & bit) == 0) continue;
    if (!names.empty()) names += ',';
    names += name;
  }
  return names;
}

// The options the replay ran with, as a reader must know them to read its figures: each asked
// one or "as recorded", and the pool cap as the engine applies it (rounded up to the growth
// chunk, as the driver does; mapped in whole granules).
struct Restated {
  std::string text;
  std::string json;
};
Restated restate(const WhatIf& what_if) {
  Restated out;
  char piece[256];
  std::string json = "{";
  out.text = "  options: release threshold ";
  if (what_if.release_threshold) {
    out.text += human_bytes(static_cast<double>(*what_if.release_threshold)) + " (every pool)";
    json += "\"release_threshold\":" + std::to_string(*what_if.release_threshold);
  } else {
    out.text += "as recorded";
    json += "\"release_threshold\":null";
  }
  out.text += ", reuse flags ";
  json += ",\"reuse_flags\":";
  if (what_if.reuse_flags) {
    const std::string names = reuse_names(*what_if.reuse_flags);
    out.text += names;
    out.text += " (every pool)";
    json += '"';
    json += names;
    json += '"';
  } else {
    out.text += "as recorded";
    json += "null";
  }
  out.text += ", granule " + human_bytes(static_cast<double>(what_if.granule_bytes));
  json += ",\"granule\":" + std::to_string(what_if.granule_bytes);
  out.text += ", max pool size ";
  if (what_if.max_pool_size) {
    const std::uint64_t asked = *what_if.max_pool_size;
    // Sizes within a chunk of 2^64 are left as asked here (they limit nothing either way).
    const std::uint64_t applied = asked > UINT64_MAX - core::kGrowthChunkBytes
                                      ? asked
                                      : core::round_up(asked, core::kGrowthChunkBytes);
    const std::uint64_t mappable = core::round_down(applied, what_if.granule_bytes);
    out.text += human_bytes(static_cast<double>(applied)) + " (";
    if (applied != asked) {
      std::snprintf(piece, sizeof piece, "%s asked, rounded up to the %s growth chunk; ",
                    human_bytes(static_cast<double>(asked)).c_str(),
                    human_bytes(static_cast<double>(core::kGrowthChunkBytes)).c_str());
      out.text += piece;
    }
    if (mappable != applied) out.text += human_bytes(static_cast<double>(mappable)) + " of it in whole granules; ";
    out.text += "pools with a smaller one keep theirs)";
    json += ",\"max_pool_size\":" + std::to_string(applied) + ",\"max_pool_size_asked\":" + std::to_string(asked) +
            ",\"max_pool_size_mappable\":" + std::to_string(mappable);
  } else {
    out.text += "as recorded";
    json += ",\"max_pool_size\":null";
  }
  out.text += "\n";
  out.json = json + "}";
  return out;
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
  if (any_help(rest)) {
    usage(std::cout);
    return 0;
  }
  for (const std::string& arg : rest) {
    if (arg == "--json") json = true;
    else if (path.empty() && !arg.empty() && arg[0] != '-') path = arg;
    else {
      say_not_understood("replay", arg);
      usage(std::cerr);
      return 2;
    }
  }
  if (path.empty()) {
    std::cerr << "streampool replay: no trace named\n";
    usage(std::cerr);
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
  const double all_fragmentation =
      fragmentation(static_cast<double>(result.peak_used), static_cast<double>(result.peak_reserved));
  const Restated options = restate(what_if);
  const double per_call = result.engine_calls > 0 ? result.replay_ns / static_cast<double>(result.engine_calls) : 0;
  if (json) {
    std::printf("{\"trace\":\"%s\",\"events\":%llu,\"peak_reserved\":%llu,\"peak_used\":%llu,"
                "\"used_at_peak_reserved\":%llu,\"fragmentation\":%.4f,\"replay_ns\":%.0f,\"engine_calls\":%llu,"
                "\"recorded_out_of_memory\":%llu,\"options\":%s,\"pools\":[",
                path.c_str(), static_cast<unsigned long long>(result.events),
                static_cast<unsigned long long>(result.peak_reserved), static_cast<unsigned long long>(result.peak_used),
                static_cast<unsigned long long>(result.used_at_peak_reserved), all_fragmentation, result.replay_ns,
                static_cast<unsigned long long>(result.engine_calls),
                static_cast<unsigned long long>(result.recorded_out_of_memory), options.json.c_str());
    for (std::size_t i = 0; i < result.pools.size(); ++i) {
      const PoolResult& pool = result.pools[i];
      std::printf("%s{\"handle\":\"%#llx\",\"peak_reserved\":%llu,\"peak_used\":%llu,\"allocations\":%llu,"
                  "\"failed_allocations\":%llu,\"fragmentation\":%.4f}",
                  i == 0 ? "" : ",", static_cast<unsigned long long>(pool.handle),
                  static_cast<unsigned long long>(pool.peak_reserved), static_cast<unsigned long long>(pool.peak_used),
                  static_cast<unsigned long long>(pool.allocations),
                  static_cast<unsigned long long>(pool.failed_allocations),
                  fragmentation(static_cast<double>(pool.peak_used), static_cast<double>(pool.peak_reserved)));
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("replay of %s: %llu events over %.3f s of the program\n", path.c_str(),
              static_cast<unsigned long long>(result.events), static_cast<double>(result.duration_ns) / 1e9);
  std::fputs(options.text.c_str(), stdout);
  std::printf("  %-18s %14s %14s %14s %12s %14s\n", "pool", "peak reserved", "peak used", "allocations", "refused",
              "fragmentation");
  for (const PoolResult& pool : result.pools) {
    std::printf("  %#-18llx %14s %14s %14llu %12llu %13.1f%%\n", static_cast<unsigned long long>(pool.handle),
                human_bytes(static_cast<double>(pool.peak_reserved)).c_str(),
                human_bytes(static_cast<double>(pool.peak_used)).c_str(),
                static_cast<unsigned long long>(pool.allocations),
                static_cast<unsigned long long>(pool.failed_allocations),
                100.0 * fragmentation(static_cast<double>(pool.peak_used), static_cast<double>(pool.peak_reserved)));
  }
  std::printf("  all pools: peak reserved %s, peak used %s, fragmentation %.1f%% (1 - peak used / peak reserved)\n",
              human_bytes(static_cast<double>(result.peak_reserved)).c_str(),
              human_bytes(static_cast<double>(result.peak_used)).c_str(), 100.0 * all_fragmentation);
  if (result.recorded_out_of_memory > 0) {
    const std::string cause(trace::oom_cause_name(result.first_out_of_memory_cause));
    std::printf("  out-of-memory failures in the program: %llu (the first explained as %s)\n",
                static_cast<unsigned long long>(result.recorded_out_of_memory), cause.c_str());
  }
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
