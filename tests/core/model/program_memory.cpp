// Steps on memory: allocations in every size regime, stream-ordered frees made legal by the
// program's own events, cuMemFree of pool pointers, kernels that use blocks, trims and pool
// attributes. See program.hpp.
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "core/sizes.hpp"
#include "model/program.hpp"

namespace streampool::testing::model {

using core::PoolAttribute;
using core::Status;

namespace {
constexpr core::EventKey kLegalisingEvents = 0xF080;  // events the program records to order a free after uses
}  // namespace

void Program::alloc_on(std::size_t pool_index, int instance, std::size_t bytes) {
  PoolModel& pool = pools_[pool_index];
  const std::size_t waits_before = ordering_.waits().size();
  const VectorClock waited = gpu_.next_clock(instance, /*implicit=*/false);  // what the stream really waited for
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
  if (gpu_.kind(instance) == core::StreamKind::legacy_default) ++coverage_.legacy_steps;
  if (per_thread_key(gpu_.key(instance))) ++coverage_.per_thread_steps;
  if (bytes >= GiB) {
    ++coverage_.large_allocations;
  } else if (bytes >= 64 * MiB) {
    ++coverage_.medium_allocations;
  }

  // The allocation enqueues nothing: its place in the stream carries only what the stream
  // really waited for (the engine's inserted waits included). Work queued on the stream from
  // now on also follows the legacy stream's implicit order: the hand-out is judged by that.
  const VectorClock later_work = gpu_.next_clock(instance);
  const OpRef op = gpu_.issue(instance, nullptr, /*implicit=*/false);
  BlockRecord record;
  record.pool = static_cast<int>(pool_index);
  record.address = address;
  record.bytes = bytes;
  record.alloc = op;
  record.alloc_clock = later_work;
  join_into(record.alloc_clock, gpu_.clock_of(op));
  std::string violation;
  const std::size_t id = oracle_.hand_out(record, &violation);
  if (!violation.empty()) {
    fail("memory that may still be in use was handed out again: " + violation);
    return;
  }
  if (oracle_.last_reused_from_other_instance()) ++coverage_.reuses_across_streams;
  bool needed_wait = false;
  for (std::size_t earlier : oracle_.last_overlapped()) {
    const BlockRecord& previous = oracle_.block(earlier);
    needed_wait = needed_wait || (previous.state == BlockRecord::State::freed_on_stream &&
                                  !ordered_before(previous.free_op, waited));
  }
  if (needed_wait) ++coverage_.reuses_through_inserted_waits;

  core::BlockInfo info;
  if (!engine_->lookup(reinterpret_cast<void*>(address + bytes - 1), &info) || info.base != address ||
      info.requested_bytes != bytes || info.pool != pool.pool) {
    fail("lookup of the block's last byte does not find the block as allocated");
  }
  pool.used += bytes;
  pool.used_high = std::max(pool.used_high, pool.used);
  live_.push_back(LiveBlock{id, pool_index, address, bytes, {op}, needed_wait});
}

// A legal program frees a block only after every use of it: where a use is not yet ordered
// before the free (CUDA's implicit order counts, with options_.implicit_frees: the free is a
// stream operation), it records an event after the use and makes the freeing stream wait.
void Program::order_free_after_uses(const LiveBlock& block, int instance) {
  for (const OpRef& use : block.uses) {
    if (ordered_before(use, gpu_.next_clock(instance, options_.implicit_frees))) continue;
    if (!gpu_.live(use.instance)) {
      device_synchronize("a use on a destroyed stream");
      continue;
    }
    const core::EventKey event = kLegalisingEvents + 0x10 * (legalising_event_++ % 4);
    const int user = use.instance;
    const core::StreamKey user_key = gpu_.key(user);
    const core::StreamKey waiter_key = gpu_.key(instance);
    workers_.checkpoint();
    engine_->record_event(event, user_key, [&] {
      workers_.await_turn();
      gpu_.record_event(event, user);
      return true;
    });
    engine_->wait_event(waiter_key, event, [&] {
      workers_.await_turn();
      gpu_.wait_event(instance, event);
      return true;
    });
    workers_.await_turn();
    note("  record event 0x%" PRIxPTR " on %s, %s waits for it", event, stream_name(user).c_str(),
         stream_name(instance).c_str());
  }
}

void Program::free_block(std::size_t index, int instance) {
  const LiveBlock block = live_[index];
  order_free_after_uses(block, instance);
  const Status status = engine_->free(reinterpret_cast<void*>(block.address), gpu_.key(instance));
  note("free 0x%" PRIxPTR " (%zu B, pool %zu) on %s -> status %d", block.address, block.bytes, block.pool,
       stream_name(instance).c_str(), static_cast<int>(status));
  if (status != Status::success) {
    fail("free of a live block failed");
    return;
  }
  if (gpu_.kind(instance) == core::StreamKind::legacy_default) ++coverage_.legacy_steps;
  if (per_thread_key(gpu_.key(instance))) ++coverage_.per_thread_steps;
  // Like the allocation, the free enqueues nothing: its place in the stream follows only what the
  // stream really waited for.
  oracle_.freed_on_stream(block.id, gpu_.issue(instance, nullptr, /*implicit=*/false));
  pools_[block.pool].used -= block.bytes;
  live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
}

void Program::free_step() {
  if (live_.empty()) return alloc_step();
  const std::size_t index = pick(live_.size());
  // Often the allocating stream (the fast path), else any stream.
  int instance = random_stream();
  const int allocator = live_[index].uses.front().instance;
  if (chance(40) && usable_here(allocator)) instance = allocator;
  free_block(index, instance);
}

// cuMemFree of a pool pointer: the hook synchronises the current context (a ticket for its
// streams alone), then frees the block as complete. A legal program calls it only when every
// use of the block has finished by then: it synchronises other contexts' users first.
void Program::host_free_step() {
  if (live_.empty()) return alloc_step();
  const std::size_t index = pick(live_.size());
  const LiveBlock block = live_[index];
  const std::size_t context = random_context();
  const std::uintptr_t group = contexts_[context].handle;
  for (const OpRef& use : block.uses) {
    if (!gpu_.is_complete(use) && !ordered_before(use, gpu_.group_issued(group))) {
      synchronize_for(use.instance, "before cuMemFree in another context");
    }
  }
  const core::SyncTicket ticket = engine_->ticket_for_group(group, true);
  gpu_.complete_up_to(gpu_.group_issued(group));
  engine_->commit(ticket);
  const Status status = engine_->free_completed(reinterpret_cast<void*>(block.address));
  note("cuMemFree 0x%" PRIxPTR " (%zu B, pool %zu) in context 0x%" PRIxPTR
       ": context synchronize, then free_completed -> status %d",
       block.address, block.bytes, block.pool, group, static_cast<int>(status));
  if (status != Status::success) {
    fail("free_completed of a live block failed");
    return;
  }
  for (const OpRef& use : block.uses) {
    if (!gpu_.is_complete(use)) fail("model error: cuMemFree of a block whose use may still run");
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
  const int instance = random_stream();
  const Status status = engine_->free(reinterpret_cast<void*>(block.address + 512), gpu_.key(instance));
  note("free of interior pointer 0x%" PRIxPTR " -> status %d", block.address + 512, static_cast<int>(status));
  if (status != Status::invalid_value) fail("a free of an interior pointer must be invalid_value");
}

void Program::kernel_step() {
  const int instance = random_stream();
  // Where the program may use a block: after its allocation by stream order, the implicit order or
  // completion the program saw; not by GPU progress it could not know of.
  const VectorClock next = gpu_.next_clock(instance, /*implicit=*/true, /*observed_only=*/true);
  std::vector<std::size_t> usable;
  for (std::size_t i = 0; i < live_.size(); ++i) {
    if (ordered_before(live_[i].uses.front(), next)) usable.push_back(i);
  }
  const OpRef op = gpu_.issue(instance);
  std::size_t used = 0;
  for (std::size_t n = std::min<std::size_t>(2, usable.size()); n > 0; --n) {
    LiveBlock& block = live_[usable[pick(usable.size())]];
    block.uses.push_back(op);
    oracle_.used(block.id, op);
    ++used;
    const std::string why = oracle_.check_use(block.id, next);
    if (!why.empty()) fail(why);
  }
  note("kernel on %s using %zu blocks (runs until the GPU completes it)", stream_name(instance).c_str(), used);
}

void Program::trim_step() {
  static constexpr std::size_t kKeep[] = {0, 1 * MiB, 10 * MiB, 32 * MiB, 64 * MiB, 300 * MiB, SIZE_MAX};
  const std::size_t pool_index = pick(pools_.size());
  const std::size_t keep = kKeep[pick(7)];
  if (auto_release_ && chance(50)) {  // what a limit on the device asks: never live or pending memory
    const std::uint64_t released = engine_->release_unused(0, keep);
    note("release_unused(device 0, %zu): %" PRIu64 " bytes", keep, released);
    return;
  }
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

}  // namespace streampool::testing::model
