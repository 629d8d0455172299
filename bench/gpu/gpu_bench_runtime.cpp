// GPU benchmarks through the CUDA runtime (libcudart.so, shared). Run plain it measures NVIDIA's
// pool; under LD_PRELOAD=libstreampool.so cudart's driver calls reach streampool instead.
#include <cuda_runtime_api.h>

#include <cstdint>

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

  using PoolAttribute = cudaMemPoolAttr;
  static constexpr PoolAttribute kReleaseThreshold = cudaMemPoolAttrReleaseThreshold;
  static constexpr PoolAttribute kReservedMemHigh = cudaMemPoolAttrReservedMemHigh;
  static constexpr PoolAttribute kUsedMemHigh = cudaMemPoolAttrUsedMemHigh;

  static bool ok(Status status) { return status == cudaSuccess; }
  static const char* error_name(Status status) { return cudaGetErrorName(status); }

  static Status open_device(Context* device) {
    *device = 0;
    if (Status status = cudaSetDevice(*device); status != cudaSuccess) return status;
    return cudaFree(nullptr);  // creates the context now, not inside the first timed call
  }
  static Status default_pool(Context device, Pool* pool) { return cudaDeviceGetDefaultMemPool(pool, device); }
  static Status set_pool_u64(Pool pool, PoolAttribute attribute, std::uint64_t value) {
    return cudaMemPoolSetAttribute(pool, attribute, &value);
  }
  static Status get_pool_u64(Pool pool, PoolAttribute attribute, std::uint64_t* value) {
    return cudaMemPoolGetAttribute(pool, attribute, value);
  }
  static Status bind_thread(Context device) { return cudaSetDevice(device); }
  static Status stream_create(Stream* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking); }
  static Status blocking_stream_create(Stream* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
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
