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
  std::size_t out_of_memory = 0;
  std::size_t inserted_waits = 0;
  std::size_t markers = 0;
  std::size_t parked_commits = 0;        // tickets committed after other steps ran in between
  std::size_t successful_queries = 0;
  std::size_t streams_destroyed = 0;
  std::size_t host_frees = 0;            // free_completed
  std::size_t legacy_steps = 0;          // allocs and frees on the legacy default stream

  void add(const Coverage& other);
  std::string summary() const;
};

struct ProgramOptions {
  std::size_t min_steps = 100;
  std::size_t max_steps = 300;
};

std::string run_random_program(std::uint64_t seed, StepWorkers& workers, const ProgramOptions& options,
                               Coverage* coverage);

}  // namespace streampool::testing::model
