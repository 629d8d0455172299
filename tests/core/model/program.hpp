// Program: one random program of the model check (random_program.hpp is its entry point).
//
// The program is what the interposer's hooks would make of a CUDA program: each step is a
// driver call as the hooks report it to the engine, and its effect on the GPU, in the GpuModel.
// Its world:
//   contexts    up to three at once (stream groups), each with a legacy default stream, a
//               per-thread default stream for each worker (blocking) and three created streams;
//               a context may end (hooked: a ticket for each stream, the driver waits for the
//               context's work, commits, stream_ended for each; or unseen) and a new one take
//               its place, its handle and stream keys often those of the old one;
//   events      four per context, recorded on that context's streams, waited on from anywhere;
//               records and waits may fail; records streampool does not see (graph nodes,
//               launch attributes, captures) untrack an event; an event may end unseen and a
//               new one come under its handle (event_created);
//   pools       three, with random caps, flags and release thresholds; sizes in every mapping
//               unit regime (large ones in a few programs);
//   captures    a stream enters or leaves a capture (any mode, begun or ended by any worker, also
//               while another worker's record or wait is paused): the ordering then refuses the
//               engine's markers on it, and every marker query while any capture runs; the
//               program's own work on it goes on as before (the interposer would hand it to
//               the driver; what is checked is that the engine copes with the refusals);
//   host calls  synchronize / query of a stream or event, context synchronize, device
//               synchronize, each in three phases (ticket, driver call, commit) that other steps
//               may separate; cuMemFree (a context synchronize, then free_completed).
// A record or wait may pause between the hook's tracking and the driver's action (inside the
// engine's callable, holding the event's lock); steps of other workers then run, and those
// that need the same lock block until it resumes (step_workers.hpp).
// Not part of the model check's interface: included only by its own .cpp files.
#pragma once

#include <atomic>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/engine.hpp"
#include "model/gpu_model.hpp"
#include "model/model_ordering.hpp"
#include "model/random_program.hpp"
#include "model/reuse_oracle.hpp"
#include "model/step_workers.hpp"
#include "model/watched_backing.hpp"

namespace streampool::testing::model {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;
inline constexpr std::size_t GiB = 1024 * MiB;
inline constexpr std::size_t kWorkers = 4;
inline constexpr std::size_t kContexts = 3;          // context slots
inline constexpr std::size_t kCreatedStreams = 3;    // per context
inline constexpr std::size_t kEventsPerContext = 4;

enum class Role { legacy, per_thread, created };

struct StreamSlot {
  std::size_t context = 0;
  Role role = Role::created;
  std::size_t index = 0;  // the worker of a per-thread stream, the number of a created one
};

struct ContextModel {
  bool live = false;
  std::uintptr_t handle = 0;  // the CUcontext: the stream group of its streams
  std::array<bool, kEventsPerContext> event_exists{};
  std::array<bool, kEventsPerContext> event_in_graph{};  // a graph launch may record it
  std::array<bool, kEventsPerContext> event_ended_unseen{};  // its last event ended untold
};

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
  std::vector<OpRef> uses;  // the allocation's position and the kernels that touched it
  bool needed_wait = false;  // its reuse was ordered only by waits the engine inserted
};

// A host synchronisation or query, in phases: ticket (the hook's tracking), driver call (the
// GPU runs what the call waits for, decided when the call is made), commit.
struct HostCall {
  enum class Kind { stream_sync, stream_query, event_sync, event_query, context_sync, device_sync };
  Kind kind = Kind::device_sync;
  bool driver_done = false;  // the real call returned success: only the commit is left
  core::SyncTicket ticket;
  int instance = -1;          // stream calls
  core::EventKey event = 0;   // event calls
  std::uintptr_t group = 0;   // context synchronize
  std::uint64_t records_at_ticket = 0;
  // Stream calls: the stream's last position when the call began (its ticket). Only blocks
  // allocated by then are the call's to prove: an allocation another thread makes while the call
  // is in the driver may or may not be covered, on NVIDIA's driver too, so no program relies on it.
  std::uint32_t position_at_ticket = 0;
  std::string what;
};

class Program {
 public:
  Program(std::uint64_t seed, StepWorkers& workers, const ProgramOptions& options)
      : seed_(seed), rng_(seed), workers_(workers), options_(options) {}

  std::string run(Coverage* coverage);

 private:
  // --- generator helpers (program.cpp)
  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  bool chance(unsigned percent) { return rng_() % 100 < percent; }
  std::size_t random_size();
  std::size_t random_pool() { return chance(50) ? 0 : 1 + pick(pools_.size() - 1); }
  std::size_t random_context();  // a live one
  int random_stream();           // a live instance the calling worker may use
  int random_stream_of(std::size_t context);
  std::string stream_name(int instance) const;

  // --- the world (program_lifetimes.cpp)
  static core::StreamKey key_of(const StreamSlot& slot, std::uintptr_t handle);
  core::StreamKey key_of(const StreamSlot& slot) const { return key_of(slot, contexts_[slot.context].handle); }
  static core::EventKey event_key(std::size_t context, std::size_t index) {
    return 0xE000 + 0x100 * context + 0x10 * index;
  }
  static bool per_thread_key(core::StreamKey key) { return key >= 0x100000 && (key & 0xFF) == 2; }
  // A live instance the calling worker may name (another thread's per-thread stream it may not).
  bool usable_here(int instance) const;
  bool event_exists(core::EventKey event) const;
  bool context_live(std::uintptr_t handle) const;
  std::vector<StreamSlot> slots_of(std::size_t context) const;
  std::uintptr_t free_context_handle();
  void open_context(std::size_t context, bool hooked);
  void destroy_stream_step();
  void context_end_step();
  void event_lifetime_step();
  void create_event(std::size_t context, std::size_t index);

  // --- memory (program_memory.cpp)
  void alloc_step() { alloc_on(random_pool(), random_stream(), random_size()); }
  void alloc_on(std::size_t pool_index, int instance, std::size_t bytes);
  void free_step();
  void free_block(std::size_t index, int instance);
  void order_free_after_uses(const LiveBlock& block, int instance);
  void host_free_step();
  void invalid_free_step();
  void kernel_step();
  void trim_step();
  void attribute_step();

  // --- ordering (program_ordering.cpp)
  void event_step();
  // On `instance` (or a random stream of the event's context); `waiter` (or a random stream).
  void record_step(std::size_t context, std::size_t index, bool may_pause, int instance = -1);
  void wait_step(core::EventKey event, bool may_pause, int waiter = -1);
  void handoff_step();
  void untracked_record_step(std::size_t context, std::size_t index);
  void capture_step();
  void graph_launch_step();
  bool record_driver(core::EventKey event, int instance, bool may_pause);
  bool wait_driver(int waiter, core::EventKey event, bool may_pause);
  // Where a record or wait stops for other workers' steps: 0 nowhere, 1 before the driver
  // acts, 2 after it (and before the hook's tracking).
  int pause_point(bool may_pause);
  void pause_here(core::EventKey event, const char* where);
  void gpu_progress_step();
  void host_call_step(bool may_park);
  void advance_parked_step();
  void advance_parked(std::size_t index, bool may_record);  // the parked call's next phase
  void start_host_call(HostCall call, bool may_park);
  bool driver_call(HostCall& call);  // false: the call failed or found nothing to commit
  void commit_call(HostCall& call);
  void finish_call(HostCall& call);  // the remaining phases, at once
  void device_synchronize(const char* why);
  void synchronize_stream(int instance, const char* why);
  void synchronize_for(int instance, const char* why);  // the stream if this thread may name it, else its context
  // Blocks allocated on the instance up to `up_to` (its position when the call began).
  void check_sync_proves_reuse(int instance, std::uint32_t up_to = UINT32_MAX);

  // --- the run (program.cpp)
  void set_up();
  void step();
  void interleaved_step();  // on another worker while one is paused in a driver call
  void interleave(std::size_t paused_worker);
  void tear_down();
  void check_invariants();
  void note(const char* format, ...) __attribute__((format(printf, 2, 3)));
  void fail(const std::string& what);
  bool failed() const { return !failure_.empty(); }

  const std::uint64_t seed_;
  std::mt19937_64 rng_;
  // Captures draw from a generator of their own, so that the rest of a seed's program stays the
  // one it was before captures were modelled.
  std::mt19937_64 capture_rng_{seed_ ^ 0xC0FFEE};
  StepWorkers& workers_;
  const ProgramOptions options_;

  GpuModel gpu_;
  ModelOrdering ordering_{gpu_};
  std::optional<core::Engine> engine_;
  ReuseOracle oracle_;
  std::vector<PoolModel> pools_;
  std::vector<LiveBlock> live_;
  std::vector<HostCall> parked_;
  std::array<ContextModel, kContexts> contexts_{};
  std::size_t context_count_ = 1;
  std::size_t legalising_event_ = 0;
  bool large_sizes_ = false;
  // The self-tuning release policy (a clock of 10 ms per step), pool 0's threshold left unset,
  // and trims that are sometimes Engine::release_unused instead. By seed, so that the other
  // programs' random choices stay as they were.
  bool auto_release_ = false;

  // Pauses and interleaving (program.cpp): written by the main thread between hand-overs, or by
  // the worker that holds the turn.
  bool interleaving_ = false;        // the running step runs while another is paused
  bool paused_in_segment_ = false;   // a step of this segment paused: the segment ends with it
  bool skip_check_after_pause_ = false;  // a blocked step may be changing the engine meanwhile
  std::size_t paused_worker_ = StepWorkers::kNone;
  core::EventKey paused_event_ = 0;
  std::size_t paused_context_ = 0;

  // Atomic: the fake clock of auto release reads it from whichever worker's step commits a
  // ticket, while another worker's run advances it.
  std::atomic<std::size_t> step_index_{0};
  std::deque<std::string> trace_;
  std::string failure_;
  Coverage coverage_;
};

}  // namespace streampool::testing::model
