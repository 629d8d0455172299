#include "lifetimes.hpp"

#include <thread>

namespace lifetimes {

namespace {

constexpr std::size_t kSmallBlockBytes = 4096;
constexpr std::size_t kPoolBlockBytes = std::size_t{1} << 20;

// Runs `call`; on failure records which call it was.
#define LIFETIME_CALL(call)                         \
  do {                                              \
    if (CUresult result = (call); result != CUDA_SUCCESS) { \
      *failed_call = #call;                         \
      return result;                                \
    }                                               \
  } while (false)

}  // namespace

CUresult open_device(Device* device, const char** failed_call) {
  LIFETIME_CALL(cuInit(0));
  CUdevice ordinal{};
  LIFETIME_CALL(cuDeviceGet(&ordinal, 0));
  LIFETIME_CALL(cuDevicePrimaryCtxRetain(&device->context, ordinal));
  LIFETIME_CALL(cuCtxSetCurrent(device->context));
  LIFETIME_CALL(cuStreamCreate(&device->stream, CU_STREAM_NON_BLOCKING));
  LIFETIME_CALL(cuEventCreate(&device->event, CU_EVENT_DISABLE_TIMING));
  return CUDA_SUCCESS;
}

CUresult stream_lifetime(const Device& device, const char** failed_call) {
  CUstream stream = nullptr;
  LIFETIME_CALL(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  CUdeviceptr block = 0;
  LIFETIME_CALL(cuMemAllocAsync(&block, kSmallBlockBytes, stream));
  LIFETIME_CALL(cuMemFreeAsync(block, stream));
  LIFETIME_CALL(cuEventRecord(device.event, stream));
  LIFETIME_CALL(cuEventSynchronize(device.event));
  LIFETIME_CALL(cuStreamDestroy(stream));
  return CUDA_SUCCESS;
}

namespace {

// What the short-lived thread does, on its own per-thread default stream.
CUresult thread_body(const Device& device, const char** failed_call) {
  LIFETIME_CALL(cuCtxSetCurrent(device.context));
  CUdeviceptr block = 0;
  LIFETIME_CALL(cuMemAllocAsync(&block, kSmallBlockBytes, CU_STREAM_PER_THREAD));
  LIFETIME_CALL(cuMemFreeAsync(block, CU_STREAM_PER_THREAD));
  LIFETIME_CALL(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  return CUDA_SUCCESS;
}

}  // namespace

CUresult thread_lifetime(const Device& device, const char** failed_call) {
  CUresult outcome = CUDA_SUCCESS;
  std::thread thread([&] { outcome = thread_body(device, failed_call); });
  thread.join();
  return outcome;
}

CUresult pool_lifetime(const Device& device, std::uint64_t index, const char** failed_call) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  LIFETIME_CALL(cuMemPoolCreate(&pool, &props));
  CUdeviceptr block = 0;
  LIFETIME_CALL(cuMemAllocFromPoolAsync(&block, kPoolBlockBytes, pool, device.stream));
  LIFETIME_CALL(cuMemFreeAsync(block, device.stream));
  // Both orders programs use: the pool goes once its last free is known complete, whichever
  // comes last, the destroy or the synchronisation.
  if (index % 2 == 0) {
    LIFETIME_CALL(cuStreamSynchronize(device.stream));
    LIFETIME_CALL(cuMemPoolDestroy(pool));
  } else {
    LIFETIME_CALL(cuMemPoolDestroy(pool));
    LIFETIME_CALL(cuStreamSynchronize(device.stream));
  }
  return CUDA_SUCCESS;
}

}  // namespace lifetimes
