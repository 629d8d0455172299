/* A plain C driver-API program (cuda.h, linked against the stub libcuda.so, no kernels): two
 * streams, cuMemAllocAsync from the default pool, a created pool with cuMemAllocFromPoolAsync, an
 * event ordering a cross-stream free, memsets and copies checked on the host, pool attributes and
 * cuMemPoolTrimTo. It needs no GPU code, so run_programs.sh also runs it under streampool over the
 * CPU-only fake driver (--fake), where it checks the script's own logic. Prints no addresses or
 * timings: the output is identical on NVIDIA's driver and under streampool. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    CUresult check_status = (call);                                                     \
    if (check_status != CUDA_SUCCESS) {                                                 \
      const char* check_name = "?";                                                     \
      cuGetErrorName(check_status, &check_name);                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, check_name); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static unsigned long long attr(CUmemoryPool pool, CUmemPool_attribute which) {
  cuuint64_t value = 0;
  CHECK(cuMemPoolGetAttribute(pool, which, &value));
  return (unsigned long long)value;
}

int main(void) {
  enum { kRounds = 16, kBytes = 3 << 20 };
  CUdevice device = 0;
  CUcontext context = NULL;
  CUstream s1 = NULL;
  CUstream s2 = NULL;
  CUevent written = NULL;
  CUmemoryPool default_pool = NULL;
  CUmemoryPool own_pool = NULL;
  CUmemPoolProps props;
  unsigned char* host = malloc(kBytes);
  unsigned long long checksum = 0;
  cuuint64_t threshold = UINT64_MAX;
  int round = 0;

  if (host == NULL) return 1;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CHECK(cuEventCreate(&written, CU_EVENT_DISABLE_TIMING));

  CHECK(cuDeviceGetDefaultMemPool(&default_pool, device));
  printf("default pool threshold: %llu\n", attr(default_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD));
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  CHECK(cuMemPoolCreate(&own_pool, &props));
  CHECK(cuMemPoolSetAttribute(own_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));

  for (round = 0; round < kRounds; ++round) {
    CUdeviceptr a = 0;
    CUdeviceptr b = 0;
    size_t i = 0;
    CHECK(cuMemAllocAsync(&a, kBytes, s1));
    CHECK(cuMemAllocFromPoolAsync(&b, kBytes + (size_t)round * 4096, own_pool, s1));
    CHECK(cuMemsetD8Async(a, (unsigned char)(round + 1), kBytes, s1));
    CHECK(cuMemcpyDtoDAsync(b, a, kBytes, s1));
    CHECK(cuEventRecord(written, s1));
    if (round == 0) { /* both live: used = the bytes asked for */
      printf("used while live: default %llu, own %llu\n", attr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
             attr(own_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT));
    }
    CHECK(cuMemFreeAsync(a, s1));
    CHECK(cuStreamWaitEvent(s2, written, 0));
    CHECK(cuMemcpyDtoHAsync(host, b, kBytes, s2));
    CHECK(cuMemFreeAsync(b, s2)); /* freed on the other stream, ordered by the event */
    CHECK(cuStreamSynchronize(s2));
    CHECK(cuStreamSynchronize(s1));
    for (i = 0; i < kBytes; i += 4096) checksum += host[i];
  }
  printf("rounds: %d, checksum: %llu (expected %llu)\n", kRounds, checksum,
         (unsigned long long)(kBytes / 4096) * (kRounds * (kRounds + 1) / 2));
  printf("used after frees: default %llu, own %llu\n", attr(default_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT),
         attr(own_pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT));
  printf("own used high: %llu\n", attr(own_pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH));
  printf("own pool keeps memory (threshold max): %s\n",
         attr(own_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) > 0 ? "yes" : "no");
  printf("default pool released at sync (threshold 0): %s\n",
         attr(default_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0 ? "yes" : "no");
  CHECK(cuMemPoolTrimTo(own_pool, 0));
  printf("own reserved after trim: %llu\n", attr(own_pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT));

  CHECK(cuMemPoolDestroy(own_pool));
  CHECK(cuEventDestroy(written));
  CHECK(cuStreamDestroy(s1));
  CHECK(cuStreamDestroy(s2));
  CHECK(cuDevicePrimaryCtxRelease(device));
  free(host);
  printf("done\n");
  return 0;
}
