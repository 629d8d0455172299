// pool_demo: an ordinary CUDA driver-API program that allocates in stream order on two
// streams. It knows nothing of streampool: run it plainly and NVIDIA's pool serves it; run it
// under LD_PRELOAD=libstreampool.so and streampool does, which the demo shows by printing
// streampool's own statistics (<streampool/streampool.h>, looked up at run time) next to the pool
// attributes CUDA reports either way. Modes: plain (the driver's own pool), under streampool
// (LD_PRELOAD or `streampool run`, on a GPU or over the fake driver), STREAMPOOL_DISABLE=1.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "streampool/streampool.h"

namespace {

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "pool_demo: %s failed: %s (%d)\n", what, name != nullptr ? name : "unnamed error",
               static_cast<int>(result));
  std::exit(1);
}

// streampool's public interface when it is loaded, else null.
template <class Function>
Function streampool_function(Function, const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

cuuint64_t attribute(CUmemoryPool pool, CUmemPool_attribute which) {
  cuuint64_t value = 0;
  check(cuMemPoolGetAttribute(pool, which, &value), "cuMemPoolGetAttribute");
  return value;
}

void print_pool(const char* when, CUmemoryPool pool) {
  std::printf("%-34s used %8.2f MiB (high %8.2f)   reserved %8.2f MiB (high %8.2f)\n", when,
              static_cast<double>(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)) / (1 << 20),
              static_cast<double>(attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH)) / (1 << 20),
              static_cast<double>(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)) / (1 << 20),
              static_cast<double>(attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)) / (1 << 20));
}

}  // namespace

int main() {
  check(cuInit(0), "cuInit");
  CUdevice device = 0;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  char name[128] = {};
  check(cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName");
  CUcontext context = nullptr;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  const auto version = streampool_function(&streampool_version, "streampool_version");
  const auto active = streampool_function(&streampool_active, "streampool_active");
  const bool served = version != nullptr && active != nullptr && active() != 0;
  if (served) {
    std::printf("device 0: %s; allocator: streampool %s\n", name, version());
  } else if (version != nullptr) {
    std::printf("device 0: %s; allocator: the driver's own pool (streampool %s loaded, STREAMPOOL_DISABLE)\n", name,
                version());
  } else {
    std::printf("device 0: %s; allocator: the driver's own pool\n", name);
  }

  CUmemoryPool pool = nullptr;
  const CUresult has_pool = cuDeviceGetDefaultMemPool(&pool, device);
  if (has_pool == CUDA_ERROR_NOT_SUPPORTED && !served) {
    // streampool's CPU-only fake driver has no pools of its own: they are streampool's.
    std::printf("the driver underneath has no memory pools of its own (streampool's fake driver?): nothing to show "
                "without streampool\n");
    return 0;
  }
  check(has_pool, "cuDeviceGetDefaultMemPool");
  cuuint64_t keep_everything = UINT64_MAX;
  check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything), "set threshold");

  CUstream producer = nullptr;
  CUstream consumer = nullptr;
  check(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUevent handed_over = nullptr;
  check(cuEventCreate(&handed_over, CU_EVENT_DISABLE_TIMING), "cuEventCreate");

  // Producer: 64 buffers of 1 MiB, filled, then handed to the consumer through an event.
  std::vector<CUdeviceptr> buffers(64);
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    check(cuMemAllocAsync(&buffers[i], 1 << 20, producer), "cuMemAllocAsync");
    check(cuMemsetD8Async(buffers[i], static_cast<unsigned char>(i), 1 << 20, producer), "cuMemsetD8Async");
  }
  print_pool("after 64 x 1 MiB on the producer", pool);
  check(cuEventRecord(handed_over, producer), "cuEventRecord");
  check(cuStreamWaitEvent(consumer, handed_over, 0), "cuStreamWaitEvent");

  // Consumer: reads a byte of each, frees them on its own stream.
  unsigned long checksum = 0;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    unsigned char byte = 0;
    check(cuMemcpyDtoHAsync(&byte, buffers[i] + 4096, 1, consumer), "cuMemcpyDtoHAsync");
    check(cuStreamSynchronize(consumer), "cuStreamSynchronize");
    checksum += byte;
    check(cuMemFreeAsync(buffers[i], consumer), "cuMemFreeAsync");
  }
  print_pool("after the consumer freed them", pool);

  // The consumer's frees are ordered before new work on the consumer: reused at once.
  CUdeviceptr again = 0;
  check(cuMemAllocAsync(&again, 32 << 20, consumer), "cuMemAllocAsync");
  print_pool("after 32 MiB on the consumer", pool);
  check(cuMemFreeAsync(again, consumer), "cuMemFreeAsync");
  check(cuStreamSynchronize(consumer), "cuStreamSynchronize");
  check(cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo");
  print_pool("after cuMemPoolTrimTo(0)", pool);
  std::printf("checksum of the bytes read back: %lu (expected %lu)\n", checksum, 63ul * 64 / 2);

  if (const auto get_stats = streampool_function(&streampool_get_stats, "streampool_get_stats"); served && get_stats) {
    streampool_stats totals{};
    totals.struct_size = sizeof totals;
    const int pools = get_stats(&totals, nullptr, 0);
    std::printf("streampool: %d pool(s), peak reserved %.2f MiB, peak used %.2f MiB, %llu allocations and %llu "
                "frees served\n",
                pools, static_cast<double>(totals.reserved_high) / (1 << 20),
                static_cast<double>(totals.used_high) / (1 << 20),
                static_cast<unsigned long long>(totals.allocation_calls),
                static_cast<unsigned long long>(totals.free_calls));
  }
  check(cuEventDestroy(handed_over), "cuEventDestroy");
  check(cuStreamDestroy(producer), "cuStreamDestroy");
  check(cuStreamDestroy(consumer), "cuStreamDestroy");
  return checksum == 63ul * 64 / 2 ? 0 : 1;
}
