// The three lifetimes the benchmark repeats, each through the driver API as a program makes it
// (under LD_PRELOAD=libstreampool.so every call below reaches streampool first):
//   stream  create a stream, allocate and free on it, record an event and wait for it, destroy it;
//   thread  start a thread that allocates and frees on its per-thread default stream,
//           synchronises it and exits;
//   pool    create a pool, allocate from it and free, destroy it, and synchronise the stream
//           (every other lifetime synchronises before destroying instead).
// Each returns the first failing call's result, with `failed_call` naming it.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace lifetimes {

struct Device {
  CUcontext context = nullptr;
  CUstream stream = nullptr;  // long-lived: the pool lifetimes' stream
  CUevent event = nullptr;    // reused by every stream lifetime
};

CUresult open_device(Device* device, const char** failed_call);
CUresult stream_lifetime(const Device& device, const char** failed_call);
CUresult thread_lifetime(const Device& device, const char** failed_call);
CUresult pool_lifetime(const Device& device, std::uint64_t index, const char** failed_call);

}  // namespace lifetimes
