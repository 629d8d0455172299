#include "model/step_workers.hpp"

namespace streampool::testing::model {

StepWorkers::StepWorkers(std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    Worker& worker = *workers_.back();
    worker.thread = std::thread([&worker] { loop(worker); });
  }
}

StepWorkers::~StepWorkers() {
  for (auto& worker : workers_) {
    worker->stop = true;
    worker->posted.fetch_add(1, std::memory_order_release);
    worker->posted.notify_one();
    worker->thread.join();
  }
}

void StepWorkers::loop(Worker& worker) {
  std::uint32_t seen = 0;
  for (;;) {
    worker.posted.wait(seen, std::memory_order_acquire);
    seen = worker.posted.load(std::memory_order_acquire);
    if (worker.stop) return;
    (*worker.step)();
    worker.finished.fetch_add(1, std::memory_order_release);
    worker.finished.notify_one();
  }
}

void StepWorkers::run(std::size_t index, const std::function<void()>& step) {
  Worker& worker = *workers_[index % workers_.size()];
  const std::uint32_t before = worker.finished.load(std::memory_order_acquire);
  worker.step = &step;
  worker.posted.fetch_add(1, std::memory_order_release);
  worker.posted.notify_one();
  // Steps are short: spin a little before sleeping, which halves the hand-over time.
  for (int spin = 0; spin < 2000; ++spin) {
    if (worker.finished.load(std::memory_order_acquire) != before) return;
  }
  while (worker.finished.load(std::memory_order_acquire) == before) worker.finished.wait(before, std::memory_order_acquire);
}

}  // namespace streampool::testing::model
