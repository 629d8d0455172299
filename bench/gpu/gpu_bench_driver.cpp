// GPU benchmarks through the driver entry points (linked against libcuda.so.1, no cudart). Run
// plain it measures NVIDIA's pool; under LD_PRELOAD=libstreampool.so the same DT_NEEDED
// libcuda.so.1 resolves to streampool, which serves the pool calls and forwards the rest.
#include <cuda.h>

#include <cstdint>

#include "bench_main.hpp"
#include "workloads.hpp"

namespace {

struct DriverApi {
  using Ptr = CUdeviceptr;
  using Stream = CUstream;
  using Event = CUevent;
  using Pool = CUmemoryPool;
  using Context = CUcontext;  // the device's primary context, made current on every thread
  using Status = CUresult;

  using PoolAttribute = CUmemPool_attribute;
  static constexpr PoolAttribute kReleaseThreshold = CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
  static constexpr PoolAttribute kReservedMemHigh = CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
  static constexpr PoolAttribute kUsedMemHigh = CU_MEMPOOL_ATTR_USED_MEM_HIGH;

  static bool ok(Status status) { return status == CUDA_SUCCESS; }
  static const char* error_name(Status status) {
    const char* name = nullptr;
    if (cuGetErrorName(status, &name) != CUDA_SUCCESS || name == nullptr) name = "CUDA error";
    return name;
  }

  static Status open_device(Context* context) {
    if (Status status = cuInit(0); status != CUDA_SUCCESS) return status;
    CUdevice device{};
    if (Status status = cuDeviceGet(&device, 0); status != CUDA_SUCCESS) return status;
    if (Status status = cuDevicePrimaryCtxRetain(context, device); status != CUDA_SUCCESS) return status;
    return cuCtxSetCurrent(*context);
  }
  static Status default_pool(Context, Pool* pool) {
    CUdevice device{};
    if (Status status = cuCtxGetDevice(&device); status != CUDA_SUCCESS) return status;
    return cuDeviceGetDefaultMemPool(pool, device);
  }
  // cuuint64_t is unsigned long long, std::uint64_t unsigned long: same width, distinct pointer types.
  static Status set_pool_u64(Pool pool, PoolAttribute attribute, std::uint64_t value) {
    cuuint64_t driver_value = value;
    return cuMemPoolSetAttribute(pool, attribute, &driver_value);
  }
  static Status get_pool_u64(Pool pool, PoolAttribute attribute, std::uint64_t* value) {
    cuuint64_t driver_value = 0;
    const Status status = cuMemPoolGetAttribute(pool, attribute, &driver_value);
    *value = driver_value;
    return status;
  }
  static Status bind_thread(Context context) { return cuCtxSetCurrent(context); }
  static Status stream_create(Stream* stream) { return cuStreamCreate(stream, CU_STREAM_NON_BLOCKING); }
  static Status blocking_stream_create(Stream* stream) { return cuStreamCreate(stream, CU_STREAM_DEFAULT); }
  static Status event_create(Event* event) { return cuEventCreate(event, CU_EVENT_DISABLE_TIMING); }

  static Status alloc(Ptr* block, std::size_t bytes, Stream stream) { return cuMemAllocAsync(block, bytes, stream); }
  static Status alloc_from_pool(Ptr* block, std::size_t bytes, Pool pool, Stream stream) {
    return cuMemAllocFromPoolAsync(block, bytes, pool, stream);
  }
  static Status free(Ptr block, Stream stream) { return cuMemFreeAsync(block, stream); }

  static Status record(Event event, Stream stream) { return cuEventRecord(event, stream); }
  static Status wait(Stream stream, Event event) { return cuStreamWaitEvent(stream, event, 0); }
  static Status stream_sync(Stream stream) { return cuStreamSynchronize(stream); }
  static Status device_sync() { return cuCtxSynchronize(); }

  static Status trim(Pool pool, std::size_t keep_bytes) { return cuMemPoolTrimTo(pool, keep_bytes); }
};

int driver_version() {
  int version = 0;
  return cuDriverGetVersion(&version) == CUDA_SUCCESS ? version : 0;
}

}  // namespace

int main(int argc, char** argv) {
  streampool::gpubench::register_workloads<DriverApi>();
  return streampool::gpubench::run_gpu_benchmarks(argc, argv, "driver", &driver_version);
}
