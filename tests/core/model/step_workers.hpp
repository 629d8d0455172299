// StepWorkers: a few host threads that run the model check's steps one at a time.
//
// run(worker, step) hands `step` (one or a few steps of a program) to that thread and waits
// until it has run, so the program stays sequential (and replayable from its seed) while the engine sees calls from several
// threads, with its thread-local caches warm from earlier steps and earlier engines.
// The hand-over is an atomic sequence number with wait/notify (a futex on Linux), which is
// also what orders the model's plain data between the threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace streampool::testing::model {

class StepWorkers {
 public:
  explicit StepWorkers(std::size_t count);
  ~StepWorkers();
  StepWorkers(const StepWorkers&) = delete;
  StepWorkers& operator=(const StepWorkers&) = delete;

  std::size_t size() const { return workers_.size(); }
  void run(std::size_t worker, const std::function<void()>& step);

 private:
  struct Worker {
    std::atomic<std::uint32_t> posted{0};    // bumped by run()
    std::atomic<std::uint32_t> finished{0};  // bumped by the worker
    const std::function<void()>* step = nullptr;
    bool stop = false;
    std::thread thread;
  };
  static void loop(Worker& worker);

  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace streampool::testing::model
