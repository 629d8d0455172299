// The two ways CUDA's release threshold fails, and what STREAMPOOL_RELEASE=auto does instead, on a
// real device (docs/DESIGN.md, "Self-tuning release"; the engine-only version of the same two
// patterns is bench/core/release_bench.cpp).
//
//   release_bench zero|max|unset
//
// zero / max: the default pool's RELEASE_THRESHOLD is set to 0 / UINT64_MAX by the program;
// unset: the program never sets it (CUDA's default, 0, on NVIDIA's pool; under streampool the
// setting STREAMPOOL_RELEASE decides). Two patterns, on a non-blocking stream:
//   sync loop    eight blocks of 1-16 MiB (64 MiB), each written, freed, then the stream
//                synchronised, ITERATIONS times: time per iteration. Threshold 0 unmaps and maps
//                the working set every iteration.
//   phase change 768 MiB used once (48 blocks of 16 MiB, written, freed, synchronised), then a
//                16 MiB block per iteration synchronised every 100 ms for 2 s: what the pool still
//                holds at the end, and how much of the device's free memory (cuMemGetInfo) the
//                process took from everyone else since its start. UINT64_MAX keeps the old peak.
// Prints one `key=value` per line; tools/gpu/release_check.sh makes the table.
// Built with the toolkit's headers against the libcuda.so.1 the loader finds (NVIDIA's driver, or
// libstreampool.so when preloaded).
#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

namespace {

#define CHECK(call)                                                                          \
  do {                                                                                       \
    const CUresult check_result = (call);                                                    \
    if (check_result != CUDA_SUCCESS) {                                                      \
      const char* check_name = nullptr;                                                      \
      cuGetErrorName(check_result, &check_name);                                             \
      std::fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call,                   \
                   check_name != nullptr ? check_name : "?");                                \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

constexpr std::size_t kMiB = std::size_t{1} << 20;
using Clock = std::chrono::steady_clock;

std::uint64_t pool_u64(CUmemoryPool pool, CUmemPool_attribute attribute) {
  std::uint64_t value = 0;
  CHECK(cuMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

std::size_t device_free() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  CHECK(cuMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

// Allocates, writes and frees each size once on `stream`, then synchronises it.
void use_once(const std::vector<std::size_t>& sizes, CUstream stream) {
  std::vector<CUdeviceptr> blocks(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CHECK(cuMemAllocAsync(&blocks[i], sizes[i], stream));
    CHECK(cuMemsetD8Async(blocks[i], static_cast<unsigned char>(i), sizes[i], stream));
  }
  for (CUdeviceptr block : blocks) CHECK(cuMemFreeAsync(block, stream));
  CHECK(cuStreamSynchronize(stream));
}

void start_empty(CUmemoryPool pool, CUstream stream) {
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemPoolTrimTo(pool, 0));
  std::uint64_t zero = 0;
  CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "zero") != 0 && std::strcmp(argv[1], "max") != 0 &&
                    std::strcmp(argv[1], "unset") != 0)) {
    std::fprintf(stderr, "usage: %s zero|max|unset\n", argv[0]);
    return 2;
  }
  const char* iterations_text = std::getenv("ITERATIONS");
  const int iterations = iterations_text != nullptr ? std::atoi(iterations_text) : 300;
  CHECK(cuInit(0));
  CUdevice device = 0;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context = nullptr;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CUmemoryPool pool = nullptr;
  CHECK(cuDeviceGetDefaultMemPool(&pool, device));
  if (std::strcmp(argv[1], "unset") != 0) {
    std::uint64_t threshold = std::strcmp(argv[1], "zero") == 0 ? 0 : std::numeric_limits<std::uint64_t>::max();
    CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  }
  CUstream stream = nullptr;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  const std::size_t free_at_start = device_free();

  // The sync loop.
  const std::vector<std::size_t> working_set = {1 * kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB,
                                                16 * kMiB, 16 * kMiB, 8 * kMiB, 9 * kMiB};
  start_empty(pool, stream);
  for (int i = 0; i < 20; ++i) use_once(working_set, stream);
  const Clock::time_point loop_start = Clock::now();
  for (int i = 0; i < iterations; ++i) use_once(working_set, stream);
  const double loop_ns =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - loop_start).count());
  std::printf("sync_loop_ns_per_iteration=%.0f\n", loop_ns / iterations);
  std::printf("sync_loop_reserved_after_mib=%.1f\n",
              static_cast<double>(pool_u64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)) / kMiB);

  // The phase change.
  start_empty(pool, stream);
  use_once(std::vector<std::size_t>(48, 16 * kMiB), stream);
  const double peak_mib = static_cast<double>(pool_u64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)) / kMiB;
  const Clock::time_point phase_start = Clock::now();
  while (Clock::now() - phase_start < std::chrono::seconds(2)) {
    use_once({16 * kMiB}, stream);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::size_t free_at_end = device_free();
  std::printf("phase_peak_reserved_mib=%.1f\n", peak_mib);
  std::printf("phase_held_after_2s_mib=%.1f\n",
              static_cast<double>(pool_u64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)) / kMiB);
  std::printf("phase_device_free_lost_mib=%.1f\n",
              free_at_start > free_at_end ? static_cast<double>(free_at_start - free_at_end) / kMiB : 0.0);

  CHECK(cuStreamDestroy(stream));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
