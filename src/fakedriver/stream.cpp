#include "stream.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <system_error>
#include <thread>

#include "driver.hpp"

namespace fake {
namespace {

std::atomic<std::uint64_t> next_stream_id{1};
// A worker with nothing to do for this long exits; the next submission starts a new one.
constexpr auto kIdleWorkerLifetime = std::chrono::seconds(2);

}  // namespace

Stream::Stream(Context* owner, StreamKind kind, unsigned flags, int priority)
    : owner_(owner), kind_(kind), flags_(flags), priority_(priority), id_(next_stream_id++) {
  Driver::instance().stream_born(this);  // reachable for the fork handlers
}

Stream::~Stream() { Driver::instance().stream_gone(this); }

std::uint64_t Stream::enqueue(std::function<void()> work, std::vector<TicketWait> waits) {
  std::unique_lock lock(mutex_);
  queue_.push_back(Operation{std::move(work), std::move(waits)});
  const std::uint64_t ticket = ++submitted_;
  start_or_notify_worker_locked();
  return ticket;
}

std::uint64_t Stream::enqueue_all(std::vector<Operation> operations) {
  std::unique_lock lock(mutex_);
  const std::uint64_t first = submitted_ + 1;
  for (Operation& operation : operations) queue_.push_back(std::move(operation));
  submitted_ += operations.size();
  start_or_notify_worker_locked();
  return first;
}

void Stream::start_or_notify_worker_locked() {
  if (!worker_running_) {
    worker_running_ = true;
    std::thread([self = shared_from_this()] { self->run_worker(); }).detach();
  } else {
    work_arrived_.notify_one();
  }
}

void Stream::run_worker() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      if (closed_) break;
      if (!work_arrived_.wait_for(lock, kIdleWorkerLifetime, [this] { return !queue_.empty() || closed_; })) {
        break;  // idle: let the thread go
      }
      continue;
    }
    // The operation stays queued while it waits for other streams' work, so that a fork meanwhile
    // leaves it queued in the child, which runs it (see stream.hpp). The element does not move
    // while others are queued behind it, and only this worker takes it off.
    const std::vector<TicketWait>& waits = queue_.front().waits;
    lock.unlock();
    for (const auto& wait : waits) wait.stream->wait_until_reached(wait.ticket);
    lock.lock();
    Operation operation = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (operation.work) operation.work();
    operation = Operation{};  // drop references (events, streams) before reporting progress
    lock.lock();
    ++completed_;
    progressed_.notify_all();
  }
  worker_running_ = false;
}

bool Stream::reached(std::uint64_t ticket) {
  std::lock_guard lock(mutex_);
  return completed_ >= ticket;
}

void Stream::wait_until_reached(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  progressed_.wait(lock, [&] { return completed_ >= ticket; });
}

std::uint64_t Stream::last_submitted() {
  std::lock_guard lock(mutex_);
  return submitted_;
}

void Stream::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  work_arrived_.notify_all();
}

Stream::Capture Stream::capture() {
  std::lock_guard lock(mutex_);
  return capture_;
}

void Stream::set_capture(const Capture& capture) {
  std::lock_guard lock(mutex_);
  capture_ = capture;
}

void Stream::hold_for_fork() { mutex_.lock(); }

void Stream::release_after_fork() { mutex_.unlock(); }

void Stream::reset_in_fork_child() {
  // The forking thread holds the lock (hold_for_fork), and the condition variables may count
  // waiters that were threads of the parent: new ones, not an unlock.
  std::construct_at(&mutex_);
  std::construct_at(&work_arrived_);
  std::construct_at(&progressed_);
  // The operation a worker had taken off the queue (its work started) counts as done.
  completed_ = submitted_ - queue_.size();
  worker_running_ = false;
}

void Stream::resume_in_fork_child() {
  std::unique_lock lock(mutex_);
  if (queue_.empty()) return;
  // A stream whose last reference goes in a destructor that the fork interrupted in the parent
  // runs nothing more: its destructor never completes in the child.
  std::shared_ptr<Stream> self = weak_from_this().lock();
  if (!self) return;
  try {
    worker_running_ = true;
    std::thread([self = std::move(self)] { self->run_worker(); }).detach();
  } catch (const std::system_error&) {
    worker_running_ = false;  // the next submission tries again
  }
}

}  // namespace fake
