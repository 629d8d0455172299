#include "driver.hpp"

#include <new>

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
  if (config_.reuse_context_handles && !retired_contexts_.empty()) {
    context = retired_contexts_.back();
    retired_contexts_.pop_back();
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
  return contexts_.erase(context) != 0;
}

void Driver::retire_context(Context* context) {
  std::lock_guard lock(contexts_mutex_);
  retired_contexts_.push_back(context);
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
