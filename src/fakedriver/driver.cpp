#include "driver.hpp"

#include <pthread.h>

#include <new>

#if defined(__SANITIZE_THREAD__)
#define FAKE_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FAKE_UNDER_TSAN 1
#endif
#endif

#include "event.hpp"

namespace fake {

Driver& Driver::instance() {
  static Driver* const driver = new Driver();  // never destroyed, see the header
  return *driver;
}

Driver::Driver() : config_(read_config_from_environment()) {
  devices_.reserve(static_cast<std::size_t>(config_.device_count));
  for (int ordinal = 0; ordinal < config_.device_count; ++ordinal) {
    auto device = std::make_unique<Device>();
    device->total_bytes = config_.memory_per_device;
    device->primary = new Context(ordinal, 0u, true);  // lives as long as the process
    {
      std::lock_guard lock(contexts_mutex_);
      contexts_.insert(device->primary);
    }
    devices_.push_back(std::move(device));
  }
  // Here: the driver exists before any stream does. Not in a TSan build: TSan lets no fork child
  // start a thread (the child handler restarts stream workers) and cannot follow locks rebuilt in
  // place; fork with threads running is outside what it supports, so the fork tests are left out
  // there, and a child that only execs (run_child_test) needs none of this.
#ifndef FAKE_UNDER_TSAN
  pthread_atfork(&Driver::before_fork, &Driver::after_fork_in_parent, &Driver::after_fork_in_child);
#endif
}

void Driver::stream_born(Stream* stream) {
  std::lock_guard lock(live_streams_mutex_);
  live_streams_.insert(stream);
}

void Driver::stream_gone(Stream* stream) {
  std::lock_guard lock(live_streams_mutex_);
  live_streams_.erase(stream);
}

// The locks are taken in the order the fake nests them (a context's submission lock before its
// streams', handle slots under the registries, a stream destroyed under streams_mutex_ in
// unregister_streams_of; nothing takes a registry lock under a stream's), so the forking thread
// holds them all across the fork and the child copies no registry or queue in mid-update. Each is
// held briefly by whoever holds it, never while waiting for stream work (a primary context's lock
// is, during a reset: not taken here), so the fork never waits for work to finish.
void Driver::before_fork() {
  Driver& driver = instance();
  driver.contexts_mutex_.lock();
  for (const Context* context : driver.contexts_) const_cast<Context*>(context)->hold_for_fork();
  for (Context* context : driver.retired_contexts_) context->hold_for_fork();
  driver.streams_mutex_.lock();
  driver.stream_handles_.hold_for_fork();
  hold_events_for_fork();
  driver.live_streams_mutex_.lock();
  for (Stream* stream : driver.live_streams_) stream->hold_for_fork();
}

void Driver::after_fork_in_parent() {
  Driver& driver = instance();
  for (Stream* stream : driver.live_streams_) stream->release_after_fork();
  driver.live_streams_mutex_.unlock();
  release_events_after_fork();
  driver.stream_handles_.release_after_fork();
  driver.streams_mutex_.unlock();
  for (Context* context : driver.retired_contexts_) context->release_after_fork();
  for (const Context* context : driver.contexts_) const_cast<Context*>(context)->release_after_fork();
  driver.contexts_mutex_.unlock();
}

void Driver::after_fork_in_child() {
  Driver& driver = instance();
  // Fresh locks rather than unlocks: the child's only thread holds them, as a copy of the forking
  // thread, and a fresh lock is a free one whatever the copy says.
  std::construct_at(&driver.contexts_mutex_);
  for (const Context* context : driver.contexts_) const_cast<Context*>(context)->reset_in_fork_child();
  for (Context* context : driver.retired_contexts_) context->reset_in_fork_child();
  std::construct_at(&driver.streams_mutex_);
  driver.stream_handles_.reset_in_fork_child();
  reset_events_in_fork_child();
  std::construct_at(&driver.live_streams_mutex_);
  // Every stream reset before any worker starts: a worker may wait for another stream's work.
  for (Stream* stream : driver.live_streams_) stream->reset_in_fork_child();
  // Under the lock: a started worker may drop a stream's last reference while the walk goes on.
  std::lock_guard lock(driver.live_streams_mutex_);
  for (Stream* stream : driver.live_streams_) stream->resume_in_fork_child();
}

CUresult Driver::initialize(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (config_.device_count == 0) return CUDA_ERROR_NO_DEVICE;
  initialized_.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

bool Driver::try_charge(CUdevice ordinal, std::uint64_t bytes) {
  Device& target = device(ordinal);
  std::uint64_t used = target.used_bytes.load();
  do {
    if (bytes > target.total_bytes || used > target.total_bytes - bytes) return false;
  } while (!target.used_bytes.compare_exchange_weak(used, used + bytes));
  return true;
}

void Driver::uncharge(CUdevice ordinal, std::uint64_t bytes) { device(ordinal).used_bytes.fetch_sub(bytes); }

Context* Driver::create_context(CUdevice device, unsigned flags) {
  std::lock_guard lock(contexts_mutex_);
  Context* context = nullptr;
  if (!reusable_contexts_.empty()) {
    context = reusable_contexts_.back();
    reusable_contexts_.pop_back();
    std::erase(retired_contexts_, context);
    context->~Context();
    new (context) Context(device, flags, false);  // the same handle, a new context (maybe another device)
  } else {
    context = new Context(device, flags, false);  // never freed: stale handles stay safe
  }
  contexts_.insert(context);
  return context;
}

bool Driver::live_context(const Context* context) {
  std::lock_guard lock(contexts_mutex_);
  return contexts_.contains(context);
}

bool Driver::forget_context(Context* context) {
  std::lock_guard lock(contexts_mutex_);
  if (contexts_.erase(context) == 0) return false;
  retired_contexts_.push_back(context);  // still reachable (a fork holds its locks), not yet reusable
  return true;
}

void Driver::retire_context(Context* context) {
  if (!config_.reuse_context_handles) return;
  unregister_events_of(context);
  std::lock_guard lock(contexts_mutex_);
  reusable_contexts_.push_back(context);
}

CUstream Driver::register_stream(std::shared_ptr<Stream> stream) {
  auto handle = static_cast<CUstream>(stream_handles_.take());
  std::unique_lock lock(streams_mutex_);
  streams_.emplace(handle, std::move(stream));
  return handle;
}

std::shared_ptr<Stream> Driver::find_stream(CUstream handle) {
  std::shared_lock lock(streams_mutex_);
  auto found = streams_.find(handle);
  return found == streams_.end() ? nullptr : found->second;
}

std::shared_ptr<Stream> Driver::unregister_stream(CUstream handle) {
  std::unique_lock lock(streams_mutex_);
  auto found = streams_.find(handle);
  if (found == streams_.end()) return nullptr;
  auto stream = std::move(found->second);
  streams_.erase(found);
  stream_handles_.give_back(handle);
  return stream;
}

void Driver::unregister_streams_of(const Context* context) {
  std::unique_lock lock(streams_mutex_);
  std::erase_if(streams_, [this, context](const auto& entry) {
    if (entry.second->context() != context) return false;
    stream_handles_.give_back(entry.first);
    return true;
  });
}

CUresult require_initialized() {
  return Driver::instance().initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult require_current_context(Context*& out) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  out = current_context();
  if (out == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (!Driver::instance().live_context(out)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return CUDA_SUCCESS;
}

CUresult require_device(CUdevice device) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  return Driver::instance().valid_device(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult resolve_stream(CUstream handle, DefaultStream default_stream, std::shared_ptr<Stream>& out) {
  if (CUresult status = require_initialized(); status != CUDA_SUCCESS) return status;
  if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    Context* context = nullptr;
    if (CUresult status = require_current_context(context); status != CUDA_SUCCESS) return status;
    const bool per_thread = handle == CU_STREAM_PER_THREAD ||
                            (handle == nullptr && default_stream == DefaultStream::per_thread);
    out = per_thread ? context->per_thread_stream() : context->legacy_stream();
    return CUDA_SUCCESS;
  }
  out = Driver::instance().find_stream(handle);
  return out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace fake
