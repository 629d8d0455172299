// Introspection for tests and tools, exported under the streampool_ prefix (C ABI, never throws).
#include <cstddef>
#include <cstdint>

#include "driver/stream_registry.hpp"
#include "process_state.hpp"

// The engine key streampool uses for a stream handle as the given variant would name it
// (per_thread_variant != 0: the _ptsz entry points). Returns the CUresult of the resolution.
extern "C" __attribute__((visibility("default"))) int streampool_debug_stream_key(CUstream stream,
                                                                                   int per_thread_variant,
                                                                                   std::uintptr_t* key) {
  if (key == nullptr) return CUDA_ERROR_INVALID_VALUE;
  streampool::interpose::HookScope scope;
  streampool::driver::StreamRoute route;
  CUresult result = streampool::driver::resolve_stream(stream, per_thread_variant != 0, &route);
  *key = result == CUDA_SUCCESS ? route.key : 0;
  return static_cast<int>(result);
}

// How many stream slots the tracking holds: live streams, and ended ones whose frees are not yet
// known complete (core::Engine::stream_slots). A program whose streams come and go, with their
// contexts or one by one, must hold a constant number.
extern "C" __attribute__((visibility("default"))) int streampool_debug_stream_slots(std::size_t* slots) {
  if (slots == nullptr) return CUDA_ERROR_INVALID_VALUE;
  streampool::interpose::HookScope scope;
  *slots = streampool::interpose::engine().stream_slots();
  return CUDA_SUCCESS;
}

// How many events the tracking holds state for (core::Engine::tracked_events): a program whose
// events are created, recorded and destroyed for as long as it runs must hold a constant number.
extern "C" __attribute__((visibility("default"))) int streampool_debug_tracked_events(std::size_t* events) {
  if (events == nullptr) return CUDA_ERROR_INVALID_VALUE;
  streampool::interpose::HookScope scope;
  *events = streampool::interpose::engine().tracked_events();
  return CUDA_SUCCESS;
}

// What the stream registry holds (driver/stream_registry.hpp): the contexts it has seen, and its
// streams (created ones and live threads' per-thread ones). An ended context leaves neither behind:
// a program whose contexts come and go must hold a bounded number of both.
extern "C" __attribute__((visibility("default"))) int streampool_debug_registry_contexts(std::size_t* contexts) {
  if (contexts == nullptr) return CUDA_ERROR_INVALID_VALUE;
  streampool::interpose::HookScope scope;
  *contexts = streampool::driver::contexts_seen();
  return CUDA_SUCCESS;
}

extern "C" __attribute__((visibility("default"))) int streampool_debug_registry_streams(std::size_t* streams) {
  if (streams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  streampool::interpose::HookScope scope;
  *streams = streampool::driver::streams_seen();
  return CUDA_SUCCESS;
}

// How many marker events streampool holds, in use or free for reuse (driver::EventOrdering): an
// ended context's go with it, so a program whose contexts come and go holds a bounded number.
extern "C" __attribute__((visibility("default"))) int streampool_debug_marker_events(std::size_t* events) {
  if (events == nullptr) return CUDA_ERROR_INVALID_VALUE;
  streampool::interpose::HookScope scope;
  *events = streampool::interpose::state().ordering.markers_created();
  return CUDA_SUCCESS;
}
