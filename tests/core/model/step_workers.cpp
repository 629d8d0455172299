#include "model/step_workers.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

namespace streampool::testing::model {

namespace {

thread_local std::size_t t_current = StepWorkers::kNone;

// Reads a small /proc file into `buffer`; false if it cannot be read.
bool read_proc(const char* path, char* buffer, std::size_t size) {
  std::FILE* file = std::fopen(path, "r");
  if (file == nullptr) return false;
  const std::size_t length = std::fread(buffer, 1, size - 1, file);
  std::fclose(file);
  buffer[length] = '\0';
  return length > 0;
}

}  // namespace

StepWorkers::StepWorkers(std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    Worker& worker = *workers_.back();
    worker.index = i;
    worker.thread = std::thread([&worker] { loop(worker); });
  }
  for (auto& worker : workers_) {
    while (worker->tid.load(std::memory_order_acquire) == 0) std::this_thread::yield();
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

std::size_t StepWorkers::current() { return t_current; }

void StepWorkers::loop(Worker& worker) {
  t_current = worker.index;
  worker.tid.store(static_cast<int>(::syscall(SYS_gettid)), std::memory_order_release);
  std::uint32_t seen = 0;
  for (;;) {
    worker.posted.wait(seen, std::memory_order_acquire);
    seen = worker.posted.load(std::memory_order_acquire);
    if (worker.stop) return;
    worker.started.store(seen, std::memory_order_release);
    (*worker.step)();
    worker.finished.fetch_add(1, std::memory_order_release);
    worker.finished.notify_one();
    worker.signals.fetch_add(1, std::memory_order_release);
    worker.signals.notify_one();
  }
}

void StepWorkers::post(std::size_t index, const std::function<void()>& step) {
  Worker& worker = *workers_[index % workers_.size()];
  give_turn(worker.index);
  worker.step = &step;
  worker.posted.fetch_add(1, std::memory_order_release);
  worker.posted.notify_one();
}

void StepWorkers::wait_finished(std::size_t index) {
  Worker& worker = *workers_[index % workers_.size()];
  const std::uint32_t target = worker.posted.load(std::memory_order_relaxed);
  // Steps are short: spin a little before sleeping, which halves the hand-over time.
  for (int spin = 0; spin < 2000; ++spin) {
    if (worker.finished.load(std::memory_order_acquire) == target) return;
  }
  for (std::uint32_t now = worker.finished.load(std::memory_order_acquire); now != target;
       now = worker.finished.load(std::memory_order_acquire)) {
    worker.finished.wait(now, std::memory_order_acquire);
  }
}

void StepWorkers::run(std::size_t worker, const std::function<void()>& step) {
  post(worker, step);
  wait_finished(worker);
}

bool StepWorkers::sleeping_on_futex(int tid) {
  char path[64];
  char text[512];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  if (!read_proc(path, text, sizeof text)) return false;
  const char* state = nullptr;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p == ')') state = p;  // the command name may hold ')': the state follows the last one
  }
  if (state == nullptr || state[1] != ' ' || state[2] != 'S') return false;
  std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  if (!read_proc(path, text, sizeof text)) return true;  // no syscall file: sleeping is enough
  return std::strtol(text, nullptr, 10) == SYS_futex;
}

StepWorkers::Settled StepWorkers::settle(std::size_t index, bool detect_blocking) {
  Worker& worker = *workers_[index % workers_.size()];
  const std::uint32_t target = worker.posted.load(std::memory_order_relaxed);
  const auto settled = [&]() -> std::optional<Settled> {
    if (worker.finished.load(std::memory_order_acquire) == target) return Settled::finished;
    if (worker.paused.load(std::memory_order_acquire) != worker.resumed.load(std::memory_order_relaxed)) {
      return Settled::paused;
    }
    return std::nullopt;
  };
  if (!detect_blocking) {
    for (int spin = 0; spin < 2000; ++spin) {
      if (auto answer = settled()) return *answer;
    }
    for (;;) {
      const std::uint32_t seen = worker.signals.load(std::memory_order_acquire);
      if (auto answer = settled()) return *answer;
      worker.signals.wait(seen, std::memory_order_acquire);
    }
  }
  int sleeping_seen = 0;
  for (std::uint64_t round = 0;; ++round) {
    if (worker.finished.load(std::memory_order_acquire) == target) return Settled::finished;
    if (worker.paused.load(std::memory_order_acquire) != worker.resumed.load(std::memory_order_relaxed)) {
      return Settled::paused;
    }
    // Past a checkpoint and asleep on a futex twice in a row, with the step still unfinished:
    // blocked on a lock (a step never sleeps otherwise; the hand-over wait comes before it).
    if (round % 16 == 15 && worker.started.load(std::memory_order_acquire) == target) {
      sleeping_seen = sleeping_on_futex(worker.tid.load(std::memory_order_relaxed)) ? sleeping_seen + 1 : 0;
      if (sleeping_seen >= 2 && worker.finished.load(std::memory_order_acquire) != target &&
          worker.paused.load(std::memory_order_acquire) == worker.resumed.load(std::memory_order_relaxed)) {
        if (worker.checkpoint.load(std::memory_order_acquire) == target) return Settled::blocked;
        if (sleeping_seen > 20000) {
          std::fprintf(stderr, "model check: worker %zu blocked outside any checkpoint\n", index);
          std::abort();
        }
      }
    }
    std::this_thread::yield();
  }
}

void StepWorkers::resume(std::size_t index) {
  Worker& worker = *workers_[index % workers_.size()];
  worker.resumed.fetch_add(1, std::memory_order_release);
  worker.resumed.notify_one();
}

void StepWorkers::pause() {
  Worker& worker = *workers_[t_current];
  const std::uint32_t resumed = worker.resumed.load(std::memory_order_relaxed);
  worker.paused.fetch_add(1, std::memory_order_release);
  worker.signals.fetch_add(1, std::memory_order_release);
  worker.signals.notify_one();
  for (std::uint32_t now = resumed; now == resumed; now = worker.resumed.load(std::memory_order_acquire)) {
    worker.resumed.wait(now, std::memory_order_acquire);
  }
}

void StepWorkers::checkpoint() {
  Worker& worker = *workers_[t_current];
  worker.checkpoint.store(worker.started.load(std::memory_order_relaxed), std::memory_order_release);
}

void StepWorkers::await_turn() {
  const std::size_t self = t_current;
  for (int spin = 0; turn_.load(std::memory_order_acquire) != self; ++spin) {
    if (spin > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace streampool::testing::model
