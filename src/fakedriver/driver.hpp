// The fake driver's process-wide state: configuration, devices and their memory accounting, and the
// registries of live handles (contexts, streams) that let every entry point answer a bad handle with
// an error instead of a crash. Created on first use, never destroyed (calls may come during exit).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config.hpp"
#include "context.hpp"
#include "handle_slots.hpp"
#include "stream.hpp"

namespace fake {

inline constexpr int kDriverVersion = 13000;
inline constexpr std::size_t kVmmGranularity = std::size_t{2} << 20;

struct Device {
  std::uint64_t total_bytes = 0;
  std::atomic<std::uint64_t> used_bytes{0};
  Context* primary = nullptr;
};

// Which stream the handle 0 means for the entry point being served.
enum class DefaultStream { legacy, per_thread };

class Driver {
 public:
  static Driver& instance();

  CUresult initialize(unsigned flags);
  bool initialized() const { return initialized_.load(std::memory_order_acquire); }
  int device_count() const { return config_.device_count; }
  bool valid_device(CUdevice device) const { return device >= 0 && device < config_.device_count; }
  Device& device(CUdevice ordinal) { return *devices_[static_cast<std::size_t>(ordinal)]; }

  // Physical memory accounting against the configured size of a device.
  bool try_charge(CUdevice device, std::uint64_t bytes);
  void uncharge(CUdevice device, std::uint64_t bytes);

  // Contexts.
  Context* create_context(CUdevice device, unsigned flags);
  bool live_context(const Context* context);
  // A destroyed context leaves the live set first (no new work reaches it), and is retired once its
  // streams and memory are gone: only then may a create reuse its handle (config.hpp).
  bool forget_context(Context* context);  // false: not live (another destroy took it)
  // Where handles are reused: the context's events go too, and its handle may come back.
  void retire_context(Context* context);

  // Streams created by cuStreamCreate*. Handles are reused, most recently destroyed first
  // (handle_slots.hpp).
  CUstream register_stream(std::shared_ptr<Stream> stream);
  std::shared_ptr<Stream> find_stream(CUstream handle);
  std::shared_ptr<Stream> unregister_stream(CUstream handle);
  void unregister_streams_of(const Context* context);

  // Every Stream object alive (legacy, per-thread, created, destroyed but still draining), for the
  // fork handlers: a forked child restarts their workers (stream.hpp). Called by Stream itself.
  void stream_born(Stream* stream);
  void stream_gone(Stream* stream);

 private:
  Driver();
  static void before_fork();
  static void after_fork_in_parent();
  static void after_fork_in_child();

  const Config config_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::mutex init_mutex_;
  std::atomic<bool> initialized_{false};

  std::mutex contexts_mutex_;
  std::unordered_set<const Context*> contexts_;
  // Destroyed contexts are kept (never freed, see context.hpp) and stay reachable from here; with
  // STREAMPOOL_FAKE_REUSE_CONTEXTS=1 the last one is built again in place for the next create.
  std::vector<Context*> retired_contexts_;
  // Retired contexts whose streams and memory are gone, to be built again in place (most recent last).
  std::vector<Context*> reusable_contexts_;

  std::shared_mutex streams_mutex_;
  std::unordered_map<CUstream, std::shared_ptr<Stream>> streams_;
  HandleSlots stream_handles_;

  std::mutex live_streams_mutex_;
  std::unordered_set<Stream*> live_streams_;
};

// Common checks of entry points; each returns CUDA_SUCCESS or the error CUDA gives.
CUresult require_initialized();
CUresult require_current_context(Context*& out);
CUresult require_device(CUdevice device);
// Resolves 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created stream's handle.
CUresult resolve_stream(CUstream handle, DefaultStream default_stream, std::shared_ptr<Stream>& out);

}  // namespace fake
