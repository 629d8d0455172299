// `streampool report stats.json`: a STREAMPOOL_STATS report as a short table.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "trace/files.hpp"

namespace streampool::cli {

std::string human_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

double fragmentation(double peak_used, double peak_reserved) {
  return peak_reserved > 0 ? 1.0 - peak_used / peak_reserved : 0.0;
}

bool is_help(const std::string& arg) { return arg == "--help" || arg == "-h"; }

bool any_help(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (is_help(arg)) return true;
  }
  return false;
}

void say_not_understood(const char* command, const std::string& arg) {
  std::cerr << "streampool " << command << ": " << (!arg.empty() && arg[0] == '-' ? "unknown option '" : "unexpected argument '")
            << arg << "'\n";
}

bool read_report(const std::string& path, Json* report, std::string* error) {
  std::string text;
  if (!trace::read_regular_file(path, kMaxJsonBytes, &text, error)) return false;
  std::string why;
  if (!parse_json(text, report, &why)) {
    *error = path + ": " + why;
    return false;
  }
  if ((*report)["streampool"].kind != Json::Kind::object) {
    *error = path + ": not a streampool stats report (no \"streampool\" object at offset 0)";
    return false;
  }
  return true;
}

bool parse_size(const std::string& text, std::uint64_t* bytes) {
  // Digits only: strtoull would take "-1" as 2^64-1, and saturates where a number is too long.
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE) return false;
  std::uint64_t scale = 1;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "KiB" || suffix == "k") scale = 1ULL << 10;
  else if (suffix == "M" || suffix == "MiB") scale = 1ULL << 20;
  else if (suffix == "G" || suffix == "GiB") scale = 1ULL << 30;
  else if (!suffix.empty()) return false;
  if (value > UINT64_MAX / scale) return false;
  *bytes = static_cast<std::uint64_t>(value) * scale;
  return true;
}

std::string render_report(const Json& report, const std::string& title) {
  std::ostringstream out;
  const Json& head = report["streampool"];
  out << "streampool " << head["version"].text << ": " << title;
  if (head["disabled"].boolean) out << " (STREAMPOOL_DISABLE: everything passed through)";
  out << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-16s %-12s %-8s %14s %14s %14s\n", "pool", "kind", "location", "peak reserved",
                "peak used", "fragmentation");
  out << line;
  for (const Json& pool : report["pools"].items) {
    const double reserved_high = pool["reserved_high"].number_or(0);
    const double used_high = pool["used_high"].number_or(0);
    // Clamped: a number beyond int (a damaged report) is not the cast's undefined behaviour.
    const double location_id = std::clamp(pool["location_id"].number_or(0), -1e9, 1e9);
    std::string location = (pool["location_type"].number_or(0) == 1 ? "dev " : "loc ") +
                           std::to_string(static_cast<int>(location_id == location_id ? location_id : 0));
    std::string kind = pool["kind"].text + (pool["default"].boolean ? "*" : "");
    std::snprintf(line, sizeof line, "  %-16s %-12s %-8s %14s %14s %13.1f%%\n", pool["handle"].text.c_str(), kind.c_str(),
                  location.c_str(), human_bytes(reserved_high).c_str(), human_bytes(used_high).c_str(),
                  100.0 * fragmentation(used_high, reserved_high));
    out << line;
  }
  if (report["pools"].items.empty()) out << "  (no pool was used)\n";
  // The process cap (STREAMPOOL_LIMIT), per device: shown where a limit is set.
  for (const Json& device : report["devices"].items) {
    if (device["limit"].kind != Json::Kind::number) continue;
    const double id = std::clamp(device["device"].number_or(0), -1e9, 1e9);
    std::snprintf(line, sizeof line,
                  "  cap dev %d: %s, held %s (peak %s): pools %s in use + %s cached, driver allocations %s, arrays %s, graph memory %s",
                  static_cast<int>(id == id ? id : 0), human_bytes(device["limit"].number_or(0)).c_str(),
                  human_bytes(device["charged"].number_or(0)).c_str(), human_bytes(device["peak"].number_or(0)).c_str(),
                  human_bytes(device["pools_in_use"].number_or(0)).c_str(),
                  human_bytes(device["pools_cached"].number_or(0)).c_str(),
                  human_bytes(device["forwarded"].number_or(0)).c_str(),
                  human_bytes(device["arrays"].number_or(0)).c_str(),
                  human_bytes(device["graph"].number_or(0)).c_str());
    out << line;
    // STREAMPOOL_SERVE_MALLOC: of the pools' memory in use, what cuMemAlloc was served.
    if (const double malloc_served = device["served_malloc"].number_or(0); malloc_served > 0) {
      out << "; cuMemAlloc served from the pools: " << human_bytes(malloc_served);
    }
    const double uncounted = device["estimated_uncounted"].number_or(0);
    if (uncounted > 0) out << "; not counted, estimated: " << human_bytes(uncounted);
    out << "\n";
  }
  const Json& served = report["served"];
  const double allocations = served["allocations"].number_or(0);
  const double frees = served["frees"].number_or(0);
  const double timed_calls = served["timed_calls"].number_or(0);
  const double time_ns = served["time_in_allocator_ns"].number_or(0);
  std::snprintf(line, sizeof line, "  calls served: %.0f allocations, %.0f frees", allocations, frees);
  out << line;
  if (timed_calls > 0) {
    std::snprintf(line, sizeof line, "; time in the allocator: %.3f ms (%.0f ns per call over %.0f calls)",
                  time_ns / 1e6, time_ns / timed_calls, timed_calls);
    out << line;
  }
  // Allocations that failed for lack of memory (the first one's report went to stderr).
  if (const double failures = served["out_of_memory"].number_or(0); failures > 0) {
    std::snprintf(line, sizeof line, "\n  out-of-memory failures: %.0f (the first one's report is on stderr, the last "
                  "one's from streampool_oom_report)", failures);
    out << line;
  }
  out << "\n  (* a default pool; fragmentation: 1 - peak used / peak reserved";
  if (timed_calls > 0) {
    // The figure is the whole call as the program saw it: dominated by the calls that grew or
    // shrank the pool, not the tens of nanoseconds of a reuse.
    out << ";\n   time per call: each allocator call from entry to return, with the driver calls it made\n"
           "   (mapping memory as a pool grows, giving it back, markers for reuse across streams);\n"
           "   a reuse on the freeing stream alone takes tens of nanoseconds";
  }
  out << ")\n";
  if (!served["trace"].text.empty()) out << "  trace: " << served["trace"].text << "\n";
  return out.str();
}

int report_command(const std::vector<std::string>& args) {
  const char* usage = "usage: streampool report STATS.json...   a STREAMPOOL_STATS report as a table\n";
  for (const std::string& arg : args) {
    if (is_help(arg)) {
      std::cout << usage;
      return 0;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      say_not_understood("report", arg);
      std::cerr << usage;
      return 2;
    }
  }
  if (args.empty()) {
    std::cerr << usage;
    return 2;
  }
  int status = 0;
  for (const std::string& path : args) {
    Json report;
    std::string error;
    if (!read_report(path, &report, &error)) {
      std::cerr << "streampool: " << error << "\n";
      status = 1;
      continue;
    }
    std::cout << render_report(report, path);
  }
  return status;
}

}  // namespace streampool::cli
