#include "context.hpp"

#include <algorithm>
#include <unordered_map>

namespace fake {
namespace {

std::atomic<std::uint64_t> next_context_id{1};

thread_local std::vector<Context*> context_stack;

// A thread's per-thread default streams, one per context identity; closed when the thread ends.
struct PerThreadStreams {
  std::unordered_map<std::uint64_t, std::shared_ptr<Stream>> by_context_id;
  PerThreadStreams() = default;
  PerThreadStreams(const PerThreadStreams&) = delete;
  PerThreadStreams& operator=(const PerThreadStreams&) = delete;
  ~PerThreadStreams() {
    for (auto& [context_id, stream] : by_context_id) stream->close();
  }
};
thread_local PerThreadStreams per_thread_streams;

}  // namespace

Context::Context(int device, unsigned flags, bool is_primary)
    : device_(device), is_primary_(is_primary), flags_(flags), id_(next_context_id++) {}

std::shared_ptr<Stream> Context::legacy_stream() {
  std::lock_guard lock(streams_mutex_);
  if (!legacy_) legacy_ = std::make_shared<Stream>(this, StreamKind::legacy_default, 0u, 0);
  return legacy_;
}

std::shared_ptr<Stream> Context::per_thread_stream() {
  const std::uint64_t context_id = id();
  auto& mine = per_thread_streams.by_context_id[context_id];
  if (!mine) {
    mine = std::make_shared<Stream>(this, StreamKind::per_thread_default, 0u, 0);
    std::lock_guard lock(streams_mutex_);
    // Ended threads' streams go: a weak_ptr keeps a make_shared object's memory alive.
    std::erase_if(streams_, [](const std::weak_ptr<Stream>& weak) { return weak.expired(); });
    streams_.push_back(mine);
  }
  return mine;
}

std::shared_ptr<Stream> Context::create_stream(unsigned flags, int priority) {
  auto stream = std::make_shared<Stream>(this, StreamKind::created, flags, priority);
  std::lock_guard lock(streams_mutex_);
  std::erase_if(streams_, [](const std::weak_ptr<Stream>& weak) { return weak.expired(); });
  streams_.push_back(stream);
  return stream;
}

std::vector<std::shared_ptr<Stream>> Context::live_streams_locked() {
  std::vector<std::shared_ptr<Stream>> live;
  live.reserve(streams_.size() + 1);
  if (legacy_) live.push_back(legacy_);
  for (auto& weak : streams_) {
    if (auto stream = weak.lock()) live.push_back(std::move(stream));
  }
  return live;
}

std::uint64_t Context::submit(const std::shared_ptr<Stream>& stream, std::function<void()> work,
                              std::vector<TicketWait> waits) {
  std::vector<Stream::Operation> operations;
  operations.push_back(Stream::Operation{std::move(work), std::move(waits)});
  return submit_all(stream, std::move(operations));
}

std::uint64_t Context::submit_all(const std::shared_ptr<Stream>& stream, std::vector<Stream::Operation> operations) {
  if (!stream->synchronizes_with_legacy()) return stream->enqueue_all(std::move(operations));
  std::vector<TicketWait>& waits = operations.front().waits;  // the implicit waits go before the first

  std::lock_guard submission(implicit_sync_mutex_);
  if (stream->kind() == StreamKind::legacy_default) {
    std::vector<std::shared_ptr<Stream>> others;
    {
      std::lock_guard lock(streams_mutex_);
      others = live_streams_locked();
    }
    for (auto& other : others) {
      if (other == stream || !other->synchronizes_with_legacy()) continue;
      const std::uint64_t ticket = other->last_submitted();
      if (!other->reached(ticket)) waits.push_back(TicketWait{other, ticket});
    }
  } else {
    std::shared_ptr<Stream> legacy;
    {
      std::lock_guard lock(streams_mutex_);
      legacy = legacy_;
    }
    if (legacy) {
      const std::uint64_t ticket = legacy->last_submitted();
      if (!legacy->reached(ticket)) waits.push_back(TicketWait{legacy, ticket});
    }
  }
  return stream->enqueue_all(std::move(operations));
}

void Context::synchronize() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard lock(streams_mutex_);
    streams = live_streams_locked();
  }
  for (auto& stream : streams) stream->drain();
}

void Context::tear_down() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard lock(streams_mutex_);
    streams = live_streams_locked();
    streams_.clear();
    legacy_.reset();
  }
  for (auto& stream : streams) {
    stream->drain();
    stream->close();
  }
  id_.store(next_context_id++);
}

void Context::hold_for_fork() {
  implicit_sync_mutex_.lock();  // in the order submit_all takes them
  streams_mutex_.lock();
}

void Context::release_after_fork() {
  streams_mutex_.unlock();
  implicit_sync_mutex_.unlock();
}

void Context::reset_in_fork_child() {
  std::construct_at(&streams_mutex_);
  std::construct_at(&implicit_sync_mutex_);
}

Context* current_context() { return context_stack.empty() ? nullptr : context_stack.back(); }

void set_current_context(Context* context) {
  if (context == nullptr) {
    if (!context_stack.empty()) context_stack.pop_back();
  } else if (context_stack.empty()) {
    context_stack.push_back(context);
  } else {
    context_stack.back() = context;
  }
}

void push_current_context(Context* context) { context_stack.push_back(context); }

Context* pop_current_context() {
  if (context_stack.empty()) return nullptr;
  Context* top = context_stack.back();
  context_stack.pop_back();
  return top;
}

}  // namespace fake
