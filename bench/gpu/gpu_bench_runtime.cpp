// GPU benchmarks through the CUDA runtime (libcudart.so, shared). Run plain it measures NVIDIA's
// pool; under LD_PRELOAD=libstreampool.so cudart's driver calls reach streampool instead.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <string>

#include "bench_main.hpp"
#include "workloads.hpp"

namespace {

struct RuntimeApi {
  using Ptr = void*;
  using Stream = cudaStream_t;
  using Event = cudaEvent_t;
  using Pool = cudaMemPool_t;
  using Context = int;  // the device: cudart binds a thread to a device's primary context
  using Status = cudaError_t;

  static bool ok(Status status) { return status == cudaSuccess; }
  static std::string describe(Status status, const char* what) {
    return std::string(what) + ": " + cudaGetErrorName(status) + " (" + std::to_string(static_cast<int>(status)) + ")";
  }

  static Status open_device(Context* device) {
    *device = 0;
    if (Status status = cudaSetDevice(*device); status != cudaSuccess) return status;
    return cudaFree(nullptr);  // creates the context now, not inside the first timed call
  }
  static Status default_pool(Context device, Pool* pool) { return cudaDeviceGetDefaultMemPool(pool, device); }
  static Status keep_everything(Pool pool) {
    std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
    return cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  }
  static Status bind_thread(Context device) { return cudaSetDevice(device); }
  static Status stream_create(Stream* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking); }
  static Status event_create(Event* event) { return cudaEventCreateWithFlags(event, cudaEventDisableTiming); }

  static Status alloc(Ptr* block, std::size_t bytes, Stream stream) { return cudaMallocAsync(block, bytes, stream); }
  static Status alloc_from_pool(Ptr* block, std::size_t bytes, Pool pool, Stream stream) {
    return cudaMallocFromPoolAsync(block, bytes, pool, stream);
  }
  static Status free(Ptr block, Stream stream) { return cudaFreeAsync(block, stream); }

  static Status record(Event event, Stream stream) { return cudaEventRecord(event, stream); }
  static Status wait(Stream stream, Event event) { return cudaStreamWaitEvent(stream, event, 0); }
  static Status stream_sync(Stream stream) { return cudaStreamSynchronize(stream); }
  static Status device_sync() { return cudaDeviceSynchronize(); }

  static Status trim(Pool pool, std::size_t keep_bytes) { return cudaMemPoolTrimTo(pool, keep_bytes); }
  static Status reset_highs(Pool pool) {
    std::uint64_t zero = 0;
    if (Status status = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero); status != cudaSuccess) {
      return status;
    }
    return cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero);
  }
  static Status reserved_high(Pool pool, std::uint64_t* bytes) {
    return cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, bytes);
  }
  static Status used_high(Pool pool, std::uint64_t* bytes) {
    return cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, bytes);
  }
};

int runtime_driver_version() {
  int version = 0;
  return cudaDriverGetVersion(&version) == cudaSuccess ? version : 0;
}

}  // namespace

int main(int argc, char** argv) {
  streampool::gpubench::register_workloads<RuntimeApi>();
  return streampool::gpubench::run_gpu_benchmarks(argc, argv, "runtime", &runtime_driver_version);
}
