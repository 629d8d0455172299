// Steps on ordering: event records and waits through the engine's callables (which may fail,
// and may stop between the hook's tracking and the driver's action while other workers run),
// records streampool does not see, GPU progress, and host synchronisations and queries in
// three phases that other steps may separate. See program.hpp.
#include <cinttypes>
#include <cstdio>

#include "model/program.hpp"

namespace streampool::testing::model {

int Program::pause_point(bool may_pause) {
  if (!may_pause || interleaving_ || !chance(15)) return 0;
  return 1 + static_cast<int>(pick(2));
}

void Program::pause_here(core::EventKey event, const char* where) {
  paused_event_ = event;
  paused_context_ = (event - event_key(0, 0)) / 0x100;
  paused_in_segment_ = true;
  note("  ... stops in the driver, holding event 0x%" PRIxPTR "'s lock, %s: other workers run", event, where);
  workers_.pause();
  note("  ... resumes");
  paused_event_ = 0;
}

bool Program::record_driver(core::EventKey event, int instance, bool may_pause) {
  workers_.await_turn();  // a record that waited for the event's lock runs when its turn comes
  const int pause = pause_point(may_pause);
  if (pause == 1) pause_here(event, "before the driver records it");
  const bool ok = gpu_.live(instance) && !chance(8);
  if (ok) gpu_.record_event(event, instance);
  note("record event 0x%" PRIxPTR " on %s: %s", event, stream_name(instance).c_str(),
       ok ? "recorded" : "the driver refuses it");
  if (pause == 2) pause_here(event, "after the driver recorded it, before the hook's tracking");
  return ok;
}

bool Program::wait_driver(int waiter, core::EventKey event, bool may_pause) {
  workers_.await_turn();
  const int pause = pause_point(may_pause);
  if (pause == 1) pause_here(event, "before the driver makes the stream wait");
  const bool ok = gpu_.live(waiter) && !chance(8);
  const bool recorded = ok && gpu_.wait_event(waiter, event);
  note("%s waits for event 0x%" PRIxPTR ": %s", stream_name(waiter).c_str(), event,
       !ok ? "the driver refuses it" : (recorded ? "waiting" : "never recorded, a no-op"));
  if (pause == 2) pause_here(event, "after the driver's wait, before the hook's tracking");
  return ok;
}

void Program::record_step(std::size_t context, std::size_t index, bool may_pause, int instance) {
  const core::EventKey event = event_key(context, index);
  if (!contexts_[context].event_exists[index]) return;
  if (instance < 0) instance = random_stream_of(context);  // an event records on its own context's streams
  const core::StreamKey key = gpu_.key(instance);
  workers_.checkpoint();
  const bool ok = engine_->record_event(event, key, [&] { return record_driver(event, instance, may_pause); });
  workers_.await_turn();
  if (!ok) ++coverage_.failed_records;
}

void Program::wait_step(core::EventKey event, bool may_pause, int waiter) {
  if (!event_exists(event)) return;
  if (waiter < 0) waiter = random_stream();  // from any context
  const core::StreamKey key = gpu_.key(waiter);
  workers_.checkpoint();
  const bool ok = engine_->wait_event(key, event, [&] { return wait_driver(waiter, event, may_pause); });
  workers_.await_turn();
  if (!ok) ++coverage_.failed_waits;
}

// Records the hooks see only as "this event may be recorded elsewhere": an event-record node of a
// graph, a launch's completion-event attribute, a record into a capture.
void Program::untracked_record_step(std::size_t context, std::size_t index) {
  ContextModel& model = contexts_[context];
  const core::EventKey event = event_key(context, index);
  switch (pick(3)) {
    case 0:
      workers_.checkpoint();
      engine_->event_untracked(event);
      workers_.await_turn();
      model.event_in_graph[index] = true;
      note("event 0x%" PRIxPTR " goes into a graph's event-record node (untracked)", event);
      break;
    case 1: {
      workers_.checkpoint();
      engine_->event_untracked(event);
      workers_.await_turn();
      const int instance = random_stream_of(context);
      gpu_.issue(instance);  // the kernel
      gpu_.record_event(event, instance);
      note("kernel on %s with event 0x%" PRIxPTR " as its completion event (untracked)", stream_name(instance).c_str(),
           event);
      break;
    }
    default:
      workers_.checkpoint();
      engine_->record_untracked(event, [&] {
        workers_.await_turn();
        model.event_in_graph[index] = true;  // recorded when the captured graph is launched
        return true;
      });
      workers_.await_turn();
      note("event 0x%" PRIxPTR " recorded into a capture (untracked)", event);
      break;
  }
  ++coverage_.untracked_records;
}

// A graph launch: its event-record nodes record their events, and no hook sees it.
void Program::graph_launch_step() {
  const std::size_t context = random_context();
  const ContextModel& model = contexts_[context];
  const int instance = random_stream_of(context);
  gpu_.issue(instance);  // the graph's work
  std::size_t recorded = 0;
  for (std::size_t index = 0; index < kEventsPerContext; ++index) {
    if (!model.event_exists[index] || !model.event_in_graph[index]) continue;
    gpu_.record_event(event_key(context, index), instance);
    ++recorded;
  }
  coverage_.graph_launch_records += recorded;
  note("graph launch on %s records %zu events", stream_name(instance).c_str(), recorded);
}

void Program::event_step() {
  const std::size_t context = random_context();
  const std::size_t index = pick(kEventsPerContext);
  if (!contexts_[context].event_exists[index]) {
    if (!interleaving_) create_event(context, index);
    return;
  }
  const std::size_t r = pick(100);
  if (r < 45) return record_step(context, index, true);
  if (r < 82) return wait_step(event_key(random_context(), pick(kEventsPerContext)), true);
  if (r < 93) return untracked_record_step(context, index);
  graph_launch_step();
}

// The pattern events exist for: a producer stream frees a block and records an event, a consumer
// waits for it (or the host synchronizes it) and allocates the same size, which may reuse the
// block. In between, often, something happens to the event that the consumer's ordering must
// follow: another thread records it elsewhere, a graph or a launch attribute records it out of
// sight, it ends (seen or not) and a new event comes under its handle.
void Program::handoff_step() {
  if (live_.empty()) return alloc_step();
  const std::size_t context = random_context();
  const std::size_t index = pick(kEventsPerContext);
  ContextModel& model = contexts_[context];
  const core::EventKey event = event_key(context, index);
  if (!model.event_exists[index]) return create_event(context, index);
  const int producer = random_stream_of(context);
  const int consumer = random_stream();
  const std::size_t block = pick(live_.size());
  const std::size_t pool = live_[block].pool;
  const std::size_t bytes = live_[block].bytes;
  free_block(block, producer);
  record_step(context, index, false, producer);
  switch (pick(8)) {
    case 0:
      record_step(context, index, false);  // another thread's record, tracked
      break;
    case 1: {
      engine_->event_untracked(event);  // a launch with the event as its completion event
      const int elsewhere = random_stream_of(context);
      gpu_.issue(elsewhere);
      gpu_.record_event(event, elsewhere);
      ++coverage_.untracked_records;
      note("  a kernel on %s records event 0x%" PRIxPTR " as its completion event (untracked)",
           stream_name(elsewhere).c_str(), event);
      break;
    }
    case 2:
      engine_->event_untracked(event);  // an event-record node, and the graph's launch
      model.event_in_graph[index] = true;
      ++coverage_.untracked_records;
      graph_launch_step();
      break;
    case 3:
    case 4:
      if (pick(2) == 0) {
        engine_->event_destroyed(event);
      } else {
        model.event_ended_unseen[index] = true;
      }
      note("  event 0x%" PRIxPTR " ends (%s)", event, model.event_ended_unseen[index] ? "unseen" : "destroyed");
      gpu_.destroy_event(event);
      model.event_exists[index] = false;
      create_event(context, index);  // and a new one comes under its handle
      break;
    case 5:
      graph_launch_step();  // a graph made earlier with the event in it, launched again
      break;
    default:
      break;
  }
  if (chance(70)) {
    wait_step(event, false, consumer);
  } else {
    HostCall call;
    call.kind = chance(50) ? HostCall::Kind::event_sync : HostCall::Kind::event_query;
    call.event = event;
    call.ticket = engine_->ticket_for_event(event, call.kind == HostCall::Kind::event_sync);
    char what[40];
    std::snprintf(what, sizeof what, "event 0x%" PRIxPTR, event);
    call.what = what;
    start_host_call(std::move(call), false);
  }
  alloc_on(pool, consumer, bytes);
}

void Program::gpu_progress_step() {
  if (chance(10)) {
    gpu_.progress_up_to(gpu_.everything_issued());
    note("GPU: everything issued so far has run");
    return;
  }
  // Any instance, destroyed ones included: their work still runs.
  const int instance = static_cast<int>(pick(gpu_.instance_count()));
  gpu_.progress_instance(instance);
  note("GPU: %s has run everything queued on it (and what that waited for)", stream_name(instance).c_str());
}

// --- host calls in phases -------------------------------------------------------------------------

void Program::host_call_step(bool may_park) {
  HostCall call;
  const std::size_t r = pick(100);
  char what[160];
  if (r < 45) {
    call.kind = r < 30 ? HostCall::Kind::stream_sync : HostCall::Kind::stream_query;
    call.instance = random_stream();
    if (!usable_here(call.instance)) return;
    call.ticket = engine_->ticket_for_stream(gpu_.key(call.instance), call.kind == HostCall::Kind::stream_sync);
    call.position_at_ticket = model::clock_at(gpu_.last_clock(call.instance), call.instance);
    std::snprintf(what, sizeof what, "%s %s", r < 30 ? "synchronize" : "query", stream_name(call.instance).c_str());
  } else if (r < 72) {
    call.kind = r < 60 ? HostCall::Kind::event_sync : HostCall::Kind::event_query;
    call.event = event_key(random_context(), pick(kEventsPerContext));
    if (!event_exists(call.event)) return;
    workers_.checkpoint();
    call.ticket = engine_->ticket_for_event(call.event, call.kind == HostCall::Kind::event_sync);
    std::snprintf(what, sizeof what, "%s event 0x%" PRIxPTR, r < 60 ? "synchronize" : "query", call.event);
  } else if (r < 90) {
    call.kind = HostCall::Kind::context_sync;
    call.group = contexts_[random_context()].handle;
    call.ticket = engine_->ticket_for_group(call.group, true);
    ++coverage_.context_syncs;
    std::snprintf(what, sizeof what, "synchronize context 0x%" PRIxPTR, call.group);
  } else {
    call.kind = HostCall::Kind::device_sync;
    call.ticket = engine_->ticket_for_all(true);
    std::snprintf(what, sizeof what, "synchronize the device");
  }
  call.what = what;
  start_host_call(std::move(call), may_park);
}

void Program::start_host_call(HostCall call, bool may_park) {
  workers_.await_turn();  // an event's ticket may have waited for the event's lock
  if (call.event != 0) call.records_at_ticket = gpu_.event_records(call.event);
  if (may_park && parked_.size() < 4 && chance(30)) {
    note("%s: ticket taken; the driver call comes later", call.what.c_str());
    parked_.push_back(std::move(call));
    return;
  }
  if (!driver_call(call)) return;
  if (may_park && parked_.size() < 4 && chance(15)) {
    call.driver_done = true;
    note("%s: returned; the commit comes later", call.what.c_str());
    parked_.push_back(std::move(call));
    return;
  }
  commit_call(call);
}

// The real call: what it waits for is decided now, from the GPU's state now. False when it
// failed or found the work unfinished (a query): the hook then commits nothing.
bool Program::driver_call(HostCall& call) {
  const auto failed_call = [&](const char* why) {
    ++coverage_.failed_host_calls;
    note("%s: the driver returns an error (%s)", call.what.c_str(), why);
    return false;
  };
  switch (call.kind) {
    case HostCall::Kind::stream_sync:
      if (!gpu_.live(call.instance)) return failed_call("the stream is gone");
      if (chance(3)) return failed_call("an error");
      gpu_.complete_instance(call.instance);
      check_sync_proves_reuse(call.instance, call.position_at_ticket);
      break;
    case HostCall::Kind::stream_query:
      if (!gpu_.live(call.instance)) return failed_call("the stream is gone");
      if (!gpu_.idle(call.instance)) {
        note("%s: not ready", call.what.c_str());
        return false;
      }
      ++coverage_.successful_queries;
      gpu_.complete_instance(call.instance);  // already run: now the program knows it
      check_sync_proves_reuse(call.instance, call.position_at_ticket);
      break;
    case HostCall::Kind::event_sync:
    case HostCall::Kind::event_query: {
      if (!event_exists(call.event)) return failed_call("the event is gone");
      const VectorClock* clock = gpu_.event_clock(call.event);  // the event's record now
      if (call.kind == HostCall::Kind::event_query) {
        if (clock != nullptr && !gpu_.is_complete(*clock)) {
          note("%s: not ready", call.what.c_str());
          return false;
        }
        if (clock != nullptr) gpu_.complete_up_to(*clock);  // already run: now the program knows it
        ++coverage_.successful_queries;
      } else {
        if (chance(3)) return failed_call("an error");
        if (clock != nullptr) gpu_.complete_up_to(*clock);
      }
      break;
    }
    case HostCall::Kind::context_sync:
      if (!context_live(call.group)) return failed_call("the context is gone");
      gpu_.complete_up_to(gpu_.group_issued(call.group));
      break;
    case HostCall::Kind::device_sync:
      gpu_.complete_up_to(gpu_.everything_issued());
      break;
  }
  note("%s: the driver call returns success", call.what.c_str());
  return true;
}

void Program::commit_call(HostCall& call) {
  workers_.checkpoint();
  engine_->commit(call.ticket);
  workers_.await_turn();
  if (call.event != 0 && gpu_.event_records(call.event) != call.records_at_ticket) ++coverage_.event_tickets_overtaken;
  note("%s: committed", call.what.c_str());
}

void Program::finish_call(HostCall& call) {
  if (!call.driver_done && !driver_call(call)) return;
  commit_call(call);
}

void Program::advance_parked_step() {
  if (parked_.empty()) return host_call_step(true);
  advance_parked(pick(parked_.size()), true);
}

void Program::advance_parked(std::size_t index, bool may_record) {
  HostCall call = std::move(parked_[index]);
  parked_.erase(parked_.begin() + static_cast<std::ptrdiff_t>(index));
  if (!call.driver_done) {
    ++coverage_.parked_driver_calls;
    if (may_record && call.event != 0 && event_exists(call.event) && chance(40)) {
      // Another thread records the event between this call's ticket and its driver call.
      const std::size_t context = (call.event - event_key(0, 0)) / 0x100;
      record_step(context, (call.event - event_key(context, 0)) / 0x10, false);
    }
    if (!driver_call(call)) return;
    if (chance(40)) {
      call.driver_done = true;
      note("%s: returned; the commit comes later", call.what.c_str());
      parked_.push_back(std::move(call));
      return;
    }
  }
  ++coverage_.parked_commits;
  commit_call(call);
}

// A host synchronisation of `instance` completed: the blocks it allocated whose allocation is
// complete may now be used anywhere, so their earlier owners must be done.
void Program::check_sync_proves_reuse(int instance, std::uint32_t up_to) {
  for (const LiveBlock& block : live_) {
    if (failed()) return;
    if (block.uses.front().instance != instance || !gpu_.is_complete(block.uses.front())) continue;
    if (block.uses.front().position > up_to) continue;  // allocated while the call was under way
    const std::string why = oracle_.previous_owners_done(block.id, gpu_);
    if (!why.empty()) fail(why);
    if (block.needed_wait) ++coverage_.syncs_proving_reuse;
  }
}

void Program::device_synchronize(const char* why) {
  const core::SyncTicket ticket = engine_->ticket_for_all(true);
  gpu_.complete_up_to(gpu_.everything_issued());
  engine_->commit(ticket);
  note("  device synchronize (%s)", why);
}

void Program::synchronize_stream(int instance, const char* why) {
  const core::SyncTicket ticket = engine_->ticket_for_stream(gpu_.key(instance), true);
  gpu_.complete_instance(instance);
  check_sync_proves_reuse(instance);
  engine_->commit(ticket);
  note("  synchronize %s (%s)", stream_name(instance).c_str(), why);
}

void Program::synchronize_for(int instance, const char* why) {
  if (usable_here(instance)) return synchronize_stream(instance, why);
  if (!gpu_.live(instance)) return device_synchronize(why);
  const std::uintptr_t group = gpu_.group(instance);
  const core::SyncTicket ticket = engine_->ticket_for_group(group, true);
  gpu_.complete_up_to(gpu_.group_issued(group));
  engine_->commit(ticket);
  note("  synchronize context 0x%" PRIxPTR " (%s)", group, why);
}

// Before each step, now and then: a stream the calling worker may name enters a capture (the
// legacy stream cannot capture), or every capture ends; captures last a few steps.
void Program::capture_step() {
  if (ordering_.any_capture() && capture_rng_() % 100 < 15) {
    ordering_.end_captures();
    ++coverage_.capture_changes;
    note("every capture ends");
    return;
  }
  if (capture_rng_() % 100 >= 2) return;
  std::vector<int> candidates;
  for (std::size_t context = 0; context < kContexts; ++context) {
    if (!contexts_[context].live) continue;
    for (std::size_t index = 0; index < kCreatedStreams; ++index) {
      candidates.push_back(gpu_.instance(key_of(StreamSlot{context, Role::created, index})));
    }
    candidates.push_back(gpu_.instance(key_of(StreamSlot{context, Role::per_thread, StepWorkers::current() % kWorkers})));
  }
  std::erase_if(candidates, [](int instance) { return instance < 0; });
  if (candidates.empty()) return;
  const int instance = candidates[capture_rng_() % candidates.size()];
  if (ordering_.capturing(gpu_.key(instance))) return;
  ordering_.set_capturing(gpu_.key(instance), true);
  ++coverage_.capture_changes;
  note("%s begins a capture", stream_name(instance).c_str());
}

}  // namespace streampool::testing::model
