#include "stream.hpp"

#include <atomic>
#include <chrono>
#include <thread>

namespace fake {
namespace {

std::atomic<std::uint64_t> next_stream_id{1};
// A worker with nothing to do for this long exits; the next submission starts a new one.
constexpr auto kIdleWorkerLifetime = std::chrono::seconds(2);

}  // namespace

Stream::Stream(Context* owner, StreamKind kind, unsigned flags, int priority)
    : owner_(owner), kind_(kind), flags_(flags), priority_(priority), id_(next_stream_id++) {}

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
    Operation operation = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    for (auto& wait : operation.waits) wait.stream->wait_until_reached(wait.ticket);
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

}  // namespace fake
