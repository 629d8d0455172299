// The run of one program: set-up, the step loop with its hand-overs and interleavings, the
// checks after every step, tear-down. See program.hpp.
#include "model/program.hpp"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <sstream>

#include "core/sizes.hpp"

namespace streampool::testing::model {

namespace {

constexpr std::size_t kTraceLength = 48;

const char* kind_name(core::StreamKind kind) {
  switch (kind) {
    case core::StreamKind::legacy_default:
      return "legacy";
    case core::StreamKind::blocking:
      return "blocking";
    case core::StreamKind::non_blocking:
      return "non-blocking";
  }
  return "?";
}

}  // namespace

void Program::note(const char* format, ...) {
  char line[320];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (trace_.size() == kTraceLength) trace_.pop_front();
  char prefix[64];
  const std::size_t worker = StepWorkers::current();
  std::snprintf(prefix, sizeof prefix, "  #%zu (worker %zu%s) ", step_index_.load(), worker,
                interleaving_ && worker != paused_worker_ ? ", meanwhile" : "");
  trace_.push_back(std::string(prefix) + line);
}

void Program::fail(const std::string& what) {
  if (failed()) return;
  std::ostringstream out;
  out << "model check failed: seed " << seed_ << ", step " << step_index_.load() << ": " << what << "\n"
      << "replay: STREAMPOOL_MODEL_SEED=" << seed_ << " STREAMPOOL_MODEL_PROGRAMS=1 core_tests "
      << "--gtest_filter='ModelCheck.*'\nlast steps of the program:\n";
  for (const std::string& line : trace_) out << line << "\n";
  failure_ = out.str();
}

std::string Program::stream_name(int instance) const {
  char name[96];
  std::snprintf(name, sizeof name, "%s stream 0x%" PRIxPTR " (instance %d, context 0x%" PRIxPTR ")",
                kind_name(gpu_.kind(instance)), gpu_.key(instance), instance, gpu_.group(instance));
  return name;
}

std::size_t Program::random_size() {
  if (large_sizes_ && chance(10)) {
    // Growths from 64 MiB map 32 MiB units, from 1 GiB 256 MiB units.
    if (chance(75)) return (64 + pick(960)) * MiB + pick(3) * 512 * KiB + pick(2);
    return GiB + pick(1536) * MiB + pick(2) * 4096;
  }
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

std::size_t Program::random_context() { return pick(context_count_); }

int Program::random_stream() { return random_stream_of(random_context()); }

int Program::random_stream_of(std::size_t context) {
  const std::size_t r = pick(100);
  StreamSlot slot{context, Role::created, pick(kCreatedStreams)};
  if (r < 20) {
    slot = StreamSlot{context, Role::legacy, 0};
  } else if (r < 35) {
    slot = StreamSlot{context, Role::per_thread, StepWorkers::current() % kWorkers};  // this thread's own
  }
  return gpu_.instance(key_of(slot));
}

// ---------------------------------------------------------------------------------------------

void Program::set_up() {
  const std::size_t r = pick(100);
  context_count_ = r < 40 ? 1 : (r < 80 ? 2 : 3);
  if (context_count_ > 1) ++coverage_.multi_context_programs;
  large_sizes_ = seed_ % 25 == 7;  // a few programs in a hundred reach the large mapping units
  engine_.emplace(ordering_);
  auto_release_ = seed_ % 4 == 2;
  if (auto_release_) {
    core::ReleasePolicy policy = core::ReleasePolicy::self_tuning();
    policy.idle_ms = 100;
    policy.clock_ms = [this] { return static_cast<std::uint64_t>(step_index_.load(std::memory_order_relaxed)) * 10; };
    engine_->set_release_policy(std::move(policy));
  }
  for (std::size_t context = 0; context < context_count_; ++context) {
    contexts_[context].handle = free_context_handle();
    open_context(context, true);
  }
  const bool refusing = chance(30);
  if (refusing) ordering_.fail_one_in(seed_, 25);  // the driver refuses some of the engine's records and waits
  const bool strict = chance(15);
  engine_->set_strict_reuse(strict);

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
    if (engine_->create_pool(props, std::move(backing), &model.pool) != core::Status::success) {
      fail("create_pool failed");
      return;
    }
    model.threshold = index == 0 ? (chance(50) ? 0 : UINT64_MAX) : kThresholds[pick(4)];
    if (index != 0) {
      model.follow = chance(70) ? 1 : 0;
      model.opportunistic = chance(70) ? 1 : 0;
      model.internal = chance(70) ? 1 : 0;
    }
    if (!(auto_release_ && index == 0 && model.threshold == 0)) {  // unset: the automatic rule's
      engine_->set_attribute(model.pool, core::PoolAttribute::release_threshold, &model.threshold);
    }
    engine_->set_attribute(model.pool, core::PoolAttribute::reuse_follow_event_dependencies, &model.follow);
    engine_->set_attribute(model.pool, core::PoolAttribute::reuse_allow_opportunistic, &model.opportunistic);
    engine_->set_attribute(model.pool, core::PoolAttribute::reuse_allow_internal_dependencies, &model.internal);
    pools_.push_back(model);
  }
  step_index_ = 0;
  note("pools: 0 default flags threshold %" PRIu64 "; 1 cap %zu flags %d%d%d threshold %" PRIu64
       "; 2 cap %zu flags %d%d%d threshold %" PRIu64 "; %zu contexts%s%s%s%s",
       pools_[0].threshold, pools_[1].cap, pools_[1].follow, pools_[1].opportunistic, pools_[1].internal,
       pools_[1].threshold, pools_[2].cap, pools_[2].follow, pools_[2].opportunistic, pools_[2].internal,
       pools_[2].threshold, context_count_, strict ? ", strict reuse" : "", large_sizes_ ? ", large sizes" : "",
       auto_release_ ? ", automatic release" : "", refusing ? ", the driver refuses some marker records and waits" : "");
  for (std::size_t context = 0; context < context_count_; ++context) {
    std::string names;
    for (const StreamSlot& slot : slots_of(context)) {
      if (slot.role != Role::per_thread) names.append(" ").append(stream_name(gpu_.instance(key_of(slot)))).append(";");
    }
    note("context 0x%" PRIxPTR ":%s", contexts_[context].handle, names.c_str());
  }
}

void Program::step() {
  capture_step();
  const std::size_t r = pick(1000);
  if (r < 230) {
    alloc_step();
  } else if (r < 410) {
    free_step();
  } else if (r < 428) {
    host_free_step();
  } else if (r < 436) {
    invalid_free_step();
  } else if (r < 526) {
    kernel_step();
  } else if (r < 646) {
    event_step();
  } else if (r < 716) {
    gpu_progress_step();
  } else if (r < 806) {
    host_call_step(true);
  } else if (r < 836) {
    advance_parked_step();
  } else if (r < 853) {
    trim_step();
  } else if (r < 913) {
    attribute_step();
  } else if (r < 943) {
    event_lifetime_step();
  } else if (r < 965) {
    destroy_stream_step();
  } else if (r < 973) {
    context_end_step();
  } else if (r < 995) {
    handoff_step();
  } else {
    gpu_progress_step();
  }
}

// Another host thread's call while a record or wait of `paused_event_` is stopped in the
// driver: often one about the same event (it blocks on the event's lock until the paused call
// resumes), else anything that does not end what the paused call uses.
void Program::interleaved_step() {
  capture_step();
  if (paused_event_ != 0 && chance(60)) {
    const std::size_t index = (paused_event_ - event_key(paused_context_, 0)) / 0x10;
    for (std::size_t parked = 0; parked < parked_.size(); ++parked) {
      // A query or synchronize of it whose ticket was taken before: its call and commit now.
      if (parked_[parked].event == paused_event_ && chance(50)) return advance_parked(parked, false);
    }
    switch (pick(4)) {
      case 0:
        return record_step(paused_context_, index, false);
      case 1:
        return wait_step(paused_event_, false);
      default: {
        HostCall call;
        call.kind = chance(50) ? HostCall::Kind::event_sync : HostCall::Kind::event_query;
        call.event = paused_event_;
        workers_.checkpoint();
        call.ticket = engine_->ticket_for_event(call.event, call.kind == HostCall::Kind::event_sync);
        call.what = "event 0x" + std::to_string(call.event);
        return start_host_call(std::move(call), false);
      }
    }
  }
  const std::size_t r = pick(100);
  if (r < 30) return alloc_step();
  if (r < 55) return free_step();
  if (r < 70) return kernel_step();
  if (r < 85) return event_step();
  if (r < 90) return host_call_step(false);
  if (r < 96) return advance_parked_step();  // a call whose ticket was taken before the pause
  return gpu_progress_step();
}

void Program::interleave(std::size_t paused_worker) {
  ++coverage_.paused_driver_calls;
  const std::function<void()> other_step = [this] {
    interleaved_step();
    if (!failed()) check_invariants();
  };
  interleaving_ = true;
  paused_worker_ = paused_worker;
  const std::size_t count = 1 + pick(3);
  for (std::size_t n = 0; n < count && !failed(); ++n) {
    const std::size_t other = (paused_worker + 1 + pick(kWorkers - 1)) % kWorkers;
    workers_.post(other, other_step);
    const StepWorkers::Settled settled = workers_.settle(other, /*detect_blocking=*/true);
    ++coverage_.interleaved_steps;
    if (settled == StepWorkers::Settled::blocked) {
      // It waits for the lock the paused call holds: that call finishes first (its step must
      // not read the engine meanwhile: the blocked call may be changing it), then this one.
      ++coverage_.blocked_interleavings;
      skip_check_after_pause_ = true;
      workers_.give_turn(paused_worker);
      workers_.resume(paused_worker);
      workers_.wait_finished(paused_worker);
      workers_.give_turn(other);
      workers_.wait_finished(other);
      interleaving_ = false;
      return;
    }
    workers_.wait_finished(other);  // interleaved steps never pause
  }
  interleaving_ = false;
  workers_.give_turn(paused_worker);
  workers_.resume(paused_worker);
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
  while (!live_.empty() && !failed()) free_block(live_.size() - 1, random_stream());
  for (HostCall& call : parked_) finish_call(call);
  parked_.clear();
  ordering_.end_captures();
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
  coverage_.refused_markers += ordering_.refused();
  coverage_.capture_refusals += ordering_.capture_refusals();
  for (const PoolModel& pool : pools_) {
    const UnitCounts units = pool.backing->unit_counts();
    coverage_.medium_unit_maps += units.medium_maps;
    coverage_.large_unit_maps += units.large_maps;
    coverage_.medium_unit_unmaps += units.medium_unmaps;
    coverage_.large_unit_unmaps += units.large_unmaps;
  }
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
  workers_.run(pick(kWorkers), set_up_step);
  // One hand-over per run of 1..6 steps: the engine still sees every thread, in random order,
  // and a loaded CI machine (where each hand-over waits for the scheduler) pays less for it.
  // A step that pauses in a driver call ends its run; other workers' steps run meanwhile.
  std::size_t segment = 0;
  const std::function<void()> some_steps = [this, &segment, steps] {
    for (std::size_t n = 0; n < segment && step_index_ <= steps && !failed() && !paused_in_segment_;
         ++n, ++step_index_) {
      step();
      if (!failed() && !skip_check_after_pause_) check_invariants();
    }
  };
  step_index_ = 1;
  while (step_index_ <= steps && !failed()) {
    const std::size_t worker = pick(kWorkers);
    segment = 1 + pick(6);
    paused_in_segment_ = false;
    skip_check_after_pause_ = false;
    workers_.post(worker, some_steps);
    if (workers_.settle(worker, /*detect_blocking=*/false) == StepWorkers::Settled::paused) interleave(worker);
    workers_.wait_finished(worker);
    if (skip_check_after_pause_ && !failed()) {
      const std::function<void()> check = [this] { check_invariants(); };
      workers_.run(worker, check);  // the check the paused step skipped, now that all is quiet
    }
  }
  if (!failed()) {
    const std::function<void()> final_step = [this] { tear_down(); };
    workers_.run(pick(kWorkers), final_step);
  } else {
    engine_.reset();
  }
  coverage_.programs = 1;
  coverage_.steps = steps;
  if (coverage != nullptr) coverage->add(coverage_);
  return failure_;
}

std::string run_random_program(std::uint64_t seed, StepWorkers& workers, const ProgramOptions& options,
                               Coverage* coverage) {
  Program program(seed, workers, options);
  return program.run(coverage);
}

}  // namespace streampool::testing::model
