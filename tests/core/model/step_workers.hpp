// StepWorkers: a few host threads that run the model check's steps.
//
// run(worker, step) hands `step` (one or a few steps of a program) to that thread and waits
// until it has run, so the program stays sequential (and replayable from its seed) while the
// engine sees calls from several threads, with its thread-local caches warm from earlier steps
// and earlier engines.
//
// A step may also stop in the middle of a driver call (pause(), from inside the callable that
// Engine::record_event or wait_event runs while it holds the event's lock), so that steps of
// other workers run between a hook's tracking and the driver's action, as other host threads'
// calls do. post() starts a step without waiting; settle() waits until it has finished, paused,
// or blocked: its thread sleeps in the kernel on a futex (a lock the paused worker holds: the
// engine's event lock), which is read from /proc/self/task/<tid>/{stat,syscall}, so that the
// model needs no knowledge of the engine's locks. A blocked step continues once the paused one
// resumes and releases the lock.
// Whichever threads run, only one touches the program's own data at a time: the one holding
// the turn. A step passes checkpoint() right before each engine call that may block: settle()
// reports a step blocked only after it passed one, which also orders everything the step did
// before it ahead of what the paused worker does once resumed. post() gives the turn to the
// posted worker; a worker that may have been blocked
// calls await_turn() before touching the program's data again, and the main thread hands the
// turn back to it once the paused worker has finished.
// The hand-overs are atomic sequence numbers with wait/notify (a futex on Linux), which is also
// what orders the model's plain data between the threads.
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
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  enum class Settled { finished, paused, blocked };

  explicit StepWorkers(std::size_t count);
  ~StepWorkers();
  StepWorkers(const StepWorkers&) = delete;
  StepWorkers& operator=(const StepWorkers&) = delete;

  std::size_t size() const { return workers_.size(); }
  // post() and wait_finished().
  void run(std::size_t worker, const std::function<void()>& step);

  // --- main thread -------------------------------------------------------------------------
  // Hands `step` to the worker (and the turn with it) without waiting; `step` must outlive it.
  void post(std::size_t worker, const std::function<void()>& step);
  // Waits until the posted step has finished or paused, or, with detect_blocking, until its
  // thread sleeps on a futex (blocked on a lock another worker holds).
  Settled settle(std::size_t worker, bool detect_blocking);
  void wait_finished(std::size_t worker);
  void resume(std::size_t worker);  // a paused worker continues
  void give_turn(std::size_t worker) { turn_.store(worker, std::memory_order_release); }

  // --- a worker's thread -------------------------------------------------------------------
  void pause();       // until resume()
  void checkpoint();  // an engine call that may block follows
  void await_turn();  // until the turn is this worker's
  // The worker whose thread calls this; kNone on any other thread.
  static std::size_t current();

 private:
  struct Worker {
    std::atomic<std::uint32_t> posted{0};    // bumped by post()
    std::atomic<std::uint32_t> started{0};   // bumped by the worker as it takes the step
    std::atomic<std::uint32_t> finished{0};  // bumped by the worker
    std::atomic<std::uint32_t> paused{0};    // bumped by pause()
    std::atomic<std::uint32_t> resumed{0};   // bumped by resume()
    std::atomic<std::uint32_t> signals{0};   // bumped (and notified) on finishing and on pausing
    std::atomic<std::uint32_t> checkpoint{0};  // the step (posted number) that passed checkpoint()
    std::atomic<int> tid{0};
    std::size_t index = 0;
    const std::function<void()>* step = nullptr;
    bool stop = false;
    std::thread thread;
  };
  static void loop(Worker& worker);
  static bool sleeping_on_futex(int tid);

  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<std::size_t> turn_{kNone};
};

}  // namespace streampool::testing::model
