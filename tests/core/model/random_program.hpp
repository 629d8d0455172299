// One random program against a fresh engine, checked after every step (see
// model_check_test.cpp for what the checks are and why they are independent of the engine).
//
// run_random_program(seed, workers) builds the program from the seed alone, so a failure is
// replayed by running the same seed again (the worker that runs each step is drawn from the
// same generator). It returns an empty string when every check held, else a report with the
// seed, the failing step and the last steps of the program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/step_workers.hpp"

namespace streampool::testing::model {

// What the programs exercised, summed over a run: a model check that never reuses memory
// across streams, never inserts a dependency or never runs out of memory checks little.
struct Coverage {
  std::size_t programs = 0;
  std::size_t steps = 0;
  std::size_t allocations = 0;
  std::size_t reuses_across_streams = 0;  // a block overlapping one freed on another stream instance
  std::size_t reuses_through_inserted_waits = 0;  // ordered only by waits the engine put in
  std::size_t out_of_memory = 0;
  std::size_t inserted_waits = 0;
  std::size_t markers = 0;
  std::size_t refused_markers = 0;       // records and waits of the engine's the driver refused
  std::size_t capture_changes = 0;       // a stream entering or leaving a capture
  std::size_t capture_refusals = 0;      // marker records, waits, queries refused for a capture
  std::size_t parked_commits = 0;        // tickets committed after other steps ran in between
  std::size_t parked_driver_calls = 0;   // real calls made after other steps ran since the ticket
  std::size_t event_tickets_overtaken = 0;  // an event recorded again between ticket and commit
  std::size_t successful_queries = 0;
  std::size_t syncs_proving_reuse = 0;   // a host sync of a stream whose block needed a wait proved
  std::size_t streams_destroyed = 0;
  std::size_t unseen_stream_ends = 0;    // a stream gone without the engine told; its key reused
  std::size_t host_frees = 0;            // cuMemFree: context synchronize, then free_completed
  std::size_t legacy_steps = 0;          // allocs and frees on a legacy default stream
  std::size_t per_thread_steps = 0;      // allocs and frees on a per-thread default stream
  std::size_t failed_records = 0;        // the driver refused the program's cuEventRecord
  std::size_t failed_waits = 0;
  std::size_t failed_host_calls = 0;     // synchronize or query calls that returned an error
  std::size_t untracked_records = 0;     // graph nodes, launch attributes, captures
  std::size_t graph_launch_records = 0;  // records streampool never sees
  std::size_t events_recreated = 0;      // a new event under a handle whose old event ended unseen
  std::size_t paused_driver_calls = 0;   // a record or wait stopped between tracking and driver
  std::size_t interleaved_steps = 0;     // steps of other workers run meanwhile
  std::size_t blocked_interleavings = 0; // of those, blocked by the paused call's event lock
  std::size_t multi_context_programs = 0;
  std::size_t context_syncs = 0;
  std::size_t contexts_ended = 0;
  std::size_t contexts_ended_unseen = 0;
  std::size_t context_handles_reused = 0;
  std::size_t medium_allocations = 0;    // 64 MiB .. 1 GiB
  std::size_t large_allocations = 0;     // 1 GiB and more
  std::size_t medium_unit_maps = 0;      // 32 MiB mapping units
  std::size_t large_unit_maps = 0;       // 256 MiB mapping units
  std::size_t medium_unit_unmaps = 0;
  std::size_t large_unit_unmaps = 0;

  void add(const Coverage& other);
  std::string summary() const;
};

struct ProgramOptions {
  std::size_t min_steps = 100;
  std::size_t max_steps = 300;
  // Frees that rely on the legacy stream's implicit order alone to follow a use on a partner
  // stream (legal CUDA). Off: the program orders such a free with an event. A host
  // synchronisation of the freeing stream proves such a free only through the marker the engine
  // records in the stream first (HappensBefore::ticket_for_stream).
  bool implicit_frees = true;
};

std::string run_random_program(std::uint64_t seed, StepWorkers& workers, const ProgramOptions& options,
                               Coverage* coverage);

}  // namespace streampool::testing::model
