// libFuzzer harness: random programs of the hooked driver API, run by streampool over the fake
// driver, under ASan+UBSan.
//
// How it is put together. The interposer's sources (src/interpose, with the generated entry
// points), the driver layer and the engine are compiled into this executable by clang with
// -fsanitize=fuzzer-no-link,address,undefined (a STREAMPOOL_SANITIZE=fuzz build: see
// tests/fuzz/CMakeLists.txt), so the harness calls cuMemAllocAsync & co. by name and reaches
// streampool's hooks, and everything else through streampool's generated trampolines. The driver
// underneath is the fake (a plain build's streampool_fakecuda, named by STREAMPOOL_LIBCUDA), which
// streampool opens by absolute path as it would open NVIDIA's. A preloaded libstreampool.so is not
// used: a clang-sanitized shared library cannot link the sanitizer runtime it needs.
//
// What one input is. Its first byte chooses one or two threads; with two, each replays one half of
// the rest at the same time. Each thread reads operations from its bytes (FuzzedDataProvider):
// allocations (legacy, per-thread, from a pool), frees (cuMemFreeAsync, cuMemFree), pool creation
// with any props (enum fields as any int), destruction, attributes, access, trims, default and
// current pools, events, waits, synchronizations, pointer queries, a stream of its own created
// and destroyed, and frees that are wrong (twice, interior, forged); handles are live, destroyed
// or forged, sizes from 0 to SIZE_MAX. At the end of the input everything is freed, the pools it
// created are destroyed and the context synchronized.
//
// What it checks, beyond the sanitizers and the absence of crashes and hangs:
//   * an allocation that succeeds returns a 256-byte aligned, non-null pointer (null for 0 bytes);
//     one that fails leaves the pointer null;
//   * no two allocations live at the same time overlap: each is tagged with its own byte at both
//     ends when allocated, and the tags are read back before it is freed;
//   * a free of a live allocation on a valid stream succeeds; on a forged stream it fails and the
//     allocation stays live; a second free, or a free of an interior pointer, is INVALID_VALUE;
//   * pointer queries of a live allocation name its pool, its start and its size;
//   * a pool used by one thread only reports USED_MEM_CURRENT = the bytes it has live;
//   * once the input is over, the default pools have nothing in use, and the fake driver has
//     exactly what the pools report as RESERVED mapped.
// A failed check prints what it saw and aborts, which libFuzzer reports as a crash.
//
// Run: tools/run-fuzz.sh (builds it, runs the committed corpus in tests/fuzz/corpus, then fuzzes
// for a bounded time).
#include <cuda.h>
#include <dlfcn.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

// The per-thread-default-stream variants: cuda.h declares them only under
// CUDA_API_PER_THREAD_DEFAULT_STREAM, as the names the plain ones become.
extern "C" {
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
}

namespace {

constexpr int kSharedStreams = 3;
constexpr std::size_t kMaxLive = 48;
constexpr std::size_t kTagBytes = 64;
constexpr unsigned kMaxOperations = 96;

[[noreturn]] void fail(const char* what, unsigned long long first = 0, unsigned long long second = 0) {
  std::fprintf(stderr, "fuzz_hooks: check failed: %s (%#llx, %#llx)\n", what, first, second);
  std::fflush(stderr);
  std::abort();
}

void require(bool condition, const char* what, unsigned long long first = 0, unsigned long long second = 0) {
  if (!condition) fail(what, first, second);
}

// --- what every input shares ---------------------------------------------------------------------

struct World {
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream streams[kSharedStreams] = {};
  CUmemoryPool device_default = nullptr;
  CUmemoryPool host_default = nullptr;
  CUmemLocation device_location{};
  CUmemLocation host_location{};
  using VmmLive = void (*)(unsigned long long*, unsigned long long*, unsigned long long*, unsigned long long*);
  VmmLive vmm_live = nullptr;
};

World* world = nullptr;

void set_up_world() {
  auto* fresh = new World;
  require(cuInit(0) == CUDA_SUCCESS, "cuInit over the fake driver (STREAMPOOL_LIBCUDA)");
  require(cuDeviceGet(&fresh->device, 0) == CUDA_SUCCESS, "cuDeviceGet");
  require(cuDevicePrimaryCtxRetain(&fresh->context, fresh->device) == CUDA_SUCCESS, "primary context");
  require(cuCtxSetCurrent(fresh->context) == CUDA_SUCCESS, "cuCtxSetCurrent");
  const unsigned flags[kSharedStreams] = {CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING, CU_STREAM_DEFAULT};
  for (int index = 0; index < kSharedStreams; ++index) {
    require(cuStreamCreate(&fresh->streams[index], flags[index]) == CUDA_SUCCESS, "cuStreamCreate");
  }
  require(cuDeviceGetDefaultMemPool(&fresh->device_default, fresh->device) == CUDA_SUCCESS, "device pool");
  // Mapping costs: the default pool keeps what it maps unless an input lowers its threshold.
  std::uint64_t keep_everything = UINT64_MAX;
  require(cuMemPoolSetAttribute(fresh->device_default, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything) ==
              CUDA_SUCCESS,
          "release threshold");
  fresh->device_location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  fresh->device_location.id = fresh->device;
  fresh->host_location.type = CU_MEM_LOCATION_TYPE_HOST;
  require(cuMemGetDefaultMemPool(&fresh->host_default, &fresh->host_location, CU_MEM_ALLOCATION_TYPE_PINNED) ==
              CUDA_SUCCESS,
          "host pool");
  if (const char* path = std::getenv("STREAMPOOL_LIBCUDA")) {
    if (void* fake = dlopen(path, RTLD_NOW | RTLD_NOLOAD)) {
      fresh->vmm_live = reinterpret_cast<World::VmmLive>(dlsym(fake, "streampool_fake_vmm_live"));
    }
  }
  world = fresh;
}

std::uint64_t pool_stat(CUmemoryPool pool, CUmemPool_attribute attribute) {
  std::uint64_t value = 0;
  require(cuMemPoolGetAttribute(pool, attribute, &value) == CUDA_SUCCESS, "statistic of a live pool");
  return value;
}

// --- one thread's program ------------------------------------------------------------------------

struct Block {
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
  CUmemoryPool pool = nullptr;  // known when allocated from an explicit pool
  unsigned char tag = 0;
};

struct OwnPool {
  CUmemoryPool handle = nullptr;
  bool vmm_device = false;  // a device pool: served by the VMM backing, its addresses never reused elsewhere
};

// Any int, stored into an enum field as its bytes: never loaded as the enum here.
template <class Enum>
void store_raw(Enum& field, int value) {
  static_assert(sizeof(Enum) == sizeof(int));
  std::memcpy(&field, &value, sizeof value);
}

class Actor {
 public:
  Actor(const std::uint8_t* data, std::size_t size, unsigned char first_tag) : input_(data, size), next_tag_(first_tag) {}

  void run() {
    require(cuCtxSetCurrent(world->context) == CUDA_SUCCESS, "context current on this thread");
    for (CUevent& event : events_) {
      require(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS, "cuEventCreate");
    }
    for (unsigned operation = 0; operation < kMaxOperations && input_.remaining_bytes() > 0; ++operation) step();
    finish();
  }

 private:
  enum class Op : std::uint8_t {
    alloc, alloc_from_pool, free, free_synchronous, bad_free, create_pool, destroy_pool, set_attribute,
    get_attribute, trim, set_access, get_access, mem_get_pool, mem_set_pool, device_pool, event, synchronize,
    pointer_query, own_stream, kMaxValue = own_stream
  };

  void step() {
    switch (input_.ConsumeEnum<Op>()) {
      case Op::alloc: alloc(); break;
      case Op::alloc_from_pool: alloc_from_pool(); break;
      case Op::free: free_block(false); break;
      case Op::free_synchronous: free_block(true); break;
      case Op::bad_free: bad_free(); break;
      case Op::create_pool: create_pool(); break;
      case Op::destroy_pool: destroy_pool(); break;
      case Op::set_attribute: set_attribute(); break;
      case Op::get_attribute: get_attribute(); break;
      case Op::trim: trim(); break;
      case Op::set_access: set_access(); break;
      case Op::get_access: get_access(); break;
      case Op::mem_get_pool: mem_get_pool(); break;
      case Op::mem_set_pool: mem_set_pool(); break;
      case Op::device_pool: device_pool(); break;
      case Op::event: event(); break;
      case Op::synchronize: synchronize(); break;
      case Op::pointer_query: pointer_query(); break;
      case Op::own_stream: own_stream(); break;
    }
  }

  // --- choices -----------------------------------------------------------------------------------

  std::size_t pick_size() {
    switch (input_.ConsumeIntegralInRange<int>(0, 9)) {
      case 0: return 0;
      case 1: case 2: case 3: case 4: return input_.ConsumeIntegralInRange<std::size_t>(1, 64 << 10);
      case 5: case 6: return input_.ConsumeIntegralInRange<std::size_t>(1, 40 << 20);
      case 7: {
        constexpr std::size_t kEdges[] = {511, 512, 513, 2 << 20, (2 << 20) + 1, 32 << 20, (32 << 20) + 512, 64 << 20,
                                          256 << 20};
        return kEdges[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kEdges) - 1)];
      }
      case 8: return input_.ConsumeIntegralInRange<std::size_t>(1, std::size_t{1} << 31);
      default: {
        constexpr std::size_t kHuge[] = {std::size_t{1} << 40, std::size_t{1} << 50, (std::size_t{1} << 62) + 1, SIZE_MAX,
                                         SIZE_MAX - 511};
        return kHuge[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kHuge) - 1)];
      }
    }
  }

  // A stream to run on; `valid` says whether the driver knows it.
  CUstream pick_stream(bool allow_forged, bool* valid) {
    *valid = true;
    switch (input_.ConsumeIntegralInRange<int>(0, 7)) {
      case 0: case 1: case 2: return world->streams[input_.ConsumeIntegralInRange<int>(0, kSharedStreams - 1)];
      case 3: return nullptr;
      case 4: return CU_STREAM_LEGACY;
      case 5: return CU_STREAM_PER_THREAD;
      case 6:
        if (own_stream_ != nullptr) return own_stream_;
        return world->streams[0];
      default:
        if (!allow_forged) return world->streams[1];
        *valid = false;
        return reinterpret_cast<CUstream>(std::uintptr_t{0x12345});
    }
  }

  // A pool handle: own (live), the defaults, the current one, own destroyed ones, or forged.
  // The current pool may be another thread's, which it may destroy at any time: neither live nor
  // dead for sure.
  enum class Handle { live, dead, unknown };
  CUmemoryPool pick_pool(Handle* state) {
    *state = Handle::live;
    switch (input_.ConsumeIntegralInRange<int>(0, 7)) {
      case 0: case 1:
        if (!pools_.empty()) return pools_[input_.ConsumeIntegralInRange<std::size_t>(0, pools_.size() - 1)].handle;
        return world->device_default;
      case 2: return world->device_default;
      case 3: return world->host_default;
      case 4: {
        CUmemoryPool current = nullptr;
        if (cuDeviceGetMemPool(&current, world->device) != CUDA_SUCCESS) return world->device_default;
        if (current != world->device_default && own_pool(current) == nullptr) *state = Handle::unknown;
        return current;
      }
      case 5:
        if (!destroyed_.empty()) {
          *state = Handle::dead;
          return destroyed_[input_.ConsumeIntegralInRange<std::size_t>(0, destroyed_.size() - 1)];
        }
        return world->device_default;
      case 6:
        *state = Handle::dead;
        return nullptr;
      default: {
        *state = Handle::dead;
        constexpr std::uintptr_t kForged[] = {0x1234, 0x1000, 0xdeadbeef0, 0x7};
        return reinterpret_cast<CUmemoryPool>(kForged[input_.ConsumeIntegralInRange<std::size_t>(0, 3)]);
      }
    }
  }

  OwnPool* own_pool(CUmemoryPool handle) {
    for (OwnPool& pool : pools_) {
      if (pool.handle == handle) return &pool;
    }
    return nullptr;
  }

  // --- allocation and free -------------------------------------------------------------------------

  void tag(Block& block) {
    block.tag = next_tag_++;
    const std::size_t head = std::min(block.bytes, kTagBytes);
    require(cuMemsetD8(block.address, block.tag, head) == CUDA_SUCCESS, "tag the start of a live allocation",
            block.address, block.bytes);
    if (block.bytes > kTagBytes) {
      const std::size_t tail = std::min(block.bytes - kTagBytes, kTagBytes);
      require(cuMemsetD8(block.address + block.bytes - tail, block.tag, tail) == CUDA_SUCCESS,
              "tag the end of a live allocation", block.address, block.bytes);
    }
  }

  void check_tag(const Block& block) {
    unsigned char seen[kTagBytes];
    const std::size_t head = std::min(block.bytes, kTagBytes);
    require(cuMemcpyDtoH(seen, block.address, head) == CUDA_SUCCESS, "read a live allocation", block.address);
    for (std::size_t index = 0; index < head; ++index) {
      require(seen[index] == block.tag, "two live allocations overlap (start)", block.address, block.bytes);
    }
    if (block.bytes > kTagBytes) {
      const std::size_t tail = std::min(block.bytes - kTagBytes, kTagBytes);
      require(cuMemcpyDtoH(seen, block.address + block.bytes - tail, tail) == CUDA_SUCCESS, "read a live allocation");
      for (std::size_t index = 0; index < tail; ++index) {
        require(seen[index] == block.tag, "two live allocations overlap (end)", block.address, block.bytes);
      }
    }
  }

  void allocated(CUresult result, CUdeviceptr address, std::size_t bytes, CUmemoryPool pool) {
    if (result != CUDA_SUCCESS) {
      require(address == 0, "a failed allocation leaves the pointer null", address, static_cast<unsigned>(result));
      return;
    }
    if (bytes == 0) {
      require(address == 0, "a 0-byte allocation is null", address);
      return;
    }
    require(address != 0 && address % 256 == 0, "an allocation is non-null and 256-byte aligned", address, bytes);
    if (live_.size() == kMaxLive) free_at(0, world->streams[0], false);
    Block block{address, bytes, pool, 0};
    tag(block);
    live_.push_back(block);
  }

  void alloc() {
    bool valid = false;
    CUstream stream = pick_stream(true, &valid);
    const std::size_t bytes = pick_size();
    const bool per_thread = input_.ConsumeBool();
    CUdeviceptr address = 1;
    const CUresult result = per_thread ? cuMemAllocAsync_ptsz(&address, bytes, stream) : cuMemAllocAsync(&address, bytes, stream);
    if (!valid) require(result != CUDA_SUCCESS, "an allocation on a forged stream fails");
    allocated(result, address, bytes, nullptr);
  }

  void alloc_from_pool() {
    bool valid_stream = false;
    Handle pool_state = Handle::live;
    CUstream stream = pick_stream(true, &valid_stream);
    CUmemoryPool pool = pick_pool(&pool_state);
    const std::size_t bytes = pick_size();
    CUdeviceptr address = 1;
    const CUresult result = input_.ConsumeBool() ? cuMemAllocFromPoolAsync_ptsz(&address, bytes, pool, stream)
                                                 : cuMemAllocFromPoolAsync(&address, bytes, pool, stream);
    if (pool_state == Handle::dead) require(result != CUDA_SUCCESS, "an allocation from a dead or forged pool fails", result);
    if (!valid_stream) require(result != CUDA_SUCCESS, "an allocation on a forged stream fails");
    allocated(result, address, bytes, pool);
  }

  void free_at(std::size_t index, CUstream stream, bool synchronous, bool valid_stream = true) {
    const Block block = live_[index];
    check_tag(block);
    CUresult result = CUDA_SUCCESS;
    if (synchronous) {
      result = cuMemFree(block.address);
    } else {
      result = input_.ConsumeBool() ? cuMemFreeAsync_ptsz(block.address, stream) : cuMemFreeAsync(block.address, stream);
    }
    if (!valid_stream) {
      require(result != CUDA_SUCCESS, "a free on a forged stream fails", block.address);
      return;  // still live
    }
    require(result == CUDA_SUCCESS, "a free of a live allocation succeeds", block.address, static_cast<unsigned>(result));
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
    if (block.pool != nullptr) {
      const OwnPool* pool = own_pool(block.pool);
      if (pool != nullptr && pool->vmm_device && freed_.size() < 16) freed_.push_back(block.address);
    }
  }

  void free_block(bool synchronous) {
    if (live_.empty()) return;
    const std::size_t index = input_.ConsumeIntegralInRange<std::size_t>(0, live_.size() - 1);
    bool valid = false;
    CUstream stream = pick_stream(!synchronous, &valid);
    free_at(index, stream, synchronous, valid);
  }

  bool is_live(CUdeviceptr address) const {
    return std::any_of(live_.begin(), live_.end(), [&](const Block& block) { return block.address == address; });
  }

  void bad_free() {
    switch (input_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: {
        // Freed before, from a device pool only this thread allocates from: nobody holds it again
        // unless this thread allocated it anew.
        if (freed_.empty() || made_own_pool_current_) return;
        const CUdeviceptr address = freed_[input_.ConsumeIntegralInRange<std::size_t>(0, freed_.size() - 1)];
        if (is_live(address)) return;
        require(cuMemFreeAsync(address, world->streams[0]) == CUDA_ERROR_INVALID_VALUE, "a second free is invalid",
                address);
        return;
      }
      case 1: case 2: {
        if (live_.empty()) return;
        const Block& block = live_[input_.ConsumeIntegralInRange<std::size_t>(0, live_.size() - 1)];
        if (block.bytes < 2) return;
        const CUdeviceptr interior = block.address + input_.ConsumeIntegralInRange<std::size_t>(1, block.bytes - 1);
        const CUresult result = input_.ConsumeBool() ? cuMemFree(interior) : cuMemFreeAsync(interior, world->streams[1]);
        require(result == CUDA_ERROR_INVALID_VALUE, "a free of an interior pointer is invalid", interior, result);
        return;
      }
      default: {
        constexpr CUdeviceptr kForged[] = {0x1000, 0xdead0000, 0x7};
        (void)cuMemFreeAsync(kForged[input_.ConsumeIntegralInRange<std::size_t>(0, 2)], world->streams[2]);
        return;
      }
    }
  }

  // --- pools ---------------------------------------------------------------------------------------

  void create_pool() {
    if (pools_.size() + destroyed_.size() >= 6) return;  // destroyed pools keep their reservations
    CUmemPoolProps props{};
    constexpr int kAllocationTypes[] = {CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED,
                                        CU_MEM_ALLOCATION_TYPE_MANAGED, 0, -1, 3};
    constexpr int kLocationTypes[] = {CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST,
                                      CU_MEM_LOCATION_TYPE_HOST_NUMA, CU_MEM_LOCATION_TYPE_NONE, -1, 0x7fffffff};
    constexpr int kHandleTypes[] = {0, 0, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_HANDLE_TYPE_FABRIC,
                                    static_cast<int>(0xffffffffu), 0x10};
    constexpr std::size_t kMaxSizes[] = {0, 0, 1000, 32 << 20, 64 << 20, std::size_t{1} << 30, std::size_t{1} << 47,
                                         SIZE_MAX};
    store_raw(props.allocType, kAllocationTypes[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kAllocationTypes) - 1)]);
    store_raw(props.location.type, kLocationTypes[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kLocationTypes) - 1)]);
    props.location.id = input_.ConsumeBool() ? world->device : input_.ConsumeIntegralInRange<int>(-2, 65);
    store_raw(props.handleTypes, kHandleTypes[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kHandleTypes) - 1)]);
    props.maxSize = kMaxSizes[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kMaxSizes) - 1)];
    if (input_.ConsumeIntegralInRange<int>(0, 7) == 0) props.usage = input_.ConsumeIntegral<unsigned short>();
    if (input_.ConsumeIntegralInRange<int>(0, 7) == 0) props.reserved[input_.ConsumeIntegralInRange<int>(0, 53)] = 1;
    CUmemoryPool pool = nullptr;
    switch (input_.ConsumeIntegralInRange<int>(0, 9)) {
      case 0: require(cuMemPoolCreate(nullptr, &props) == CUDA_ERROR_INVALID_VALUE, "create without an out pointer"); return;
      case 1: require(cuMemPoolCreate(&pool, nullptr) == CUDA_ERROR_INVALID_VALUE, "create without props"); return;
      default: break;
    }
    if (cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS) return;
    require(pool != nullptr, "a created pool has a handle");
    int location_type = 0;
    std::memcpy(&location_type, &props.location.type, sizeof location_type);
    int allocation_type = 0;
    std::memcpy(&allocation_type, &props.allocType, sizeof allocation_type);
    const bool device = allocation_type == CU_MEM_ALLOCATION_TYPE_PINNED && location_type == CU_MEM_LOCATION_TYPE_DEVICE;
    pools_.push_back(OwnPool{pool, device});
  }

  void destroy_pool() {
    Handle state = Handle::live;
    if (!pools_.empty() && input_.ConsumeBool()) {
      const std::size_t index = input_.ConsumeIntegralInRange<std::size_t>(0, pools_.size() - 1);
      const CUmemoryPool pool = pools_[index].handle;
      require(cuMemPoolDestroy(pool) == CUDA_SUCCESS, "destroying a live pool succeeds");
      destroyed_.push_back(pool);
      pools_.erase(pools_.begin() + static_cast<std::ptrdiff_t>(index));
      // Its live allocations stay valid; they are no longer this thread's pool's to count.
      return;
    }
    CUmemoryPool pool = pick_pool(&state);
    if (own_pool(pool) != nullptr) return;  // destroyed above only
    const bool a_default = pool == world->device_default || pool == world->host_default;
    if (state == Handle::dead || a_default) {
      require(cuMemPoolDestroy(pool) == CUDA_ERROR_INVALID_VALUE, "destroying a default, dead or forged pool is invalid");
    }
  }

  void set_attribute() {
    Handle state = Handle::live;
    CUmemoryPool pool = pick_pool(&state);
    const int attribute = input_.ConsumeIntegralInRange<int>(-1, 17);
    std::uint64_t value = 0;
    switch (input_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: value = 0; break;
      case 1: value = 1; break;
      case 2: value = UINT64_MAX; break;
      default: value = input_.ConsumeIntegral<std::uint64_t>(); break;
    }
    void* where = input_.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : &value;
    const CUresult result = cuMemPoolSetAttribute(pool, static_cast<CUmemPool_attribute>(attribute), where);
    if (state == Handle::dead || where == nullptr || attribute < 1 || attribute > 15) {
      require(result == CUDA_ERROR_INVALID_VALUE, "a bad attribute call is invalid", static_cast<unsigned>(attribute), result);
    }
  }

  void get_attribute() {
    Handle state = Handle::live;
    CUmemoryPool pool = pick_pool(&state);
    const int attribute = input_.ConsumeIntegralInRange<int>(-1, 17);
    std::uint64_t value = 0;
    void* where = input_.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : &value;
    const CUresult result = cuMemPoolGetAttribute(pool, static_cast<CUmemPool_attribute>(attribute), where);
    if (state == Handle::live && where != nullptr && attribute >= 1 && attribute <= 15) {
      require(result == CUDA_SUCCESS, "every attribute 1..15 of a live pool answers", static_cast<unsigned>(attribute), result);
    } else if (state == Handle::dead || where == nullptr || attribute < 1 || attribute > 15) {
      require(result == CUDA_ERROR_INVALID_VALUE, "a bad attribute call is invalid", static_cast<unsigned>(attribute), result);
    }
  }

  void trim() {
    Handle state = Handle::live;
    CUmemoryPool pool = pick_pool(&state);
    const std::size_t keep = input_.ConsumeBool() ? 0 : pick_size();
    const CUresult result = cuMemPoolTrimTo(pool, keep);
    if (state == Handle::live) require(result == CUDA_SUCCESS, "trim of a live pool succeeds", result);
    if (state == Handle::dead) require(result == CUDA_ERROR_INVALID_VALUE, "trim of a dead pool is invalid", result);
  }

  CUmemLocation pick_location() {
    CUmemLocation location{};
    constexpr int kTypes[] = {CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA,
                              CU_MEM_LOCATION_TYPE_NONE, CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, -1, 99};
    store_raw(location.type, kTypes[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kTypes) - 1)]);
    location.id = input_.ConsumeBool() ? world->device : input_.ConsumeIntegralInRange<int>(-1, 70);
    return location;
  }

  // Tags are written by the "device" (cuMemsetD8): taking the device's or the CPU's access away
  // from a pool another thread allocates from would fail that thread's tagging. So the shared host
  // pool is left alone, and an own pool gets full access back at once.
  void set_access() {
    Handle state = Handle::live;
    CUmemoryPool pool = pick_pool(&state);
    if (pool == world->host_default) return;
    CUmemAccessDesc map[3]{};
    const std::size_t count = input_.ConsumeIntegralInRange<std::size_t>(0, 3);
    for (std::size_t index = 0; index < count; ++index) {
      map[index].location = pick_location();
      constexpr int kFlags[] = {CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READ,
                                CU_MEM_ACCESS_FLAGS_PROT_NONE, -1, 7};
      store_raw(map[index].flags, kFlags[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kFlags) - 1)]);
    }
    const CUresult result = cuMemPoolSetAccess(pool, input_.ConsumeIntegralInRange<int>(0, 9) == 0 ? nullptr : map, count);
    if (state == Handle::dead) require(result != CUDA_SUCCESS, "access of a dead or forged pool fails");
    if (own_pool(pool) != nullptr) {
      CUmemAccessDesc full[2]{};
      full[0].location = world->device_location;
      full[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      full[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
      full[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      require(cuMemPoolSetAccess(pool, full, 2) == CUDA_SUCCESS, "full access back to an own pool");
    }
  }

  void get_access() {
    Handle state = Handle::live;
    CUmemoryPool pool = pick_pool(&state);
    CUmemLocation location = pick_location();
    CUmemAccess_flags flags{};
    const CUresult result = cuMemPoolGetAccess(input_.ConsumeIntegralInRange<int>(0, 9) == 0 ? nullptr : &flags, pool, &location);
    if (state == Handle::dead) require(result != CUDA_SUCCESS, "access of a dead or forged pool fails");
  }

  int pick_allocation_type() {
    constexpr int kTypes[] = {CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_MANAGED,
                              0, -1, 0x7fffffff};
    return kTypes[input_.ConsumeIntegralInRange<std::size_t>(0, std::size(kTypes) - 1)];
  }

  void mem_get_pool() {
    CUmemLocation location = pick_location();
    CUmemoryPool pool = nullptr;
    const int type = pick_allocation_type();
    if (input_.ConsumeBool()) {
      (void)cuMemGetMemPool(&pool, &location, static_cast<CUmemAllocationType>(type));
    } else {
      (void)cuMemGetDefaultMemPool(&pool, &location, static_cast<CUmemAllocationType>(type));
    }
  }

  void mem_set_pool() {
    Handle state = Handle::live;
    CUmemoryPool pool = pick_pool(&state);
    CUmemLocation location = pick_location();
    const int type = pick_allocation_type();
    const CUresult result = cuMemSetMemPool(&location, static_cast<CUmemAllocationType>(type), pool);
    if (result == CUDA_SUCCESS && own_pool(pool) != nullptr) made_own_pool_current_ = true;
    if (state == Handle::dead) require(result != CUDA_SUCCESS, "a dead or forged pool cannot be made current");
  }

  void device_pool() {
    const int device = input_.ConsumeBool() ? world->device : input_.ConsumeIntegralInRange<int>(-1, 65);
    CUmemoryPool pool = nullptr;
    switch (input_.ConsumeIntegralInRange<int>(0, 2)) {
      case 0: (void)cuDeviceGetMemPool(&pool, device); return;
      case 1: (void)cuDeviceGetDefaultMemPool(&pool, device); return;
      default: {
        Handle state = Handle::live;
        pool = pick_pool(&state);
        const CUresult result = cuDeviceSetMemPool(device, pool);
        if (result == CUDA_SUCCESS && own_pool(pool) != nullptr) made_own_pool_current_ = true;
        if (state == Handle::dead) require(result != CUDA_SUCCESS, "a dead or forged pool cannot be made current");
      }
    }
  }

  // --- ordering ------------------------------------------------------------------------------------

  void event() {
    CUevent event = events_[input_.ConsumeIntegralInRange<int>(0, 1)];
    bool valid = false;
    CUstream stream = pick_stream(false, &valid);
    switch (input_.ConsumeIntegralInRange<int>(0, 4)) {
      case 0: require(cuEventRecord(event, stream) == CUDA_SUCCESS, "cuEventRecord"); return;
      case 1: require(cuStreamWaitEvent(stream, event, 0) == CUDA_SUCCESS, "cuStreamWaitEvent"); return;
      case 2: require(cuEventSynchronize(event) == CUDA_SUCCESS, "cuEventSynchronize"); return;
      case 3: (void)cuEventQuery(event); return;
      default: require(cuEventRecordWithFlags(event, stream, 0) == CUDA_SUCCESS, "cuEventRecordWithFlags"); return;
    }
  }

  void synchronize() {
    bool valid = false;
    CUstream stream = pick_stream(false, &valid);
    switch (input_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: require(cuStreamSynchronize(stream) == CUDA_SUCCESS, "cuStreamSynchronize"); return;
      case 1: (void)cuStreamQuery(stream); return;
      case 2: require(cuCtxSynchronize() == CUDA_SUCCESS, "cuCtxSynchronize"); return;
      default: {
        // Released at the next synchronize, then kept again.
        std::uint64_t threshold = input_.ConsumeBool() ? 0 : UINT64_MAX;
        (void)cuMemPoolSetAttribute(world->device_default, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
        return;
      }
    }
  }

  void pointer_query() {
    if (live_.empty()) {
      CUmemoryPool pool = nullptr;
      (void)cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, 0x1000);
      return;
    }
    const Block& block = live_[input_.ConsumeIntegralInRange<std::size_t>(0, live_.size() - 1)];
    const CUdeviceptr inside = block.address + input_.ConsumeIntegralInRange<std::size_t>(0, block.bytes - 1);
    CUmemoryPool pool = nullptr;
    require(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, inside) == CUDA_SUCCESS,
            "the pool of a live allocation", inside);
    if (block.pool != nullptr) require(pool == block.pool, "a live allocation's pool is the one it came from", inside);
    CUdeviceptr base = 0;
    std::size_t size = 0;
    require(cuMemGetAddressRange(&base, &size, inside) == CUDA_SUCCESS, "the range of a live allocation", inside);
    require(base == block.address && size == block.bytes, "a live allocation's range is itself", base, size);
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    CUdeviceptr start = 0;
    std::size_t range = 0;
    void* data[] = {&start, &range};
    require(cuPointerGetAttributes(2, attributes, data, inside) == CUDA_SUCCESS, "the attributes of a live allocation");
    require(start == block.address && range == block.bytes, "a live allocation's attributes", start, range);
  }

  void own_stream() {
    if (own_stream_ == nullptr) {
      (void)cuStreamCreate(&own_stream_, input_.ConsumeBool() ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT);
      return;
    }
    // Frees pending on it stay pending; allocations made on it may be freed anywhere later.
    require(cuStreamDestroy(own_stream_) == CUDA_SUCCESS, "cuStreamDestroy");
    own_stream_ = nullptr;
  }

  // --- the end of the input ------------------------------------------------------------------------

  void finish() {
    for (const OwnPool& pool : pools_) {
      if (made_own_pool_current_) break;  // another thread may allocate from it through cuMemAllocAsync
      std::uint64_t expected = 0;
      for (const Block& block : live_) {
        if (block.pool == pool.handle) expected += block.bytes;
      }
      const std::uint64_t used = pool_stat(pool.handle, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
      require(used == expected, "USED_MEM_CURRENT of a pool one thread uses is its live bytes", used, expected);
    }
    while (!live_.empty()) free_at(live_.size() - 1, world->streams[2], false);
    for (const OwnPool& pool : pools_) require(cuMemPoolDestroy(pool.handle) == CUDA_SUCCESS, "destroy at the end");
    for (CUevent event : events_) require(cuEventDestroy(event) == CUDA_SUCCESS, "cuEventDestroy");
    if (own_stream_ != nullptr) require(cuStreamDestroy(own_stream_) == CUDA_SUCCESS, "cuStreamDestroy");
  }

  FuzzedDataProvider input_;
  unsigned char next_tag_;
  std::vector<Block> live_;
  std::vector<OwnPool> pools_;
  std::vector<CUmemoryPool> destroyed_;
  std::vector<CUdeviceptr> freed_;
  CUevent events_[2] = {};
  CUstream own_stream_ = nullptr;
  bool made_own_pool_current_ = false;
};

// After an input: nothing in use, and the fake has exactly what the pools report mapped.
void check_quiescent() {
  require(cuCtxSetCurrent(world->context) == CUDA_SUCCESS, "context current");
  require(cuDeviceSetMemPool(world->device, world->device_default) == CUDA_SUCCESS, "default pool current again");
  require(cuMemSetMemPool(&world->host_location, CU_MEM_ALLOCATION_TYPE_PINNED, world->host_default) == CUDA_SUCCESS,
          "default host pool current again");
  require(cuCtxSynchronize() == CUDA_SUCCESS, "cuCtxSynchronize at the end");
  std::uint64_t keep_everything = UINT64_MAX;
  require(cuMemPoolSetAttribute(world->device_default, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything) ==
              CUDA_SUCCESS,
          "release threshold");
  const std::uint64_t device_used = pool_stat(world->device_default, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  const std::uint64_t host_used = pool_stat(world->host_default, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  require(device_used == 0 && host_used == 0, "nothing in use once everything is freed", device_used, host_used);
  if (world->vmm_live != nullptr) {
    unsigned long long mapped = 0;
    world->vmm_live(nullptr, &mapped, nullptr, nullptr);
    const std::uint64_t reserved = pool_stat(world->device_default, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) +
                                   pool_stat(world->host_default, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    // Created pools were destroyed and synchronized: they hold nothing now.
    require(mapped == reserved, "the driver has mapped what the pools report reserved", mapped, reserved);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  set_up_world();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool two_threads = (data[0] & 1) != 0;
  ++data;
  --size;
  if (!two_threads) {
    Actor(data, size, 0x10).run();
  } else {
    const std::size_t half = size / 2;
    Actor second(data + half, size - half, 0x90);
    std::thread other([&second] { second.run(); });
    Actor(data, half, 0x10).run();
    other.join();
  }
  check_quiescent();
  return 0;
}
