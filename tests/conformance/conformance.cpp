// Implementation of the suite's helpers (see conformance.hpp).
#include "conformance.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <thread>

void PrintTo(CUresult result, std::ostream* os) {
  const char* name = nullptr;
  if (cuGetErrorName(result, &name) == CUDA_SUCCESS && name != nullptr) {
    *os << name;
  } else {
    *os << "CUresult(" << static_cast<int>(result) << ")";
  }
}

namespace conformance {

bool under_streampool() {
  static const bool loaded = dlsym(RTLD_DEFAULT, "streampool_version") != nullptr;
  return loaded;
}

bool on_fake_driver() {
  static const bool fake = [] {
    char name[256] = {};
    return cuDeviceGetName(name, sizeof name, 0) == CUDA_SUCCESS && std::strcmp(name, "streampool fake device") == 0;
  }();
  return fake;
}

CUdevice device() { return 0; }

CUstream legacy_stream() { return reinterpret_cast<CUstream>(std::uintptr_t{1}); }
CUstream per_thread_stream() { return reinterpret_cast<CUstream>(std::uintptr_t{2}); }

CUmemPool_attribute pool_attr(int number) { return static_cast<CUmemPool_attribute>(number); }

std::uint64_t get_u64(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t value = 0;
  const CUresult result = cuMemPoolGetAttribute(pool, attr, &value);
  if (result != CUDA_SUCCESS) {
    ADD_FAILURE() << "cuMemPoolGetAttribute(" << static_cast<int>(attr) << ") returned "
                  << ::testing::PrintToString(result);
    return UINT64_MAX;
  }
  return value;
}

std::uint64_t reserved(CUmemoryPool pool) { return get_u64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); }
std::uint64_t reserved_high(CUmemoryPool pool) { return get_u64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH); }
std::uint64_t used(CUmemoryPool pool) { return get_u64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT); }
std::uint64_t used_high(CUmemoryPool pool) { return get_u64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH); }

CUresult set_u64(CUmemoryPool pool, CUmemPool_attribute attr, std::uint64_t value) {
  cuuint64_t v = value;
  return cuMemPoolSetAttribute(pool, attr, &v);
}

CUresult set_int(CUmemoryPool pool, CUmemPool_attribute attr, int value) {
  return cuMemPoolSetAttribute(pool, attr, &value);
}

CUmemPoolProps device_pool_props(std::size_t max_size) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device();
  props.maxSize = max_size;
  return props;
}

CUmemAccessDesc access_for(int device_id, CUmemAccess_flags flags) {
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = device_id;
  desc.flags = flags;
  return desc;
}

CUmemAccess_flags pool_access(CUmemoryPool pool, int device_id) {
  CUmemLocation location{};
  location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = device_id;
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_MAX;
  EXPECT_EQ(CUDA_SUCCESS, cuMemPoolGetAccess(&flags, pool, &location));
  return flags;
}

std::size_t vmm_granularity(CUmemAllocationGranularity_flags kind) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device();
  std::size_t granularity = 0;
  const CUresult result = cuMemGetAllocationGranularity(&granularity, &prop, kind);
  if (result != CUDA_SUCCESS || granularity == 0) {
    ADD_FAILURE() << "cuMemGetAllocationGranularity returned " << ::testing::PrintToString(result);
    return 2 * kMiB;
  }
  return granularity;
}

void memory_info(std::size_t* free_bytes, std::size_t* total_bytes) {
  const CUresult result = cuMemGetInfo(free_bytes, total_bytes);
  if (result != CUDA_SUCCESS) {
    ADD_FAILURE() << "cuMemGetInfo returned " << ::testing::PrintToString(result);
  }
}

namespace {
// Runs on the driver's callback thread: sleeps, calls no CUDA function.
void CUDA_CB sleep_callback(void* milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<std::uintptr_t>(milliseconds)));
}
}  // namespace

CUresult enqueue_long_kernel(CUstream stream, unsigned milliseconds) {
  return cuLaunchHostFunc(stream, &sleep_callback, reinterpret_cast<void*>(std::uintptr_t{milliseconds}));
}

bool becomes_idle_within(CUstream stream, unsigned milliseconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  do {
    const CUresult result = cuStreamQuery(stream);
    if (result == CUDA_SUCCESS) return true;
    if (result != CUDA_ERROR_NOT_READY) {
      ADD_FAILURE() << "cuStreamQuery returned " << ::testing::PrintToString(result);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

OwnedStream::OwnedStream(unsigned flags) : status_(cuStreamCreate(&stream_, flags)) {}

OwnedStream::~OwnedStream() {
  if (stream_ != nullptr) {
    (void)cuStreamSynchronize(stream_);
    (void)cuStreamDestroy(stream_);
  }
}

OwnedPool::OwnedPool(const CUmemPoolProps& props) : status_(cuMemPoolCreate(&pool_, &props)) {
  if (status_ != CUDA_SUCCESS) pool_ = nullptr;
}

OwnedPool::~OwnedPool() {
  if (pool_ != nullptr) {
    // Give the memory back before the next scenario: on the real GPU a pool may hold a lot.
    (void)cuCtxSynchronize();
    (void)cuMemPoolTrimTo(pool_, 0);
    (void)cuMemPoolDestroy(pool_);
  }
}

OwnedEvent::OwnedEvent() : status_(cuEventCreate(&event_, CU_EVENT_DISABLE_TIMING)) {}

OwnedEvent::~OwnedEvent() {
  if (event_ != nullptr) (void)cuEventDestroy(event_);
}

}  // namespace conformance
