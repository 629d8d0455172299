// libstreampool_alloc.so's entry points (include/streampool/pluggable.h): PyTorch's and CuPy's
// pluggable allocator functions over the same hooks libstreampool.so exports, linked in and local.
//
// The process's libcuda is NVIDIA's, so the program's event records, stream waits, synchronisations,
// capture begins and ends and stream destroys never reach streampool. What follows from that:
// - captures are unseen: on first use the capture tracker is told so (capture_tracker.hpp), every
//   allocation and free asks the driver whether its stream captures (a capturing stream's calls go
//   to NVIDIA's driver unchanged, as graph memory), and streampool's marker queries run in the
//   relaxed capture mode of their thread, so that they break no capture of the program's;
// - no ordering of the program's is known: a free is reusable at once on its own stream (stream
//   order), on another one only once a marker streampool recorded on the freeing stream has been
//   seen complete, or after a synchronisation streampool made itself (streampool_empty_cache);
// - a destroyed stream's handle may come back for a new stream: a stream's identity (cuStreamGetId)
//   is checked at each call, and a handle that now names another stream is ended in the engine (its
//   pending frees then wait for a synchronisation) and registered afresh.
// Neither function blocks: the free enqueues nothing, the allocation at most records a marker.
#include "streampool/pluggable.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "driver/capture_tracker.hpp"
#include "driver/driver_table.hpp"
#include "driver/log.hpp"
#include "driver/real_library.hpp"
#include "driver/stream_registry.hpp"
#include "hooks/process_state.hpp"

namespace streampool::pluggable {

namespace {

// The handles CUDA reserves for default streams: never destroyed, never reused.
bool special_stream(CUstream stream) noexcept {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

// Once, on first use: the driver initialised (idempotent: the program did it already) and the
// capture tracker told that captures happen out of its sight.
bool ready() noexcept {
  static const bool initialised = [] {
    driver::assume_unseen_captures();
    using InitFn = CUresult (*)(unsigned);
    auto init = reinterpret_cast<InitFn>(driver::real_symbol("cuInit"));
    return init != nullptr && init(0) == CUDA_SUCCESS;
  }();
  return initialised;
}

int device_count() noexcept {
  static std::atomic<int> cached{-1};
  int count = cached.load(std::memory_order_relaxed);
  if (count >= 0) return count;
  const driver::DriverTable& table = driver::real();
  if (table.cuDeviceGetCount == nullptr || table.cuDeviceGetCount(&count) != CUDA_SUCCESS) return 0;
  cached.store(count, std::memory_order_relaxed);
  return count;
}

bool valid_device(int device) noexcept {
  if (!ready()) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) log::notice(log::Level::error, "pluggable allocator: no CUDA driver could be initialised");
    return false;
  }
  if (device >= 0 && device < device_count()) return true;
  log::notice(log::Level::warn, "pluggable allocator: device %d does not exist (%d devices)", device, device_count());
  return false;
}

// The primary context of `device`, retained once and kept (the program's own uses keep it alive too).
CUcontext primary_context(int device) noexcept {
  static std::mutex mutex;
  static std::unordered_map<int, CUcontext>* contexts = new std::unordered_map<int, CUcontext>;  // never destroyed
  std::lock_guard lock(mutex);
  try {
    auto found = contexts->find(device);
    if (found != contexts->end()) return found->second;
    const driver::DriverTable& table = driver::real();
    CUdevice handle = 0;
    CUcontext context = nullptr;
    if (table.cuDeviceGet == nullptr || table.cuDevicePrimaryCtxRetain == nullptr ||
        table.cuDeviceGet(&handle, device) != CUDA_SUCCESS ||
        table.cuDevicePrimaryCtxRetain(&context, handle) != CUDA_SUCCESS) {
      return nullptr;
    }
    contexts->emplace(device, context);
    return context;
  } catch (...) {
    return nullptr;
  }
}

// For a default stream, which means the current context's: makes `device`'s primary context
// current for the call when another one (or none) is. Created streams carry their own context.
class DeviceScope {
 public:
  DeviceScope(int device, CUstream stream) noexcept {
    if (!special_stream(stream)) return;
    const driver::DriverTable& table = driver::real();
    CUcontext current = nullptr;
    CUdevice current_device = -1;
    if (table.cuCtxGetCurrent != nullptr && table.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr &&
        table.cuCtxGetDevice != nullptr && table.cuCtxGetDevice(&current_device) == CUDA_SUCCESS &&
        current_device == device) {
      return;
    }
    CUcontext context = primary_context(device);
    if (context != nullptr && table.cuCtxPushCurrent_v2 != nullptr &&
        table.cuCtxPushCurrent_v2(context) == CUDA_SUCCESS) {
      pushed_ = true;
    }
  }
  ~DeviceScope() {
    if (!pushed_) return;
    CUcontext popped = nullptr;
    const driver::DriverTable& table = driver::real();
    if (table.cuCtxPopCurrent_v2 != nullptr) table.cuCtxPopCurrent_v2(&popped);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  bool pushed_ = false;
};

// Each created stream's identity when streampool last saw its handle.
std::mutex identities_mutex;
std::unordered_map<CUstream, unsigned long long>* identities = new std::unordered_map<CUstream, unsigned long long>;

// Whether the stream captures (or the driver cannot say): its calls then go to the driver as they are.
bool capturing(CUstream stream) noexcept {
  const driver::DriverTable& table = driver::real();
  if (table.cuStreamIsCapturing == nullptr) return false;  // a driver without captures
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult result = table.cuStreamIsCapturing(stream, &status);
  return result != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// A handle whose stream was destroyed unseen and given to a new stream: what the engine knew of the
// old one ends (its pending frees wait for a synchronisation, never for the new stream's order).
// Asked only of a stream that does not capture (cuStreamGetId would break a global capture of it).
void check_identity(CUstream stream) noexcept {
  if (special_stream(stream)) return;
  const driver::DriverTable& table = driver::real();
  if (table.cuStreamGetId == nullptr) return;
  unsigned long long id = 0;
  if (table.cuStreamGetId(stream, &id) != CUDA_SUCCESS) return;
  bool reused = false;
  try {
    std::lock_guard lock(identities_mutex);
    auto [entry, inserted] = identities->try_emplace(stream, id);
    if (!inserted && entry->second != id) {
      entry->second = id;
      reused = true;
    }
  } catch (...) {
    return;
  }
  if (!reused) return;
  interpose::HookScope scope;  // released before the allocator hooks run: they must not see it nested
  core::StreamKey key = 0;
  if (driver::known_stream_key(stream, false, &key)) {
    try {
      interpose::engine().stream_ended(key);
    } catch (...) {
    }
    driver::forget_stream(stream);
  }
  STREAMPOOL_LOG_DEBUG("pluggable allocator: stream handle %p now names another stream", static_cast<void*>(stream));
}

// Tensor.record_stream(s) through PyTorch's C++ set_record_stream_fn: the blocks used on streams
// other than their own, and those streams. At the free, the freeing stream waits for each of them
// (an event recorded there, waited for by the freeing stream: nothing blocks), so that reuse in
// the freeing stream's order comes after their work too.
std::mutex recorded_mutex;
std::unordered_map<void*, std::vector<CUstream>>* recorded = new std::unordered_map<void*, std::vector<CUstream>>;
std::atomic<std::size_t> recorded_count{0};  // the free's fast path skips the lock while it is 0

std::vector<CUstream> take_recorded(void* ptr) noexcept {
  if (recorded_count.load(std::memory_order_acquire) == 0) return {};
  std::lock_guard lock(recorded_mutex);
  auto found = recorded->find(ptr);
  if (found == recorded->end()) return {};
  std::vector<CUstream> streams = std::move(found->second);
  recorded->erase(found);
  recorded_count.fetch_sub(1, std::memory_order_release);
  return streams;
}

// The freeing stream made to wait for the work queued so far on `user`; false when that cannot be
// done (a capturing stream, a driver error), and the block must then never be reused.
bool order_after(CUstream freeing, CUstream user) noexcept {
  if (capturing(user)) return false;
  CUevent event = nullptr;
  if (cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return false;
  const bool ordered = cuEventRecord(event, user) == CUDA_SUCCESS && cuStreamWaitEvent(freeing, event, 0) == CUDA_SUCCESS;
  cuEventDestroy(event);  // released by the driver once the wait is done
  return ordered;
}

bool owned(void* ptr) noexcept {
  interpose::HookScope scope;
  try {
    return interpose::engine().owns(ptr);
  } catch (...) {
    return false;
  }
}

void* allocate(std::size_t size, int device, CUstream stream) noexcept {
  if (size == 0) return nullptr;
  if (!valid_device(device)) return nullptr;
  const DeviceScope scope(device, stream);  // first: a default stream's capture status is its context's
  if (!capturing(stream)) check_identity(stream);
  CUdeviceptr address = 0;
  const CUresult result = cuMemAllocAsync(&address, size, stream);
  if (result != CUDA_SUCCESS) {
    log::notice(log::Level::warn, "pluggable allocator: %zu bytes on device %d, stream %p: error %d", size, device,
                static_cast<void*>(stream), static_cast<int>(result));
    return nullptr;
  }
  return reinterpret_cast<void*>(address);
}

void release(void* ptr, int device, CUstream stream) noexcept {
  if (ptr == nullptr) return;
  if (!valid_device(device)) return;
  const DeviceScope scope(device, stream);  // first: a default stream's capture status is its context's
  if (capturing(stream)) {
    if (owned(ptr)) {
      // Allocated before the capture, freed inside it: the graph's work uses the block at every
      // replay, and the driver cannot free it in a graph. It stays allocated, for good.
      STREAMPOOL_LOG_DEBUG("pluggable allocator: %p freed during a capture is kept for the graph", ptr);
      return;
    }
  } else {
    check_identity(stream);
  }
  for (CUstream user : take_recorded(ptr)) {
    if (user != stream && !order_after(stream, user)) {
      log::notice(log::Level::warn, "pluggable allocator: %p, recorded on stream %p, cannot be ordered after it: kept",
                  ptr, static_cast<void*>(user));
      return;
    }
  }
  const CUresult result = cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), stream);
  if (result != CUDA_SUCCESS) {
    log::notice(log::Level::warn, "pluggable allocator: free of %p on device %d, stream %p: error %d", ptr, device,
                static_cast<void*>(stream), static_cast<int>(result));
  }
}

}  // namespace

}  // namespace streampool::pluggable

using streampool::pluggable::allocate;
using streampool::pluggable::release;

#define STREAMPOOL_PLUGGABLE_EXPORT extern "C" __attribute__((visibility("default")))

STREAMPOOL_PLUGGABLE_EXPORT void* streampool_torch_alloc(ssize_t size, int device, CUstream_st* stream) {
  if (size < 0) return nullptr;
  return allocate(static_cast<std::size_t>(size), device, stream);
}

STREAMPOOL_PLUGGABLE_EXPORT void streampool_torch_free(void* ptr, ssize_t, int device, CUstream_st* stream) {
  release(ptr, device, stream);
}

STREAMPOOL_PLUGGABLE_EXPORT void* streampool_cupy_malloc(size_t size, int device, CUstream_st* stream) {
  return allocate(size, device, stream);
}

STREAMPOOL_PLUGGABLE_EXPORT void streampool_cupy_free(void* ptr, int device, CUstream_st* stream) {
  release(ptr, device, stream);
}

STREAMPOOL_PLUGGABLE_EXPORT void streampool_torch_record_stream(void* ptr, CUstream_st* stream) {
  using namespace streampool::pluggable;
  if (ptr == nullptr) return;
  try {
    std::lock_guard lock(recorded_mutex);
    auto [entry, inserted] = recorded->try_emplace(ptr);
    if (inserted) recorded_count.fetch_add(1, std::memory_order_release);
    if (std::find(entry->second.begin(), entry->second.end(), stream) == entry->second.end()) {
      entry->second.push_back(stream);
    }
  } catch (...) {
    streampool::log::notice(streampool::log::Level::warn, "pluggable allocator: record_stream of %p: out of memory", ptr);
  }
}

STREAMPOOL_PLUGGABLE_EXPORT int streampool_empty_cache(int device) {
  using namespace streampool::pluggable;
  if (!valid_device(device)) return -1;
  CUcontext context = primary_context(device);
  const streampool::driver::DriverTable& table = streampool::driver::real();
  if (context == nullptr || table.cuCtxPushCurrent_v2 == nullptr || table.cuCtxPushCurrent_v2(context) != CUDA_SUCCESS) {
    return -1;
  }
  // The hooked calls: the synchronisation is tracked (every free of the context becomes reusable
  // anywhere), and the trim gives back what the device's current pool holds unused.
  CUresult result = cuCtxSynchronize();
  CUmemoryPool pool = nullptr;
  if (result == CUDA_SUCCESS) result = cuDeviceGetMemPool(&pool, device);
  if (result == CUDA_SUCCESS) result = cuMemPoolTrimTo(pool, 0);
  CUcontext popped = nullptr;
  table.cuCtxPopCurrent_v2(&popped);
  return result == CUDA_SUCCESS ? 0 : -1;
}

STREAMPOOL_PLUGGABLE_EXPORT void streampool_torch_empty_cache(void) {
  using namespace streampool::pluggable;
  if (!ready()) return;
  const streampool::driver::DriverTable& table = streampool::driver::real();
  for (int device = 0; device < device_count(); ++device) {
    // Only the devices in use: a device whose primary context is inactive holds nothing of ours.
    CUdevice handle = 0;
    unsigned flags = 0;
    int active = 0;
    if (table.cuDeviceGet == nullptr || table.cuDevicePrimaryCtxGetState == nullptr ||
        table.cuDeviceGet(&handle, device) != CUDA_SUCCESS ||
        table.cuDevicePrimaryCtxGetState(handle, &flags, &active) != CUDA_SUCCESS || active == 0) {
      continue;
    }
    streampool_empty_cache(device);
  }
}
