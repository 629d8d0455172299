// A fake stream: an in-order queue of host-side operations run by a worker thread of its own, so
// that a long operation on one stream really delays that stream and nothing else.
//
// Every operation gets a ticket (1, 2, 3 ... in submission order); `completed` is the ticket of the
// last finished one, so "has ticket t finished" is `completed >= t`. An operation may first wait for
// tickets of other streams (event waits, the legacy stream's implicit synchronisation): the worker
// blocks on those before running it. Tickets are taken at submission, so waits always point to
// earlier work and cannot form a cycle.
//
// The worker starts on the first submission and exits after a while without work, or once the
// stream is destroyed and drained; it owns a reference to the stream while it runs.
//
// Fork: a child has no worker threads, whatever the parent had (an idle worker lingers a while
// after its last work, so a parent that forks soon after using a stream has one). The driver's
// pthread_atfork handlers (driver.cpp) hold every stream's lock across the fork, so the child copies
// consistent queues, and then give each stream of the child fresh locks and no worker, starting one
// where work is queued. An operation waiting for other streams' work when the fork came is still
// queued and runs in the child; one whose work had started counts as done there (its thread, and
// whatever it had left to do, stayed in the parent). NVIDIA's driver serves no call in a forked
// child; the fake does, so that fork handling above it (streampool's) can be tested. A fork from
// inside a stream's own work (a host function that forks) is not supported: the child's copy of
// that worker would run on beside the new one.
#pragma once

#include <cuda.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace fake {

class Context;
class Stream;

struct TicketWait {
  std::shared_ptr<Stream> stream;
  std::uint64_t ticket = 0;
};

enum class StreamKind { legacy_default, per_thread_default, created };

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  Stream(Context* owner, StreamKind kind, unsigned flags, int priority);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Context* context() const { return owner_; }
  StreamKind kind() const { return kind_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_; }
  std::uint64_t id() const { return id_; }
  // Takes part in the legacy default stream's implicit synchronisation (as CUDA's blocking streams).
  bool synchronizes_with_legacy() const {
    return kind_ != StreamKind::created || (flags_ & CU_STREAM_NON_BLOCKING) == 0;
  }

  // One queued operation: `work` (may be empty: a pure wait) run after `waits`.
  struct Operation {
    std::function<void()> work;
    std::vector<TicketWait> waits;
  };
  // Queues `work` to run after `waits`; returns its ticket.
  std::uint64_t enqueue(std::function<void()> work, std::vector<TicketWait> waits);
  // Queues several operations back to back (nothing else queued between them: a graph launch);
  // returns the first one's ticket, the others follow it one by one. `operations` is not empty.
  std::uint64_t enqueue_all(std::vector<Operation> operations);
  bool reached(std::uint64_t ticket);
  void wait_until_reached(std::uint64_t ticket);
  std::uint64_t last_submitted();
  bool idle() { return reached(last_submitted()); }
  // Blocks until everything submitted so far has run.
  void drain() { wait_until_reached(last_submitted()); }
  // No more work will come: the worker exits once the queue is empty.
  void close();

  // Graph capture state (the fake records no captured work; work on a capturing stream is not run).
  struct Capture {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    std::uint64_t id = 0;
    CUgraph graph = nullptr;
  };
  Capture capture();
  void set_capture(const Capture& capture);

  // Fork support, called by the driver's pthread_atfork handlers only (see above).
  void hold_for_fork();          // before: takes the lock, so no queue is mid-update in the copy
  void release_after_fork();     // in the parent
  void reset_in_fork_child();    // in the child, first for every stream: fresh locks, no worker
  void resume_in_fork_child();   // then: a worker where work is queued

 private:
  void start_or_notify_worker_locked();
  void run_worker();

  Context* const owner_;
  const StreamKind kind_;
  const unsigned flags_;
  const int priority_;
  const std::uint64_t id_;

  std::mutex mutex_;
  std::condition_variable work_arrived_;
  std::condition_variable progressed_;
  std::deque<Operation> queue_;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  bool worker_running_ = false;
  bool closed_ = false;
  Capture capture_;
};

}  // namespace fake
