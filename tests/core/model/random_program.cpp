#include "model/random_program.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "core/engine.hpp"
#include "core/sizes.hpp"
#include "model/gpu_model.hpp"
#include "model/model_ordering.hpp"
#include "model/reuse_oracle.hpp"
#include "model/watched_backing.hpp"

namespace streampool::testing::model {

void Coverage::add(const Coverage& other) {
  programs += other.programs;
  steps += other.steps;
  allocations += other.allocations;
  reuses_across_streams += other.reuses_across_streams;
  out_of_memory += other.out_of_memory;
  inserted_waits += other.inserted_waits;
  markers += other.markers;
  parked_commits += other.parked_commits;
  successful_queries += other.successful_queries;
  streams_destroyed += other.streams_destroyed;
  host_frees += other.host_frees;
  legacy_steps += other.legacy_steps;
}

std::string Coverage::summary() const {
  std::ostringstream out;
  out << programs << " programs, " << steps << " steps, " << allocations << " allocations, "
      << reuses_across_streams << " reuses across streams, " << out_of_memory << " out-of-memory, "
      << inserted_waits << " inserted waits, " << markers << " markers, " << parked_commits
      << " delayed commits, " << successful_queries << " successful queries, " << streams_destroyed
      << " streams destroyed, " << host_frees << " host frees, " << legacy_steps << " legacy-stream allocs/frees";
  return out.str();
}

namespace {

using core::PoolAttribute;
using core::Status;
using core::StreamKey;
using core::StreamKind;

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;
constexpr std::size_t kWorkers = 4;
constexpr StreamKey kLegacyKey = 0x10;
constexpr std::size_t kStreamSlots = 6;  // the legacy stream and five others
constexpr core::EventKey kProgramEvents = 0xE000;
constexpr std::size_t kProgramEventCount = 4;
constexpr core::EventKey kLegalisingEvents = 0xF000;  // events the program records to order a free after uses
constexpr std::size_t kTraceLength = 40;

const char* kind_name(StreamKind kind) {
  switch (kind) {
    case StreamKind::legacy_default:
      return "legacy";
    case StreamKind::blocking:
      return "blocking";
    case StreamKind::non_blocking:
      return "non-blocking";
  }
  return "?";
}

struct PoolModel {
  core::Pool* pool = nullptr;
  WatchedBacking* backing = nullptr;
  std::size_t cap = 0;  // props.max_size as given
  int follow = 1;
  int opportunistic = 1;
  int internal = 1;
  std::uint64_t threshold = 0;
  std::uint64_t used = 0;
  std::uint64_t used_high = 0;
};

struct LiveBlock {
  std::size_t id = 0;  // in the oracle
  std::size_t pool = 0;
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  std::vector<OpRef> uses;  // the allocation op and the kernels that touched it
};

struct ParkedTicket {
  core::SyncTicket ticket;
  VectorClock target;  // what the GPU must have finished before the sync returns
  std::string what;
};

class Program {
 public:
  Program(std::uint64_t seed, StepWorkers& workers, const ProgramOptions& options)
      : seed_(seed), rng_(seed), workers_(workers), options_(options) {}

  std::string run(Coverage* coverage);

 private:
  // --- generator helpers
  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  bool chance(unsigned percent) { return rng_() % 100 < percent; }
  std::size_t random_size();
  std::size_t random_pool() { return chance(50) ? 0 : 1 + pick(pools_.size() - 1); }
  std::size_t random_live_slot() { return pick(kStreamSlots); }
  StreamKey key_of_slot(std::size_t slot) const { return slot == 0 ? kLegacyKey : 0x1000 * slot; }
  int instance_of_slot(std::size_t slot) const { return gpu_.instance(key_of_slot(slot)); }
  std::string stream_name(int instance) const;

  // --- setup, steps, checks
  void set_up();
  void step();
  void alloc_step();
  void free_step();
  void free_completed_step();
  void invalid_free_step();
  void kernel_step();
  void event_step();
  void gpu_progress_step();
  void sync_step();
  void query_step();
  void commit_parked_step();
  void trim_step();
  void attribute_step();
  void destroy_stream_step();
  void tear_down();

  void order_free_after_uses(const LiveBlock& block, int instance);
  void device_synchronize(const char* why);
  void commit(ParkedTicket& parked);
  void free_block(std::size_t index, std::size_t slot);
  void check_invariants();

  void note(const char* format, ...) __attribute__((format(printf, 2, 3)));
  void fail(const std::string& what);
  bool failed() const { return !failure_.empty(); }

  const std::uint64_t seed_;
  std::mt19937_64 rng_;
  StepWorkers& workers_;
  const ProgramOptions options_;

  GpuModel gpu_;
  ModelOrdering ordering_{gpu_};
  std::optional<core::Engine> engine_;
  ReuseOracle oracle_;
  std::vector<PoolModel> pools_;
  std::vector<LiveBlock> live_;
  std::vector<ParkedTicket> parked_;
  std::size_t legalising_event_ = 0;

  std::size_t step_index_ = 0;
  std::size_t worker_ = 0;
  std::deque<std::string> trace_;
  std::string failure_;
  Coverage coverage_;
};

void Program::note(const char* format, ...) {
  char line[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (trace_.size() == kTraceLength) trace_.pop_front();
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "  #%zu (worker %zu) ", step_index_, worker_);
  trace_.push_back(std::string(prefix) + line);
}

void Program::fail(const std::string& what) {
  if (failed()) return;
  std::ostringstream out;
  out << "model check failed: seed " << seed_ << ", step " << step_index_ << ": " << what << "\n"
      << "replay: STREAMPOOL_MODEL_SEED=" << seed_ << " STREAMPOOL_MODEL_PROGRAMS=1 core_tests "
      << "--gtest_filter='ModelCheck.*'\nlast steps of the program:\n";
  for (const std::string& line : trace_) out << line << "\n";
  failure_ = out.str();
}

std::string Program::stream_name(int instance) const {
  char name[64];
  std::snprintf(name, sizeof name, "%s stream 0x%" PRIxPTR " (instance %d)", kind_name(gpu_.kind(instance)),
                gpu_.key(instance), instance);
  return name;
}

std::size_t Program::random_size() {
  const std::size_t r = pick(100);
  if (r < 4) return 0;
  if (r < 20) return 1 + pick(512);
  if (r < 45) return (1 + pick(64)) * 512 + pick(3) - 1;  // around multiples of 512
  if (r < 65) return 513 + pick(256 * KiB);
  if (r < 92) {
    static constexpr std::size_t kOffsets[] = {0, 0, 1, 512};
    const std::size_t mib = (1 + pick(16)) * MiB;
    return chance(20) ? mib - 1 : mib + kOffsets[pick(4)];
  }
  return (17 + pick(24)) * MiB + pick(4096);  // larger than some pools' caps
}

// ---------------------------------------------------------------------------------------------

void Program::set_up() {
  // Streams: the legacy default stream, one blocking, one non-blocking, three of either kind.
  gpu_.open_stream(kLegacyKey, StreamKind::legacy_default);
  for (std::size_t slot = 1; slot < kStreamSlots; ++slot) {
    const StreamKind kind = slot == 1   ? StreamKind::blocking
                            : slot == 2 ? StreamKind::non_blocking
                                        : (chance(50) ? StreamKind::blocking : StreamKind::non_blocking);
    gpu_.open_stream(key_of_slot(slot), kind);
  }
  engine_.emplace(ordering_);

  // Pools: one with the default flags, two with random flags, thresholds and caps.
  static constexpr std::size_t kCaps1[] = {32 * MiB, 64 * MiB, 96 * MiB};
  static constexpr std::size_t kCaps2[] = {0, 1000, 48 * MiB, 128 * MiB};
  static constexpr std::uint64_t kThresholds[] = {0, 16 * MiB, 64 * MiB, UINT64_MAX};
  for (unsigned index = 0; index < 3; ++index) {
    PoolModel model;
    core::PoolProps props;
    if (index == 1) props.max_size = kCaps1[pick(3)];
    if (index == 2) props.max_size = kCaps2[pick(4)];
    model.cap = props.max_size;
    auto backing = std::make_unique<WatchedBacking>();
    model.backing = backing.get();
    if (engine_->create_pool(props, std::move(backing), &model.pool) != Status::success) {
      fail("create_pool failed");
      return;
    }
    model.threshold = index == 0 ? (chance(50) ? 0 : UINT64_MAX) : kThresholds[pick(4)];
    if (index != 0) {
      model.follow = chance(70) ? 1 : 0;
      model.opportunistic = chance(70) ? 1 : 0;
      model.internal = chance(70) ? 1 : 0;
    }
    engine_->set_attribute(model.pool, PoolAttribute::release_threshold, &model.threshold);
    engine_->set_attribute(model.pool, PoolAttribute::reuse_follow_event_dependencies, &model.follow);
    engine_->set_attribute(model.pool, PoolAttribute::reuse_allow_opportunistic, &model.opportunistic);
    engine_->set_attribute(model.pool, PoolAttribute::reuse_allow_internal_dependencies, &model.internal);
    pools_.push_back(model);
  }
  step_index_ = 0;
  note("pools: 0 default flags threshold %" PRIu64 "; 1 cap %zu flags %d%d%d threshold %" PRIu64
       "; 2 cap %zu flags %d%d%d threshold %" PRIu64,
       pools_[0].threshold, pools_[1].cap, pools_[1].follow, pools_[1].opportunistic, pools_[1].internal,
       pools_[1].threshold, pools_[2].cap, pools_[2].follow, pools_[2].opportunistic, pools_[2].internal,
       pools_[2].threshold);
  std::string kinds;
  for (std::size_t slot = 0; slot < kStreamSlots; ++slot) {
    kinds.append(" ").append(stream_name(instance_of_slot(slot))).append(";");
  }
  note("streams:%s", kinds.c_str());
}

void Program::step() {
  const std::size_t r = pick(1000);
  if (r < 260) {
    alloc_step();
  } else if (r < 460) {
    free_step();
  } else if (r < 480) {
    free_completed_step();
  } else if (r < 490) {
    invalid_free_step();
  } else if (r < 590) {
    kernel_step();
  } else if (r < 690) {
    event_step();
  } else if (r < 770) {
    gpu_progress_step();
  } else if (r < 840) {
    sync_step();
  } else if (r < 870) {
    query_step();
  } else if (r < 900) {
    commit_parked_step();
  } else if (r < 920) {
    trim_step();
  } else if (r < 985) {
    attribute_step();
  } else {
    destroy_stream_step();
  }
}

void Program::alloc_step() {
  const std::size_t pool_index = random_pool();
  PoolModel& pool = pools_[pool_index];
  const std::size_t slot = random_live_slot();
  const int instance = instance_of_slot(slot);
  const std::size_t bytes = random_size();
  const std::size_t waits_before = ordering_.waits().size();
  void* out = reinterpret_cast<void*>(0x1);
  const Status status = engine_->allocate(pool.pool, bytes, gpu_.key(instance), &out);
  const auto address = reinterpret_cast<std::uintptr_t>(out);
  note("alloc %zu B from pool %zu on %s -> status %d, 0x%" PRIxPTR " (%zu waits inserted)", bytes, pool_index,
       stream_name(instance).c_str(), static_cast<int>(status), address, ordering_.waits().size() - waits_before);
  if (bytes == 0) {
    if (status != Status::success || out != nullptr) fail("a 0-byte allocation must succeed with nullptr");
    return;
  }
  if (status == Status::out_of_memory) {
    ++coverage_.out_of_memory;
    if (pool.cap == 0) fail("out_of_memory from a pool with no cap and a terabyte of device memory");
    if (out != nullptr) fail("a failed allocation must give nullptr");
    return;
  }
  if (status != Status::success) {
    fail("allocate returned status " + std::to_string(static_cast<int>(status)));
    return;
  }
  if (address % core::kPlacementBytes != 0) fail("an allocation not aligned to 512 bytes");
  ++coverage_.allocations;
  if (slot == 0) ++coverage_.legacy_steps;

  const OpRef op = gpu_.issue(instance);
  BlockRecord record;
  record.pool = static_cast<int>(pool_index);
  record.address = address;
  record.bytes = bytes;
  record.alloc = op;
  record.alloc_clock = gpu_.clock_of(op);
  std::string violation;
  const std::size_t id = oracle_.hand_out(record, &violation);
  if (!violation.empty()) {
    fail("memory that may still be in use was handed out again: " + violation);
    return;
  }
  if (oracle_.last_reused_from_other_instance()) ++coverage_.reuses_across_streams;

  core::BlockInfo info;
  if (!engine_->lookup(reinterpret_cast<void*>(address + bytes - 1), &info) || info.base != address ||
      info.requested_bytes != bytes || info.pool != pool.pool) {
    fail("lookup of the block's last byte does not find the block as allocated");
  }
  pool.used += bytes;
  pool.used_high = std::max(pool.used_high, pool.used);
  live_.push_back(LiveBlock{id, pool_index, address, bytes, {op}});
}

// A legal program frees a block only after every use of it: where a use is not yet ordered
// before the free, it records an event after the use and makes the freeing stream wait.
void Program::order_free_after_uses(const LiveBlock& block, int instance) {
  for (const OpRef& use : block.uses) {
    if (ordered_before(use, gpu_.next_clock(instance))) continue;
    if (!gpu_.live(use.instance)) {
      device_synchronize("a use on a destroyed stream");
      continue;
    }
    const core::EventKey event = kLegalisingEvents + (legalising_event_++ % 4);
    engine_->event_recorded(event, gpu_.key(use.instance));
    gpu_.record_event(event, use.instance);
    gpu_.wait_event(instance, event);
    engine_->stream_waited(gpu_.key(instance), event);
    note("  record event 0x%" PRIxPTR " on %s, %s waits for it", event, stream_name(use.instance).c_str(),
         stream_name(instance).c_str());
  }
}

void Program::free_block(std::size_t index, std::size_t slot) {
  const LiveBlock block = live_[index];
  const int instance = instance_of_slot(slot);
  order_free_after_uses(block, instance);
  const Status status = engine_->free(reinterpret_cast<void*>(block.address), gpu_.key(instance));
  note("free 0x%" PRIxPTR " (%zu B, pool %zu) on %s -> status %d", block.address, block.bytes, block.pool,
       stream_name(instance).c_str(), static_cast<int>(status));
  if (status != Status::success) {
    fail("free of a live block failed");
    return;
  }
  if (slot == 0) ++coverage_.legacy_steps;
  oracle_.freed_on_stream(block.id, gpu_.issue(instance));
  pools_[block.pool].used -= block.bytes;
  live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
}

void Program::free_step() {
  if (live_.empty()) return alloc_step();
  const std::size_t index = pick(live_.size());
  // Often the allocating stream (the fast path), else any stream.
  std::size_t slot = random_live_slot();
  if (chance(40)) {
    const int allocator = live_[index].uses.front().instance;
    for (std::size_t s = 0; s < kStreamSlots; ++s) {
      if (instance_of_slot(s) == allocator) slot = s;
    }
  }
  free_block(index, slot);
}

void Program::free_completed_step() {
  if (live_.empty()) return alloc_step();
  const std::size_t index = pick(live_.size());
  const LiveBlock block = live_[index];
  const bool complete = std::all_of(block.uses.begin(), block.uses.end(),
                                    [&](const OpRef& use) { return gpu_.is_complete(use); });
  // cuMemFree of a pool pointer: the program knows every use has finished (it synchronised).
  if (!complete) device_synchronize("before free_completed");
  const Status status = engine_->free_completed(reinterpret_cast<void*>(block.address));
  note("free_completed 0x%" PRIxPTR " (%zu B, pool %zu) -> status %d", block.address, block.bytes, block.pool,
       static_cast<int>(status));
  if (status != Status::success) {
    fail("free_completed of a live block failed");
    return;
  }
  ++coverage_.host_frees;
  oracle_.freed_by_host(block.id);
  pools_[block.pool].used -= block.bytes;
  live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
}

void Program::invalid_free_step() {
  // An interior pointer of a live block, which is never another block's start.
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < live_.size(); ++i) {
    if (live_[i].bytes > 512) candidates.push_back(i);
  }
  if (candidates.empty()) return alloc_step();
  const LiveBlock& block = live_[candidates[pick(candidates.size())]];
  const std::size_t slot = random_live_slot();
  const Status status = engine_->free(reinterpret_cast<void*>(block.address + 512), key_of_slot(slot));
  note("free of interior pointer 0x%" PRIxPTR " -> status %d", block.address + 512, static_cast<int>(status));
  if (status != Status::invalid_value) fail("a free of an interior pointer must be invalid_value");
}

void Program::kernel_step() {
  const std::size_t slot = random_live_slot();
  const int instance = instance_of_slot(slot);
  const VectorClock next = gpu_.next_clock(instance);
  std::vector<std::size_t> usable;
  for (std::size_t i = 0; i < live_.size(); ++i) {
    if (ordered_before(live_[i].uses.front(), next)) usable.push_back(i);
  }
  const OpRef op = gpu_.issue(instance);
  std::size_t used = 0;
  for (std::size_t n = std::min<std::size_t>(2, usable.size()); n > 0; --n) {
    live_[usable[pick(usable.size())]].uses.push_back(op);
    ++used;
  }
  note("kernel on %s using %zu blocks (runs until the GPU completes it)", stream_name(instance).c_str(), used);
}

void Program::event_step() {
  const core::EventKey event = kProgramEvents + pick(kProgramEventCount);
  const std::size_t slot = random_live_slot();
  const int instance = instance_of_slot(slot);
  const std::size_t r = pick(10);
  if (r < 5) {
    engine_->event_recorded(event, gpu_.key(instance));
    gpu_.record_event(event, instance);
    note("record event 0x%" PRIxPTR " on %s", event, stream_name(instance).c_str());
  } else if (r < 9) {
    const bool recorded = gpu_.wait_event(instance, event);
    engine_->stream_waited(gpu_.key(instance), event);
    note("%s waits for event 0x%" PRIxPTR "%s", stream_name(instance).c_str(), event,
         recorded ? "" : " (never recorded: a no-op)");
  } else {
    engine_->event_destroyed(event);
    gpu_.destroy_event(event);
    note("destroy event 0x%" PRIxPTR, event);
  }
}

void Program::gpu_progress_step() {
  if (chance(10)) {
    gpu_.complete_up_to(gpu_.everything_issued());
    note("GPU: everything issued so far has run");
    return;
  }
  // Any instance, destroyed ones included: their work still runs.
  const int instance = static_cast<int>(pick(gpu_.instance_count()));
  gpu_.complete_instance(instance);
  note("GPU: %s has run everything queued on it (and what that waited for)", stream_name(instance).c_str());
}

void Program::commit(ParkedTicket& parked) {
  gpu_.complete_up_to(parked.target);  // the synchronisation returns only once this has run
  engine_->commit(parked.ticket);
}

void Program::device_synchronize(const char* why) {
  ParkedTicket sync{engine_->ticket_for_all(true), gpu_.everything_issued(), "device"};
  commit(sync);
  note("  device synchronize (%s)", why);
}

void Program::sync_step() {
  const std::size_t r = pick(10);
  ParkedTicket parked;
  if (r < 6) {
    const int instance = instance_of_slot(random_live_slot());
    parked.ticket = engine_->ticket_for_stream(gpu_.key(instance), true);
    parked.target = gpu_.last_clock(instance);
    parked.what = "synchronize " + stream_name(instance);
  } else if (r < 9) {
    const core::EventKey event = kProgramEvents + pick(kProgramEventCount);
    parked.ticket = engine_->ticket_for_event(event, true);
    const VectorClock* clock = gpu_.event_clock(event);
    parked.target = clock != nullptr ? *clock : VectorClock{};
    char what[64];
    std::snprintf(what, sizeof what, "synchronize event 0x%" PRIxPTR, event);
    parked.what = what;
  } else {
    parked.ticket = engine_->ticket_for_all(true);
    parked.target = gpu_.everything_issued();
    parked.what = "synchronize the device";
  }
  // Sometimes other steps (other host threads) run while this one waits in the driver.
  if (parked_.size() < 3 && chance(30)) {
    note("%s: ticket taken, commit delayed", parked.what.c_str());
    parked_.push_back(std::move(parked));
    return;
  }
  commit(parked);
  note("%s: ticket, GPU done, commit", parked.what.c_str());
}

void Program::commit_parked_step() {
  if (parked_.empty()) return sync_step();
  const std::size_t index = pick(parked_.size());
  ParkedTicket parked = std::move(parked_[index]);
  parked_.erase(parked_.begin() + static_cast<std::ptrdiff_t>(index));
  commit(parked);
  ++coverage_.parked_commits;
  note("%s: GPU done, delayed commit", parked.what.c_str());
}

void Program::query_step() {
  const int instance = instance_of_slot(random_live_slot());
  core::SyncTicket ticket = engine_->ticket_for_stream(gpu_.key(instance), false);
  const bool idle = gpu_.idle(instance);
  if (idle) {
    engine_->commit(ticket);
    ++coverage_.successful_queries;
  }
  note("query %s -> %s", stream_name(instance).c_str(), idle ? "success, committed" : "not ready");
}

void Program::trim_step() {
  static constexpr std::size_t kKeep[] = {0, 1 * MiB, 10 * MiB, 32 * MiB, 64 * MiB, SIZE_MAX};
  const std::size_t pool_index = pick(pools_.size());
  const std::size_t keep = kKeep[pick(6)];
  const Status status = engine_->trim_to(pools_[pool_index].pool, keep);
  note("trim_to(pool %zu, %zu)", pool_index, keep);
  if (status != Status::success) fail("trim_to failed");
}

void Program::attribute_step() {
  const std::size_t pool_index = pick(pools_.size());
  PoolModel& pool = pools_[pool_index];
  const std::size_t r = pick(100);
  if (r < 35) {
    const auto attribute = static_cast<PoolAttribute>(1 + pick(15));
    std::uint64_t value = 0;  // the widest attribute type
    const Status status = engine_->get_attribute(pool.pool, attribute, &value);
    note("get attribute %d of pool %zu -> %" PRIu64, static_cast<int>(attribute), pool_index, value);
    if (status != Status::success) fail("get_attribute failed");
    const auto as_int = static_cast<int>(static_cast<std::uint32_t>(value));
    const std::uint64_t expected_cap = pool.cap == 0 ? 0 : core::round_up(pool.cap, core::kGrowthChunkBytes);
    switch (attribute) {
      case PoolAttribute::reuse_follow_event_dependencies:
        if (as_int != pool.follow) fail("REUSE_FOLLOW_EVENT_DEPENDENCIES is not what was set");
        break;
      case PoolAttribute::reuse_allow_opportunistic:
        if (as_int != pool.opportunistic) fail("REUSE_ALLOW_OPPORTUNISTIC is not what was set");
        break;
      case PoolAttribute::reuse_allow_internal_dependencies:
        if (as_int != pool.internal) fail("REUSE_ALLOW_INTERNAL_DEPENDENCIES is not what was set");
        break;
      case PoolAttribute::release_threshold:
        if (value != pool.threshold) fail("RELEASE_THRESHOLD is not what was set");
        break;
      case PoolAttribute::reserved_mem_current:
        if (value != pool.backing->mapped_bytes()) fail("RESERVED_MEM_CURRENT differs from the mapped bytes");
        break;
      case PoolAttribute::reserved_mem_high:
        if (value != pool.backing->peak_mapped_bytes()) fail("RESERVED_MEM_HIGH differs from the mapped peak");
        break;
      case PoolAttribute::used_mem_current:
        if (value != pool.used) fail("USED_MEM_CURRENT differs from the live bytes");
        break;
      case PoolAttribute::used_mem_high:
        if (value != pool.used_high) fail("USED_MEM_HIGH differs from the peak of the live bytes");
        break;
      case PoolAttribute::max_pool_size:
        if (value != expected_cap) fail("MAX_POOL_SIZE is not the cap rounded up to 32 MiB");
        break;
      default:
        break;
    }
    return;
  }
  if (r < 55) {
    const auto attribute = static_cast<PoolAttribute>(1 + pick(3));
    const int value = chance(60) ? 1 : 0;
    const Status status = engine_->set_attribute(pool.pool, attribute, &value);
    note("set attribute %d of pool %zu to %d", static_cast<int>(attribute), pool_index, value);
    if (status != Status::success) fail("setting a REUSE_* flag failed");
    if (attribute == PoolAttribute::reuse_follow_event_dependencies) pool.follow = value;
    if (attribute == PoolAttribute::reuse_allow_opportunistic) pool.opportunistic = value;
    if (attribute == PoolAttribute::reuse_allow_internal_dependencies) pool.internal = value;
    return;
  }
  if (r < 65) {
    static constexpr std::uint64_t kThresholds[] = {0, 16 * MiB, 64 * MiB, UINT64_MAX};
    pool.threshold = kThresholds[pick(4)];
    const Status status = engine_->set_attribute(pool.pool, PoolAttribute::release_threshold, &pool.threshold);
    note("set RELEASE_THRESHOLD of pool %zu to %" PRIu64, pool_index, pool.threshold);
    if (status != Status::success) fail("setting RELEASE_THRESHOLD failed");
    return;
  }
  if (r < 80) {
    const std::uint64_t zero = 0;
    const Status status = engine_->set_attribute(pool.pool, PoolAttribute::used_mem_high, &zero);
    note("reset USED_MEM_HIGH of pool %zu", pool_index);
    if (status != Status::success) fail("resetting USED_MEM_HIGH failed");
    pool.used_high = pool.used;
    return;
  }
  if (r < 92) {
    const std::uint64_t zero = 0;
    const Status status = engine_->set_attribute(pool.pool, PoolAttribute::reserved_mem_high, &zero);
    note("reset RESERVED_MEM_HIGH of pool %zu", pool_index);
    if (status != Status::success) fail("resetting RESERVED_MEM_HIGH failed");
    pool.backing->reset_peak();
    return;
  }
  // Values CUDA refuses: a non-zero high watermark, any current value.
  static constexpr PoolAttribute kRefused[] = {PoolAttribute::used_mem_high, PoolAttribute::reserved_mem_high,
                                               PoolAttribute::used_mem_current, PoolAttribute::reserved_mem_current};
  const PoolAttribute attribute = kRefused[pick(4)];
  const std::uint64_t value = 1 + pick(1u << 20);
  const Status status = engine_->set_attribute(pool.pool, attribute, &value);
  note("set attribute %d of pool %zu to %" PRIu64 " (must be refused)", static_cast<int>(attribute), pool_index,
       value);
  if (status != Status::invalid_value) fail("a refused attribute value was accepted");
}

void Program::destroy_stream_step() {
  const std::size_t slot = 1 + pick(kStreamSlots - 1);  // the legacy stream cannot be destroyed
  const StreamKey key = key_of_slot(slot);
  const int old_instance = gpu_.instance(key);
  engine_->stream_destroyed(key);
  gpu_.close_stream(key);
  // The key comes back at once as a new stream of a random kind (CUDA reuses handles).
  const StreamKind kind = chance(50) ? StreamKind::blocking : StreamKind::non_blocking;
  const int instance = gpu_.open_stream(key, kind);
  ++coverage_.streams_destroyed;
  note("destroy %s; the key is now %s", stream_name(old_instance).c_str(), stream_name(instance).c_str());
}

void Program::check_invariants() {
  if (ordering_.contract_errors() != 0) fail("the engine broke the Ordering contract: " + ordering_.last_error());
  for (std::size_t index = 0; index < pools_.size() && !failed(); ++index) {
    const PoolModel& pool = pools_[index];
    const core::PoolStats stats = engine_->stats(pool.pool);
    std::ostringstream why;
    if (stats.used_current != pool.used) {
      why << "USED_MEM_CURRENT " << stats.used_current << " != live bytes " << pool.used;
    } else if (stats.used_high != pool.used_high) {
      why << "USED_MEM_HIGH " << stats.used_high << " != peak of live bytes " << pool.used_high;
    } else if (stats.reserved_current != pool.backing->mapped_bytes()) {
      why << "RESERVED_MEM_CURRENT " << stats.reserved_current << " != mapped bytes " << pool.backing->mapped_bytes();
    } else if (stats.reserved_high != pool.backing->peak_mapped_bytes()) {
      why << "RESERVED_MEM_HIGH " << stats.reserved_high << " != peak of mapped bytes "
          << pool.backing->peak_mapped_bytes();
    } else if (pool.backing->errors() != 0) {
      why << pool.backing->errors() << " calls broke the backing's contract";
    } else if (pool.cap != 0 && stats.reserved_current > core::round_up(pool.cap, core::kGrowthChunkBytes)) {
      why << "RESERVED_MEM_CURRENT " << stats.reserved_current << " above the cap " << pool.cap;
    }
    if (!why.str().empty()) fail("pool " + std::to_string(index) + ": " + why.str());
  }
  for (const LiveBlock& block : live_) {
    if (failed()) break;
    if (!pools_[block.pool].backing->range_mapped(block.address, block.bytes)) {
      char what[128];
      std::snprintf(what, sizeof what, "live block 0x%" PRIxPTR " (%zu B, pool %zu) is not all mapped",
                    block.address, block.bytes, block.pool);
      fail(what);
    }
  }
}

void Program::tear_down() {
  // Free everything that is left, synchronise, trim: nothing may stay reserved.
  ++step_index_;
  while (!live_.empty() && !failed()) free_block(live_.size() - 1, random_live_slot());
  for (ParkedTicket& parked : parked_) commit(parked);
  parked_.clear();
  device_synchronize("tear-down");
  for (PoolModel& pool : pools_) engine_->trim_to(pool.pool, 0);
  check_invariants();
  for (std::size_t index = 0; index < pools_.size() && !failed(); ++index) {
    if (pools_[index].backing->mapped_bytes() != 0) {
      fail("pool " + std::to_string(index) + " keeps " + std::to_string(pools_[index].backing->mapped_bytes()) +
           " bytes mapped after every block was freed, the device synchronised and trim_to(0)");
    }
  }
  coverage_.inserted_waits += ordering_.waits().size();
  coverage_.markers += ordering_.records();
  engine_.reset();
  if (!failed() && ordering_.live_markers() != 0) {
    fail(std::to_string(ordering_.live_markers()) + " markers were never recycled after the engine went away");
  }
  if (!failed() && ordering_.contract_errors() != 0) fail("Ordering contract broken: " + ordering_.last_error());
}

std::string Program::run(Coverage* coverage) {
  const std::size_t steps = options_.min_steps + pick(options_.max_steps - options_.min_steps + 1);
  const std::function<void()> set_up_step = [this] {
    set_up();
    if (!failed()) check_invariants();
  };
  workers_.run(worker_ = pick(kWorkers), set_up_step);
  // One hand-over per run of 1..4 steps: the engine still sees every thread, in random order,
  // and a loaded CI machine (where each hand-over waits for the scheduler) pays less for it.
  std::size_t segment = 0;
  const std::function<void()> some_steps = [this, &segment, steps] {
    for (std::size_t n = 0; n < segment && step_index_ <= steps && !failed(); ++n, ++step_index_) {
      step();
      if (!failed()) check_invariants();
    }
  };
  step_index_ = 1;
  while (step_index_ <= steps && !failed()) {
    worker_ = pick(kWorkers);
    segment = 1 + pick(4);
    workers_.run(worker_, some_steps);
  }
  if (!failed()) {
    const std::function<void()> final_step = [this] { tear_down(); };
    workers_.run(worker_ = pick(kWorkers), final_step);
  } else {
    engine_.reset();
  }
  coverage_.programs = 1;
  coverage_.steps = steps;
  if (coverage != nullptr) coverage->add(coverage_);
  return failure_;
}

}  // namespace

std::string run_random_program(std::uint64_t seed, StepWorkers& workers, const ProgramOptions& options,
                               Coverage* coverage) {
  Program program(seed, workers, options);
  return program.run(coverage);
}

}  // namespace streampool::testing::model
