#include "stream_registry.hpp"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "capture_tracker.hpp"
#include "device_context.hpp"
#include "driver_table.hpp"

namespace streampool::driver {

namespace detail {
// Starts at 1: zero-initialised cache entries (epoch 0) are never valid.
std::atomic<std::uint64_t> route_epoch{1};
}  // namespace detail

void invalidate_routes() noexcept { detail::route_epoch.fetch_add(1, std::memory_order_acq_rel); }

namespace {

constexpr std::uintptr_t kTagMask = 3;
constexpr std::uintptr_t kLegacyTag = 1;
constexpr std::uintptr_t kPerThreadTag = 2;

struct StreamEntry {
  CUcontext context = nullptr;
  CUdevice device = -1;
  core::StreamKind kind = core::StreamKind::blocking;
};

// Everything shared between threads. Allocated once and never destroyed (hooks run during exit);
// replaced wholesale in a forked child, whose copy of the lock may be held by a vanished thread.
struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<std::uintptr_t, StreamEntry> streams;           // created streams
  std::unordered_map<std::uintptr_t, CUdevice> contexts;             // context -> device
  std::unordered_map<core::StreamKey, CUcontext> per_thread_streams;  // live threads' keys
  // The registry a forked child abandoned for this one: kept reachable, so that a leak checker
  // does not report at the child's exit what was abandoned on purpose.
  Registry* abandoned_before_fork = nullptr;
};

std::atomic<Registry*> shared_registry{nullptr};
std::atomic<bool> partners_seen{false};  // see implicit_partners_seen
std::atomic<PerThreadExitHandler> per_thread_exit_handler{nullptr};

Registry& registry() noexcept {
  Registry* current = shared_registry.load(std::memory_order_acquire);
  if (current != nullptr) [[likely]] return *current;
  auto* fresh = new Registry;
  if (shared_registry.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;
  return *current;
}

// Per-thread caches: trivially constructible, so reaching them costs no TLS guard.
struct CachedStream {
  std::uintptr_t handle;
  std::uint64_t epoch;
  CUcontext context;
  CUdevice device;
};
constexpr unsigned kStreamCacheSlots = 16;
thread_local CachedStream cached_streams[kStreamCacheSlots];

struct CachedContext {
  CUcontext context;
  std::uint64_t epoch;
  CUdevice device;
};
thread_local CachedContext cached_context;

// This thread's per-thread default streams: slot i holds the context it stands for (null: free).
// Its address is the stream's key, so a key names exactly one thread and context. A context's
// end frees its slots in every thread (forget_context, under the registry's lock), so a thread
// that meets more contexts over its life than it has slots keeps finding one; a slot is
// therefore read and written atomically (relaxed: the lock orders the rest).
constexpr int kPerThreadSlots = 64;
thread_local CUcontext per_thread_slots[kPerThreadSlots];

CUcontext slot_context(CUcontext& slot) noexcept {
  return std::atomic_ref<CUcontext>(slot).load(std::memory_order_relaxed);
}
void set_slot_context(CUcontext& slot, CUcontext context) noexcept {
  std::atomic_ref<CUcontext>(slot).store(context, std::memory_order_relaxed);
}

// Tells the engine at thread exit that this thread's per-thread streams are gone.
struct PerThreadStreamsExit {
  bool armed = false;
  ~PerThreadStreamsExit() {
    if (!armed) return;
    PerThreadExitHandler handler = per_thread_exit_handler.load(std::memory_order_acquire);
    Registry& shared = registry();
    for (CUcontext& slot : per_thread_slots) {
      if (slot_context(slot) == nullptr) continue;
      auto key = reinterpret_cast<core::StreamKey>(&slot) + kPerThreadTag;
      if (handler != nullptr) handler(key);
      std::unique_lock lock(shared.mutex);
      shared.per_thread_streams.erase(key);
      set_slot_context(slot, nullptr);
    }
  }
};
thread_local PerThreadStreamsExit per_thread_streams_exit;

bool own_per_thread_slot(std::uintptr_t slot_address) noexcept {
  auto first = reinterpret_cast<std::uintptr_t>(&per_thread_slots[0]);
  auto end = reinterpret_cast<std::uintptr_t>(&per_thread_slots[kPerThreadSlots]);
  return slot_address >= first && slot_address < end;
}

// A handle that is not even mapped memory would crash the real driver (it dereferences it):
// answer CUDA_ERROR_INVALID_HANDLE instead. Only asked for handles never seen before.
bool looks_like_handle(std::uintptr_t handle) noexcept {
  static const long page_bytes = sysconf(_SC_PAGESIZE);
  auto page = static_cast<std::uintptr_t>(page_bytes);
  if (handle < page || (handle & kTagMask) != 0) return false;
  unsigned char residency = 0;
  void* first_page = reinterpret_cast<void*>(handle & ~(page - 1));
  return mincore(first_page, page, &residency) == 0 || errno != ENOMEM;
}

CUresult device_for_context(CUcontext context, CUdevice* device) noexcept {
  std::uint64_t epoch = route_epoch();
  if (cached_context.context == context && cached_context.epoch == epoch) [[likely]] {
    *device = cached_context.device;
    return CUDA_SUCCESS;
  }
  Registry& shared = registry();
  auto address = reinterpret_cast<std::uintptr_t>(context);
  bool found = false;
  {
    std::shared_lock lock(shared.mutex);
    auto it = shared.contexts.find(address);
    if (it != shared.contexts.end()) {
      *device = it->second;
      found = true;
    }
  }
  if (!found) {
    CUresult result = device_of_context(context, device);
    if (result != CUDA_SUCCESS) return result;
    try {
      std::unique_lock lock(shared.mutex);
      shared.contexts.emplace(address, *device);
    } catch (...) {
      // Out of memory: answer without caching.
    }
  }
  cached_context = CachedContext{context, epoch, *device};
  return CUDA_SUCCESS;
}

CUresult register_stream_entry(CUstream stream, unsigned flags, StreamEntry* entry) noexcept;

CUresult register_created_stream(CUstream stream, StreamEntry* entry) noexcept {
  Registry& shared = registry();
  auto handle = reinterpret_cast<std::uintptr_t>(stream);
  {
    std::shared_lock lock(shared.mutex);
    auto it = shared.streams.find(handle);
    if (it != shared.streams.end()) {
      *entry = it->second;
      return CUDA_SUCCESS;
    }
  }
  if (!looks_like_handle(handle)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& table = real();
  if (table.cuStreamGetFlags == nullptr) return missing_entry_result();
  // Measured on driver 580: cuStreamGetFlags of a capturing stream fails and invalidates the
  // capture. Streams created through the hooks are registered with their flags at creation; one
  // first seen while it captures (or while a capture begins anywhere: the fence keeps a begin out
  // of the query) cannot be named until the capture ends.
  unsigned flags = 0;
  {
    const CaptureFence fence;
    if (!fence.admitted()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    bool capturing = false;
    CUresult result = stream_capturing(stream, false, &capturing);
    if (result != CUDA_SUCCESS) return result;
    if (capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    result = table.cuStreamGetFlags(stream, &flags);
    if (result != CUDA_SUCCESS) return result;
  }
  return register_stream_entry(stream, flags, entry);
}

CUresult register_stream_entry(CUstream stream, unsigned flags, StreamEntry* entry) noexcept {
  const DriverTable& table = real();
  if (table.cuStreamGetCtx == nullptr) return missing_entry_result();
  CUcontext context = nullptr;
  CUresult result = table.cuStreamGetCtx(stream, &context);
  if (result != CUDA_SUCCESS) return result;
  CUdevice device = -1;
  result = device_for_context(context, &device);
  if (result != CUDA_SUCCESS) return result;
  entry->context = context;
  entry->device = device;
  entry->kind = (flags & CU_STREAM_NON_BLOCKING) != 0 ? core::StreamKind::non_blocking
                                                      : core::StreamKind::blocking;
  if (entry->kind == core::StreamKind::blocking) partners_seen.store(true, std::memory_order_release);
  try {
    Registry& shared = registry();
    std::unique_lock lock(shared.mutex);
    shared.streams.insert_or_assign(reinterpret_cast<std::uintptr_t>(stream), *entry);
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

unsigned cache_slot(std::uintptr_t handle) noexcept {
  return static_cast<unsigned>((handle >> 4) ^ (handle >> 12)) & (kStreamCacheSlots - 1);
}

// This thread's key for the per-thread default stream of `context`; 0 when all slots are taken.
core::StreamKey per_thread_key(CUcontext context) noexcept {
  for (CUcontext& slot : per_thread_slots) {
    if (slot_context(slot) == context) [[likely]] return reinterpret_cast<core::StreamKey>(&slot) + kPerThreadTag;
  }
  for (CUcontext& slot : per_thread_slots) {
    if (slot_context(slot) != nullptr) continue;
    auto key = reinterpret_cast<core::StreamKey>(&slot) + kPerThreadTag;
    try {
      Registry& shared = registry();
      std::unique_lock lock(shared.mutex);
      shared.per_thread_streams[key] = context;
      set_slot_context(slot, context);  // under the lock, as forget_context clears it
    } catch (...) {
      return 0;
    }
    per_thread_streams_exit.armed = true;
    partners_seen.store(true, std::memory_order_release);
    return key;
  }
  return 0;
}

enum class Flavor { legacy, per_thread, created };

Flavor flavor_of(CUstream stream, bool per_thread_variant) noexcept {
  if (stream == nullptr) return per_thread_variant ? Flavor::per_thread : Flavor::legacy;
  if (stream == CU_STREAM_LEGACY) return Flavor::legacy;
  if (stream == CU_STREAM_PER_THREAD) return Flavor::per_thread;
  return Flavor::created;
}

}  // namespace

CUresult resolve_stream(CUstream stream, bool per_thread_variant, StreamRoute* route) noexcept {
  Flavor flavor = flavor_of(stream, per_thread_variant);
  if (flavor == Flavor::created) [[likely]] {
    auto handle = reinterpret_cast<std::uintptr_t>(stream);
    std::uint64_t epoch = route_epoch();
    CachedStream& cached = cached_streams[cache_slot(handle)];
    if (cached.handle == handle && cached.epoch == epoch) [[likely]] {
      route->key = handle;
      route->context = cached.context;
      route->device = cached.device;
      return CUDA_SUCCESS;
    }
    StreamEntry entry;
    CUresult result = register_created_stream(stream, &entry);
    if (result != CUDA_SUCCESS) return result;
    cached = CachedStream{handle, epoch, entry.context, entry.device};
    route->key = handle;
    route->context = entry.context;
    route->device = entry.device;
    return CUDA_SUCCESS;
  }
  const DriverTable& table = real();
  if (table.cuCtxGetCurrent == nullptr) return missing_entry_result();
  CUcontext context = nullptr;
  CUresult result = table.cuCtxGetCurrent(&context);
  if (result != CUDA_SUCCESS) return result;
  if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  result = device_for_context(context, &route->device);
  if (result != CUDA_SUCCESS) return result;
  route->context = context;
  if (flavor == Flavor::legacy) {
    route->key = reinterpret_cast<core::StreamKey>(context) + kLegacyTag;
  } else {
    route->key = per_thread_key(context);
    if (route->key == 0) return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

bool known_stream_key(CUstream stream, bool per_thread_variant, core::StreamKey* key) noexcept {
  if (flavor_of(stream, per_thread_variant) != Flavor::created) return false;
  auto handle = reinterpret_cast<std::uintptr_t>(stream);
  Registry& shared = registry();
  std::shared_lock lock(shared.mutex);
  if (shared.streams.find(handle) == shared.streams.end()) return false;
  *key = handle;
  return true;
}

core::Status target_of_key(core::StreamKey key, StreamTarget* target) noexcept {
  switch (key & kTagMask) {
    case kLegacyTag: {
      target->stream = CU_STREAM_LEGACY;
      target->context = reinterpret_cast<CUcontext>(key - kLegacyTag);
      return core::Status::success;
    }
    case kPerThreadTag: {
      std::uintptr_t slot_address = key - kPerThreadTag;
      if (!own_per_thread_slot(slot_address)) return core::Status::not_supported;
      CUcontext context = slot_context(*reinterpret_cast<CUcontext*>(slot_address));
      if (context == nullptr) return core::Status::invalid_value;
      target->stream = CU_STREAM_PER_THREAD;
      target->context = context;
      return core::Status::success;
    }
    case 0: {
      Registry& shared = registry();
      std::shared_lock lock(shared.mutex);
      auto it = shared.streams.find(key);
      if (it == shared.streams.end()) return core::Status::invalid_value;
      target->stream = reinterpret_cast<CUstream>(key);
      target->context = it->second.context;
      return core::Status::success;
    }
    default:
      return core::Status::invalid_value;
  }
}

core::StreamKind kind_of_key(core::StreamKey key) noexcept {
  switch (key & kTagMask) {
    case kLegacyTag:
      return core::StreamKind::legacy_default;
    case kPerThreadTag:
      return core::StreamKind::blocking;
    default: {
      Registry& shared = registry();
      std::shared_lock lock(shared.mutex);
      auto it = shared.streams.find(key);
      return it == shared.streams.end() ? core::StreamKind::blocking : it->second.kind;
    }
  }
}

std::uintptr_t context_of_key(core::StreamKey key) noexcept {
  if ((key & kTagMask) == kLegacyTag) return key - kLegacyTag;
  Registry& shared = registry();
  std::shared_lock lock(shared.mutex);
  if ((key & kTagMask) == kPerThreadTag) {
    auto it = shared.per_thread_streams.find(key);
    return it == shared.per_thread_streams.end() ? 0 : reinterpret_cast<std::uintptr_t>(it->second);
  }
  auto it = shared.streams.find(key);
  return it == shared.streams.end() ? 0 : reinterpret_cast<std::uintptr_t>(it->second.context);
}

CUresult stream_created(CUstream stream, unsigned flags) noexcept {
  // Before anything can fail: the stream exists, whether or not its registration succeeds.
  if ((flags & CU_STREAM_NON_BLOCKING) == 0) partners_seen.store(true, std::memory_order_release);
  forget_stream(stream);
  StreamEntry entry;
  return register_stream_entry(stream, flags, &entry);
}

void forget_stream(CUstream stream) noexcept {
  Registry& shared = registry();
  {
    std::unique_lock lock(shared.mutex);
    shared.streams.erase(reinterpret_cast<std::uintptr_t>(stream));
  }
  invalidate_routes();
}

std::vector<core::StreamKey> keys_of_context(CUcontext context) {
  std::vector<core::StreamKey> keys;
  keys.push_back(reinterpret_cast<core::StreamKey>(context) + kLegacyTag);
  Registry& shared = registry();
  std::shared_lock lock(shared.mutex);
  for (const auto& [handle, entry] : shared.streams) {
    if (entry.context == context) keys.push_back(handle);
  }
  for (const auto& [key, owner] : shared.per_thread_streams) {
    if (owner == context) keys.push_back(key);
  }
  return keys;
}

void forget_context(CUcontext context) noexcept {
  Registry& shared = registry();
  {
    std::unique_lock lock(shared.mutex);
    std::erase_if(shared.streams, [context](const auto& item) { return item.second.context == context; });
    // Its per-thread streams too, and their threads' slots with them (a key names a live thread's
    // slot: a thread's exit takes its keys out under this lock), free for those threads' next
    // contexts: else a thread that met as many contexts as it has slots could not name another.
    std::erase_if(shared.per_thread_streams, [context](const auto& item) {
      if (item.second != context) return false;
      set_slot_context(*reinterpret_cast<CUcontext*>(item.first - kPerThreadTag), nullptr);
      return true;
    });
    shared.contexts.erase(reinterpret_cast<std::uintptr_t>(context));
  }
  invalidate_routes();
}

std::size_t contexts_seen() noexcept {
  Registry& shared = registry();
  std::shared_lock lock(shared.mutex);
  return shared.contexts.size();
}

std::size_t streams_seen() noexcept {
  Registry& shared = registry();
  std::shared_lock lock(shared.mutex);
  return shared.streams.size() + shared.per_thread_streams.size();
}

void set_per_thread_exit_handler(PerThreadExitHandler handler) noexcept {
  per_thread_exit_handler.store(handler, std::memory_order_release);
}

void reset_stream_registry_after_fork() noexcept {
  // The old registry is abandoned, not destroyed: its lock may be held by a thread that did not
  // survive the fork. The forking thread's own per-thread streams are carried over.
  auto* fresh = new Registry;
  fresh->abandoned_before_fork = shared_registry.load(std::memory_order_acquire);
  for (CUcontext& slot : per_thread_slots) {
    if (slot == nullptr) continue;
    try {
      fresh->per_thread_streams[reinterpret_cast<core::StreamKey>(&slot) + kPerThreadTag] = slot;
    } catch (...) {
    }
  }
  shared_registry.store(fresh, std::memory_order_release);
  invalidate_routes();
}

const std::atomic<bool>& implicit_partners_seen() noexcept { return partners_seen; }

bool is_legacy_key(core::StreamKey key) noexcept { return (key & kTagMask) == kLegacyTag; }
bool is_per_thread_key(core::StreamKey key) noexcept { return (key & kTagMask) == kPerThreadTag; }

}  // namespace streampool::driver
