// Fake contexts: a device, the context's legacy default stream, the streams created in it, and the
// legacy stream's implicit synchronisation with the blocking streams (CUDA's rule: work on the legacy
// stream waits for all earlier work on blocking streams of the context, and work on a blocking stream
// waits for earlier legacy-stream work). Non-blocking streams take no part in it.
//
// Context objects are never freed: a stale handle (destroyed context) is then still safe to look up,
// and a thread's context stack may keep pointing at it. Where asked (STREAMPOOL_FAKE_REUSE_CONTEXTS=1)
// a destroyed one is built again in place for the next create: the stale handle then names it.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "stream.hpp"

namespace fake {

class Context {
 public:
  Context(int device, unsigned flags, bool is_primary);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int device() const { return device_; }
  bool is_primary() const { return is_primary_; }
  std::uint64_t id() const { return id_.load(); }
  unsigned flags() const { return flags_.load(); }
  void set_flags(unsigned flags) { flags_.store(flags); }
  CUcontext handle() { return reinterpret_cast<CUcontext>(this); }

  std::shared_ptr<Stream> legacy_stream();
  // The calling thread's per-thread default stream in this context.
  std::shared_ptr<Stream> per_thread_stream();
  std::shared_ptr<Stream> create_stream(unsigned flags, int priority);

  // Submits work to one of this context's streams, adding the legacy-stream implicit waits.
  std::uint64_t submit(const std::shared_ptr<Stream>& stream, std::function<void()> work,
                       std::vector<TicketWait> waits = {});
  // The same for several operations queued back to back; returns the first one's ticket.
  std::uint64_t submit_all(const std::shared_ptr<Stream>& stream, std::vector<Stream::Operation> operations);
  // Waits for everything submitted so far to any stream of the context.
  void synchronize();
  // Drains and closes every stream (context destroy, primary context reset) and gives the context a
  // new identity, so that per-thread default streams of the old one are not reused.
  void tear_down();

  // Fork support (driver.cpp's pthread_atfork handlers): the context's stream-list and submission
  // locks are held across the fork, and fresh in the child.
  void hold_for_fork();
  void release_after_fork();
  void reset_in_fork_child();

  // Primary-context bookkeeping (cuDevicePrimaryCtx*).
  std::mutex primary_mutex;
  unsigned primary_retains = 0;

 private:
  std::vector<std::shared_ptr<Stream>> live_streams_locked();

  const int device_;
  const bool is_primary_;
  std::atomic<unsigned> flags_;
  std::atomic<std::uint64_t> id_;

  std::mutex streams_mutex_;
  std::shared_ptr<Stream> legacy_;
  std::vector<std::weak_ptr<Stream>> streams_;  // created and per-thread streams
  // Serialises submissions that take part in the implicit synchronisation, so two of them never
  // wait for each other.
  std::mutex implicit_sync_mutex_;
};

// The calling thread's context stack (cuCtxPush/Pop/SetCurrent).
Context* current_context();
void set_current_context(Context* context);  // replaces the top (pops when nullptr)
void push_current_context(Context* context);
Context* pop_current_context();

}  // namespace fake
