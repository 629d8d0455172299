// The program's world and its lifetimes: contexts (each a stream group) with their default and
// created streams and their events; streams destroyed and created again under the same key;
// contexts ending, seen by the hooks or not, and new ones taking their place, often under the
// old handles; events destroyed and created under old handles. See program.hpp.
#include <cinttypes>

#include "model/program.hpp"

namespace streampool::testing::model {

namespace {
// Context handles (CUcontext values): few, so that a new context often gets an old one's.
constexpr std::uintptr_t kHandles[] = {0x100000, 0x200000, 0x300000, 0x400000, 0x500000};
}  // namespace

// The keys the interposer gives: a legacy stream is its context + 1, a per-thread stream its
// thread's slot for the context + 2; a created stream is its handle.
core::StreamKey Program::key_of(const StreamSlot& slot, std::uintptr_t handle) {
  switch (slot.role) {
    case Role::legacy:
      return handle + 1;
    case Role::per_thread:
      return handle + 0x100 * (slot.index + 1) + 2;
    case Role::created:
      break;
  }
  return 0x1000 * (1 + kCreatedStreams * slot.context + slot.index);
}

std::vector<StreamSlot> Program::slots_of(std::size_t context) const {
  std::vector<StreamSlot> slots{StreamSlot{context, Role::legacy, 0}};
  for (std::size_t worker = 0; worker < kWorkers; ++worker) slots.push_back(StreamSlot{context, Role::per_thread, worker});
  for (std::size_t index = 0; index < kCreatedStreams; ++index) slots.push_back(StreamSlot{context, Role::created, index});
  return slots;
}

bool Program::usable_here(int instance) const {
  if (instance < 0 || !gpu_.live(instance)) return false;
  const core::StreamKey key = gpu_.key(instance);
  return !per_thread_key(key) || ((key & 0xFFFFF) >> 8) == StepWorkers::current() % kWorkers + 1;
}

bool Program::event_exists(core::EventKey event) const {
  const std::size_t context = (event - event_key(0, 0)) / 0x100;
  const std::size_t index = (event - event_key(context, 0)) / 0x10;
  return context < context_count_ && index < kEventsPerContext && contexts_[context].event_exists[index];
}

bool Program::context_live(std::uintptr_t handle) const {
  for (std::size_t context = 0; context < context_count_; ++context) {
    if (contexts_[context].live && contexts_[context].handle == handle) return true;
  }
  return false;
}

std::uintptr_t Program::free_context_handle() {
  std::vector<std::uintptr_t> free;
  for (std::uintptr_t handle : kHandles) {
    if (!context_live(handle)) free.push_back(handle);
  }
  return free[pick(free.size())];
}

// A new context in the slot: its default streams appear with it; each created stream's
// creation is hooked (the key starts fresh: stream_ended), and so is each event's.
void Program::open_context(std::size_t context, bool /*hooked*/) {
  ContextModel& model = contexts_[context];
  model.live = true;
  for (const StreamSlot& slot : slots_of(context)) {
    core::StreamKind kind = core::StreamKind::blocking;  // per-thread streams too
    if (slot.role == Role::legacy) kind = core::StreamKind::legacy_default;
    if (slot.role == Role::created && (slot.index == 1 || (slot.index == 2 && chance(50)))) {
      kind = core::StreamKind::non_blocking;
    }
    const core::StreamKey key = key_of(slot);
    gpu_.open_stream(key, kind, model.handle);
    ordering_.remember(key);
    if (slot.role == Role::created) engine_->stream_ended(key);
  }
  for (std::size_t index = 0; index < kEventsPerContext; ++index) create_event(context, index);
}

void Program::create_event(std::size_t context, std::size_t index) {
  ContextModel& model = contexts_[context];
  const core::EventKey key = event_key(context, index);
  engine_->event_created(key);  // cuEventCreate's hook
  workers_.await_turn();
  if (model.event_ended_unseen[index]) ++coverage_.events_recreated;
  model.event_exists[index] = true;
  model.event_in_graph[index] = false;
  model.event_ended_unseen[index] = false;
  gpu_.destroy_event(key);
  note("create event 0x%" PRIxPTR " in context 0x%" PRIxPTR, key, model.handle);
}

void Program::event_lifetime_step() {
  const std::size_t context = random_context();
  const std::size_t index = pick(kEventsPerContext);
  ContextModel& model = contexts_[context];
  const core::EventKey key = event_key(context, index);
  if (!model.event_exists[index]) return create_event(context, index);
  if (chance(70)) {
    engine_->event_destroyed(key);
    note("destroy event 0x%" PRIxPTR, key);
  } else {
    // Gone where the hooks did not see it: only the next creation under its handle tells.
    model.event_ended_unseen[index] = true;
    note("event 0x%" PRIxPTR " ends unseen by the tracking", key);
  }
  gpu_.destroy_event(key);
  model.event_exists[index] = false;
  model.event_in_graph[index] = false;
}

void Program::destroy_stream_step() {
  const std::size_t context = random_context();
  const StreamSlot slot{context, Role::created, pick(kCreatedStreams)};
  const core::StreamKey key = key_of(slot);
  const int old_instance = gpu_.instance(key);
  const bool hooked = chance(85);
  if (hooked) {
    engine_->stream_destroyed(key);
  } else {
    ++coverage_.unseen_stream_ends;  // its queued work still runs; the engine learns at the next creation
  }
  gpu_.close_stream(key);
  // The key comes back at once as a new stream of a random kind (CUDA reuses handles); the
  // creation's hook wipes what the old stream meant.
  const core::StreamKind kind = chance(50) ? core::StreamKind::blocking : core::StreamKind::non_blocking;
  const int instance = gpu_.open_stream(key, kind, contexts_[context].handle);
  engine_->stream_ended(key);
  ++coverage_.streams_destroyed;
  note("%s %s; the key is now %s", hooked ? "destroy" : "unseen end of", stream_name(old_instance).c_str(),
       stream_name(instance).c_str());
}

// cuCtxDestroy, a primary context's reset or last release: the hook takes a ticket for the context's
// work, the driver destroys the context once its work has run, the hook commits and
// ends every stream. The context's events end with it, unseen. Or the end goes unseen entirely.
// A new context takes the slot, often under the same handle (and so the same default stream keys).
void Program::context_end_step() {
  const std::size_t context = random_context();
  ContextModel& model = contexts_[context];
  const std::uintptr_t old_handle = model.handle;
  const bool hooked = chance(80);
  const std::vector<StreamSlot> slots = slots_of(context);
  core::SyncTicket ticket;  // the hook's: the whole context's work, as a context synchronize
  if (hooked) ticket = engine_->ticket_for_group(old_handle, true);
  gpu_.complete_up_to(gpu_.group_issued(old_handle));
  for (const StreamSlot& slot : slots) {
    gpu_.close_stream(key_of(slot));
    if (!hooked) ordering_.forget_unseen(key_of(slot));
  }
  for (std::size_t index = 0; index < kEventsPerContext; ++index) {
    gpu_.destroy_event(event_key(context, index));
    model.event_exists[index] = false;
    model.event_in_graph[index] = false;
    model.event_ended_unseen[index] = true;
  }
  if (hooked) {
    engine_->commit(ticket);
    for (const StreamSlot& slot : slots) engine_->stream_ended(key_of(slot));
  }
  model.live = false;
  ++coverage_.contexts_ended;
  if (!hooked) ++coverage_.contexts_ended_unseen;
  model.handle = chance(50) ? old_handle : free_context_handle();
  if (model.handle == old_handle) ++coverage_.context_handles_reused;
  note("context 0x%" PRIxPTR " ends (%s); a new context 0x%" PRIxPTR " takes its place", old_handle,
       hooked ? "hooked: tickets, commit, its streams ended" : "unseen by the tracking", model.handle);
  open_context(context, hooked);
}

}  // namespace streampool::testing::model
