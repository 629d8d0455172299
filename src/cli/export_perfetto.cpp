// `streampool export --format perfetto`: the trace in the Chrome JSON trace event format
// (export.hpp), which ui.perfetto.dev and chrome://tracing open:
//   {"displayTimeUnit": "ns", "traceEvents": [event...]}
// with, for the recorded process (pid) and its threads (tid: the trace's thread numbers):
//   "M" metadata events naming the process and each thread;
//   "C" counter events, one series "used" and one "reserved" per pool ("pool 0x...");
//   "b"/"e" async events, one pair per allocation, category the stream's name; each stream has
//       lanes (the id "<stream>/<lane>") so that the slices of one id never overlap;
//   "i" instant events (process scope) for trims, failed allocations and the dependencies the
//       engine inserted between streams.
// Timestamps are microseconds since the trace started.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "commands.hpp"
#include "export.hpp"

namespace streampool::cli {

namespace {

using trace::Op;
using trace::Record;

constexpr std::int32_t kOutOfMemory = 2;

std::string micros(std::uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
  return text;
}

class PerfettoWriter final : public ReplayObserver {
 public:
  PerfettoWriter(int fd, std::uint32_t pid, bool oom_records)
      : fd_(fd), pid_(std::to_string(pid)), oom_records_(oom_records) {
    out_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    event("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid_ + ",\"args\":{\"name\":\"process " + pid_ +
          " (streampool trace)\"}}");
  }

  void allocated(const Record& record, std::uint64_t pool, std::uintptr_t address) override {
    thread(record.thread);
    std::set<std::uint32_t>& busy = lanes_[record.stream];
    std::uint32_t lane = 0;
    while (busy.count(lane) != 0) ++lane;
    busy.insert(lane);
    live_[address] = {record, pool, lane};
    event("{\"name\":\"" + human_bytes(static_cast<double>(record.size)) + "\",\"cat\":\"" + stream_label(record.stream) +
          "\",\"ph\":\"b\",\"id\":\"" + slice_id(record.stream, lane) + "\",\"ts\":" + micros(record.time_ns) +
          ",\"pid\":" + pid_ + ",\"tid\":" + std::to_string(record.thread) + ",\"args\":{\"size\":" +
          std::to_string(record.size) + ",\"pool\":\"" + hex_of(pool) + "\",\"address\":\"" + hex_of(record.address) +
          "\",\"replay_address\":\"" + hex_of(address) + "\"}}");
  }
  void freed(const Record& record, const Record&, std::uintptr_t address) override {
    auto found = live_.find(address);
    if (found == live_.end()) return;
    end_slice(found->second, record.time_ns, record.stream, record.thread);
    live_.erase(found);
  }
  void refused(const Record& record, std::uint64_t pool) override {
    instant(record, "allocation of " + human_bytes(static_cast<double>(record.size)) + " refused by pool " + hex_of(pool),
            "\"size\":" + std::to_string(record.size) + ",\"stream\":\"" + hex_of(record.stream) + "\"");
  }
  void dependency_inserted(std::uint64_t waiter, std::uint64_t marker_stream) override {
    pending_dependencies_.emplace_back(waiter, marker_stream);
  }
  void pool_state(std::uint64_t time_ns, std::uint64_t pool, std::uint64_t reserved, std::uint64_t used) override {
    auto& last = counters_[pool];
    if (last.first == reserved && last.second == used && seen_.count(pool) != 0) return;
    seen_.insert(pool);
    last = {reserved, used};
    event("{\"name\":\"pool " + hex_of(pool) + "\",\"ph\":\"C\",\"ts\":" + micros(time_ns) + ",\"pid\":" + pid_ +
          ",\"args\":{\"used\":" + std::to_string(used) + ",\"reserved\":" + std::to_string(reserved) + "}}");
  }
  void applied(const Record& record) override {
    const auto op = static_cast<Op>(record.op);
    for (const auto& [waiter, marker_stream] : pending_dependencies_) {
      instant(record, "inserted dependency", "\"waiter\":\"" + engine_stream(waiter) + "\",\"on\":\"" +
                                                  engine_stream(marker_stream) + "\"");
    }
    pending_dependencies_.clear();
    if (op == Op::out_of_memory) {
      const std::string cause(trace::oom_cause_name(record.flags));
      instant(record, "out of memory: " + human_bytes(static_cast<double>(record.size)) + " (" + cause + ")",
              "\"size\":" + std::to_string(record.size) + ",\"stream\":\"" + hex_of(record.stream) + "\",\"pool\":\"" +
                  hex_of(record.pool) + "\",\"cause\":\"" + cause + "\",\"device_free\":" + std::to_string(record.address));
      return;
    }
    if (record.result != 0) {
      if ((op == Op::alloc || op == Op::alloc_from_pool) && record.result == kOutOfMemory && !oom_records_) {
        instant(record, "out of memory: " + human_bytes(static_cast<double>(record.size)),
                "\"size\":" + std::to_string(record.size) + ",\"stream\":\"" + hex_of(record.stream) + "\",\"pool\":\"" +
                    hex_of(record.pool) + "\"");
      }
      return;
    }
    if (op == Op::pool_trim) {
      instant(record, "trim pool " + hex_of(record.pool),
              "\"pool\":\"" + hex_of(record.pool) + "\",\"keep\":" + std::to_string(record.size));
    } else if (op == Op::pool_destroy) {
      for (auto it = live_.begin(); it != live_.end();) {
        if (it->second.pool != record.pool) {
          ++it;
          continue;
        }
        end_slice(it->second, record.time_ns, it->second.allocation.stream, record.thread);
        it = live_.erase(it);
      }
    }
  }
  bool finish(std::uint64_t end_ns) {
    for (auto& [address, live] : live_) end_slice(live, end_ns, live.allocation.stream, live.allocation.thread);
    live_.clear();
    out_ += "\n]}\n";
    return flush(true) && !failed_;
  }

 private:
  struct Live {
    Record allocation;
    std::uint64_t pool;
    std::uint32_t lane;
  };

  static std::string slice_id(std::uint64_t stream, std::uint32_t lane) {
    return hex_of(stream) + "/" + std::to_string(lane);
  }
  // Engine keys are recorded handles but for the default streams (replay.cpp's key_of).
  static std::string engine_stream(std::uint64_t key) {
    if (key == 1) return "legacy default stream";
    if (key >= 0x1000 && key < 0x1000 + (std::uint64_t{1} << 32)) return "per-thread default stream of thread " + std::to_string(key - 0x1000);
    return hex_of(key);
  }

  void end_slice(const Live& live, std::uint64_t time_ns, std::uint64_t free_stream, std::uint32_t thread_number) {
    lanes_[live.allocation.stream].erase(live.lane);
    event("{\"name\":\"" + human_bytes(static_cast<double>(live.allocation.size)) + "\",\"cat\":\"" +
          stream_label(live.allocation.stream) + "\",\"ph\":\"e\",\"id\":\"" + slice_id(live.allocation.stream, live.lane) +
          "\",\"ts\":" + micros(std::max(time_ns, live.allocation.time_ns)) + ",\"pid\":" + pid_ + ",\"tid\":" +
          std::to_string(thread_number) + ",\"args\":{\"freed_on\":\"" + stream_label(free_stream) + "\"}}");
  }

  void instant(const Record& record, const std::string& name, const std::string& args) {
    thread(record.thread);
    event("{\"name\":\"" + name + "\",\"ph\":\"i\",\"s\":\"p\",\"ts\":" + micros(record.time_ns) + ",\"pid\":" + pid_ +
          ",\"tid\":" + std::to_string(record.thread) + ",\"args\":{" + args + "}}");
  }

  void thread(std::uint32_t number) {
    if (!threads_.insert(number).second) return;
    event("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid_ + ",\"tid\":" + std::to_string(number) +
          ",\"args\":{\"name\":\"thread " + std::to_string(number) + "\"}}");
  }

  void event(const std::string& json) {
    if (!first_) out_ += ",\n";
    first_ = false;
    out_ += json;
    flush(false);
  }

  bool flush(bool all) {
    if (!all && out_.size() < (std::size_t{1} << 20)) return true;
    if (!write_all(fd_, out_.data(), out_.size())) failed_ = true;
    out_.clear();
    return !failed_;
  }

  int fd_;
  std::string pid_;
  std::string out_;
  bool first_ = true;
  bool failed_ = false;
  std::map<std::uint64_t, std::set<std::uint32_t>> lanes_;  // stream -> lanes in use
  std::unordered_map<std::uintptr_t, Live> live_;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> counters_;  // pool -> reserved, used
  std::set<std::uint64_t> seen_;
  std::set<std::uint32_t> threads_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> pending_dependencies_;
  bool oom_records_ = false;  // failures are marked by the trace's out_of_memory records
};

}  // namespace

bool export_perfetto(const std::string& path, const trace::Trace& trace, const WhatIf& what_if, int fd,
                     std::string* error) {
  PerfettoWriter writer(fd, trace.header.pid, records_out_of_memory(trace));
  const ReplayResult result = replay(trace, what_if, false, terminal_progress("export", trace.records.size()), &writer);
  if (result.unrepresentable) {
    *error = unrepresentable_message(path, trace, what_if, result);
    return false;
  }
  if (!writer.finish(result.duration_ns)) {
    *error = "the output could not be written";
    return false;
  }
  return true;
}

}  // namespace streampool::cli
