// `streampool export --format torch-snapshot`: the trace as PyTorch's memory snapshot
// (export.hpp). The structure is the one torch.cuda.memory._snapshot() returns:
//   {"segments": [segment...], "device_traces": [[entry...] per device]}
//   segment: device, address, total_size, allocated_size, active_size, requested_size, stream,
//            segment_type, is_expandable, frames, blocks: [block...] tiling the segment
//   block:   address, size, requested_size, state ("active_allocated" or "inactive"), frames
//   entry:   action, addr, size, stream, time_us, frames (and device_free for "oom")
//   frame:   filename, line, name
// PyTorch's viewer rebuilds every earlier state by undoing the entries from the final segments
// back, so the two must agree: each entry is emitted in the order the engine acted (memory
// mapped before the allocation it serves, unmapped after the free that emptied it) and the
// final segments are exactly the ranges still mapped at the end.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "commands.hpp"
#include "export.hpp"
#include "pickle.hpp"

namespace streampool::cli {

namespace {

using trace::Op;
using trace::Record;

constexpr int kHost = -1;  // pools not on a device: after the last device in device_traces
constexpr std::int32_t kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY

enum class Action : std::uint8_t { alloc, free_requested, free_completed, segment_map, segment_unmap, oom };

const char* action_name(Action action) {
  switch (action) {
    case Action::alloc: return "alloc";
    case Action::free_requested: return "free_requested";
    case Action::free_completed: return "free_completed";
    case Action::segment_map: return "segment_map";
    case Action::segment_unmap: return "segment_unmap";
    case Action::oom: return "oom";
  }
  return "";
}

struct Block {
  std::uint64_t pool = 0;
  std::uint64_t size = 0;
  Record allocation{};  // as recorded: stream, size requested, the program's address, thread
};

struct Entry {
  Action action;
  int device;
  std::uint64_t address;   // the replay's; for an oom the device's free memory when recorded (else 0)
  std::uint64_t size;
  std::uint64_t stream;    // as recorded (segments: 0, a pool serves every stream)
  std::uint64_t time_us;
  Record allocation;       // the allocation an alloc/free/oom entry is about (op 0 for segments)
};

class SnapshotBuilder final : public ReplayObserver {
 public:
  SnapshotBuilder(std::uint64_t start_unix_ns, bool oom_records)
      : start_us_(start_unix_ns / 1000), oom_records_(oom_records) {}

  void mapped(std::uint64_t pool, std::uintptr_t address, std::size_t bytes) override {
    if (ended_) return;
    pending_.push_back({Action::segment_map, pool, address, bytes});
    add_range(pool, address, bytes);
  }
  void unmapped(std::uint64_t pool, std::uintptr_t address, std::size_t bytes) override {
    if (ended_) return;
    pending_.push_back({Action::segment_unmap, pool, address, bytes});
    remove_range(pool, address, bytes);
  }
  void allocated(const Record& record, std::uint64_t pool, std::uintptr_t address) override {
    flush(record);
    const std::uint64_t size = block_bytes(record.size);
    live_[address] = {pool, size, record};
    entries_.push_back({Action::alloc, device_of(pool), address, size, record.stream, time_of(record), record});
  }
  void refused(const Record& record, std::uint64_t pool) override { oom(record, pool, 0); }
  void freed(const Record& record, const Record& allocation, std::uintptr_t address) override {
    auto found = live_.find(address);
    if (found == live_.end()) return;
    const Block block = found->second;
    live_.erase(found);
    for (Action action : {Action::free_requested, Action::free_completed}) {
      entries_.push_back({action, device_of(block.pool), address, block.size, record.stream, time_of(record), allocation});
    }
  }
  void applied(const Record& record) override {
    const auto op = static_cast<Op>(record.op);
    if (op == Op::out_of_memory) {
      oom(record, record.pool, record.address);  // the address field: the device's free memory then
      return;
    }
    if (record.result != 0) {
      if ((op == Op::alloc || op == Op::alloc_from_pool) && record.result == kOutOfMemory && !oom_records_) {
        oom(record, record.pool, 0);
      }
      return;
    }
    if (op == Op::pool_create) {
      const std::uint64_t location_type = record.address >> 32;
      device_[record.pool] = location_type == 1 ? static_cast<int>(record.address & 0xffff) : kHost;
    } else if (op == Op::pool_destroy) {
      // The engine gave the pool's memory back: its blocks went with it.
      for (auto it = live_.begin(); it != live_.end();) {
        if (it->second.pool != record.pool) {
          ++it;
          continue;
        }
        entries_.push_back({Action::free_completed, device_of(record.pool), it->first, it->second.size,
                            it->second.allocation.stream, time_of(record), it->second.allocation});
        it = live_.erase(it);
      }
    }
    flush(record);
  }

  // The replay's own teardown unmaps what the program still held: the snapshot ends before it.
  void ended() override { ended_ = true; }

  void write(PickleWriter& out) const {
    int devices = 1;
    for (const auto& [pool, device] : device_) devices = std::max(devices, device + 1);
    const bool host = std::any_of(device_.begin(), device_.end(), [](const auto& p) { return p.second == kHost; });
    const int host_index = devices;
    if (host) ++devices;
    const auto index = [&](int device) { return device == kHost ? host_index : device; };

    out.begin_dict();
    out.key("segments");
    out.begin_list();
    for (const auto& [pool, ranges] : mapped_) {
      for (const auto& [address, bytes] : ranges) write_segment(out, pool, index(device_of(pool)), address, bytes);
    }
    out.end();
    out.key("device_traces");
    out.begin_list();
    for (int device = 0; device < devices; ++device) {
      out.begin_list();
      for (const Entry& entry : entries_) {
        if (index(entry.device) == device) write_entry(out, entry);
      }
      out.end();
    }
    out.end();
    out.end();
  }

 private:
  struct Backing {
    Action action;
    std::uint64_t pool;
    std::uintptr_t address;
    std::size_t bytes;
  };

  int device_of(std::uint64_t pool) const {
    auto found = device_.find(pool);
    return found == device_.end() ? 0 : found->second;  // a default pool: the one device of most traces
  }
  std::uint64_t time_of(const Record& record) const { return start_us_ + record.time_ns / 1000; }

  void oom(const Record& record, std::uint64_t pool, std::uint64_t device_free) {
    flush(record);
    entries_.push_back({Action::oom, device_of(pool), device_free, record.size, record.stream, time_of(record), record});
  }

  // Map and unmap calls wait for the record that caused them (allocated(), applied()).
  void flush(const Record& record) {
    for (const Backing& backing : pending_) {
      entries_.push_back({backing.action, device_of(backing.pool), backing.address, backing.bytes, 0, time_of(record), Record{}});
    }
    pending_.clear();
  }

  // Each pool's mapped memory as maximal contiguous ranges (address -> bytes).
  void add_range(std::uint64_t pool, std::uint64_t address, std::uint64_t bytes) {
    auto& ranges = mapped_[pool];
    std::uint64_t begin = address;
    std::uint64_t end = address + bytes;
    auto next = ranges.lower_bound(begin);
    if (next != ranges.begin()) {
      auto before = std::prev(next);
      if (before->first + before->second >= begin) {
        begin = before->first;
        end = std::max(end, before->first + before->second);
        next = ranges.erase(before);
      }
    }
    while (next != ranges.end() && next->first <= end) {
      end = std::max(end, next->first + next->second);
      next = ranges.erase(next);
    }
    ranges[begin] = end - begin;
  }
  void remove_range(std::uint64_t pool, std::uint64_t address, std::uint64_t bytes) {
    auto& ranges = mapped_[pool];
    const std::uint64_t end = address + bytes;
    auto it = ranges.upper_bound(address);
    if (it != ranges.begin()) --it;
    while (it != ranges.end() && it->first < end) {
      const std::uint64_t range_begin = it->first;
      const std::uint64_t range_end = it->first + it->second;
      if (range_end <= address) {
        ++it;
        continue;
      }
      it = ranges.erase(it);
      if (range_begin < address) ranges[range_begin] = address - range_begin;
      if (range_end > end) {
        ranges[end] = range_end - end;
        break;
      }
    }
    if (ranges.empty()) mapped_.erase(pool);
  }

  static void write_frames(PickleWriter& out, const Record& allocation) {
    out.begin_list();
    if (allocation.op != 0) {
      // No call sites are recorded: the frame says what the program asked for, and where it got it.
      out.begin_dict();
      out.key("filename");
      out.string("streampool");
      out.key("line");
      out.integer(0);
      out.key("name");
      out.string(std::string(allocation.op == static_cast<std::uint16_t>(Op::alloc_from_pool) ? "cuMemAllocFromPoolAsync"
                                                                                               : "cuMemAllocAsync") +
                 " of " + std::to_string(allocation.size) + " bytes on " + stream_label(allocation.stream) +
                 " from pool " + hex_of(allocation.pool) + " by thread " + std::to_string(allocation.thread) +
                 (allocation.address != 0 ? ", at " + hex_of(allocation.address) + " in the program" : ""));
      out.end();
    }
    out.end();
  }

  void write_segment(PickleWriter& out, std::uint64_t pool, int device, std::uint64_t address, std::uint64_t bytes) const {
    std::vector<std::pair<std::uint64_t, const Block*>> blocks;
    for (auto it = live_.lower_bound(address); it != live_.end() && it->first < address + bytes; ++it) {
      if (it->second.pool == pool) blocks.emplace_back(it->first, &it->second);
    }
    std::uint64_t allocated = 0;
    std::uint64_t requested = 0;
    for (const auto& [block_address, block] : blocks) {
      allocated += block->size;
      requested += block->allocation.size;
    }
    out.begin_dict();
    out.key("device");
    out.integer(device);
    out.key("address");
    out.unsigned_integer(address);
    out.key("total_size");
    out.unsigned_integer(bytes);
    out.key("allocated_size");
    out.unsigned_integer(allocated);
    out.key("active_size");
    out.unsigned_integer(allocated);
    out.key("requested_size");
    out.unsigned_integer(requested);
    out.key("stream");
    out.integer(0);
    out.key("segment_type");
    out.string("large");
    out.key("is_expandable");
    out.boolean(true);
    out.key("frames");
    out.begin_list();
    out.end();
    out.key("blocks");
    out.begin_list();
    std::uint64_t cursor = address;
    const auto gap = [&](std::uint64_t until) {
      if (until <= cursor) return;
      write_block(out, cursor, until - cursor, 0, "inactive", Record{});
      cursor = until;
    };
    for (const auto& [block_address, block] : blocks) {
      gap(block_address);
      const std::uint64_t size = std::min(block->size, address + bytes - block_address);
      write_block(out, block_address, size, std::min(block->allocation.size, size), "active_allocated", block->allocation);
      cursor = block_address + size;
    }
    gap(address + bytes);
    out.end();
    out.end();
  }

  static void write_block(PickleWriter& out, std::uint64_t address, std::uint64_t size, std::uint64_t requested,
                          const char* state, const Record& allocation) {
    out.begin_dict();
    out.key("address");
    out.unsigned_integer(address);
    out.key("size");
    out.unsigned_integer(size);
    out.key("requested_size");
    out.unsigned_integer(requested);
    out.key("state");
    out.string(state);
    out.key("frames");
    write_frames(out, allocation);
    out.end();
  }

  static void write_entry(PickleWriter& out, const Entry& entry) {
    out.begin_dict();
    out.key("action");
    out.string(action_name(entry.action));
    if (entry.action != Action::oom) {
      out.key("addr");
      out.unsigned_integer(entry.address);
    } else {
      out.key("device_free");  // as the out_of_memory record says (0: not recorded)
      out.unsigned_integer(entry.address);
    }
    out.key("size");
    out.unsigned_integer(entry.size);
    out.key("stream");
    out.unsigned_integer(entry.stream);
    out.key("time_us");
    out.unsigned_integer(entry.time_us);
    out.key("frames");
    write_frames(out, entry.allocation);
    out.end();
  }

  std::uint64_t start_us_;
  bool oom_records_ = false;  // failures are marked by the trace's out_of_memory records
  bool ended_ = false;
  std::vector<Backing> pending_;
  std::map<std::uint64_t, std::map<std::uint64_t, std::uint64_t>> mapped_;  // pool -> ranges
  std::map<std::uint64_t, Block> live_;                                      // replay address -> block
  std::unordered_map<std::uint64_t, int> device_;                            // pool -> device, kHost
  std::vector<Entry> entries_;
};

struct FdSink {
  int fd;
};

}  // namespace

bool export_torch_snapshot(const std::string& path, const trace::Trace& trace, const WhatIf& what_if, int fd,
                           std::string* error) {
  SnapshotBuilder builder(trace.header.start_unix_ns, records_out_of_memory(trace));
  std::function<void(double)> progress = terminal_progress("export", trace.records.size());
  const ReplayResult result = replay(trace, what_if, false, progress, &builder);
  if (result.unrepresentable) {
    *error = unrepresentable_message(path, trace, what_if, result);
    return false;
  }
  FdSink sink{fd};
  PickleWriter writer(
      [](void* context, const char* bytes, std::size_t size) {
        return write_all(static_cast<FdSink*>(context)->fd, bytes, size);
      },
      &sink);
  builder.write(writer);
  if (!writer.finish()) {
    *error = "the output could not be written";
    return false;
  }
  return true;
}

}  // namespace streampool::cli
