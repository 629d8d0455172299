// NVTX memory registration (src/interpose/hooks/insight/nvtx_registry.hpp): with the mode on, each
// pool mapping is an NVTX heap and each allocation a region of it, as a tool loaded through
// NVTX_INJECTION64_PATH sees them; here the tool is the fake injection (fake_nvtx/), which records
// every call. The main run has STREAMPOOL_NVTX=1; the runs with the mode off or decided by the
// environment are children of this program with their own environment.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "hooks_test_api.hpp"

namespace {

using hooks_test::DriverTest;
using hooks_test::run_child_test;

enum Kind { kHeapRegister = 1, kHeapUnregister = 2, kHeapReset = 3, kRegionRegister = 4, kRegionUnregister = 5 };

struct Event {
  int kind;
  std::uintptr_t heap;
  std::uintptr_t address;
  size_t bytes;
};

// The injection NVTX loaded: the one the environment names.
void* injection() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  return path == nullptr ? nullptr : dlopen(path, RTLD_NOW | RTLD_NOLOAD);
}

std::vector<Event> events() {
  using Read = size_t (*)(Event*, size_t);
  void* library = injection();
  auto read = library == nullptr ? nullptr : reinterpret_cast<Read>(dlsym(library, "fake_nvtx_events"));
  if (read == nullptr) return {};
  std::vector<Event> all(read(nullptr, 0) + 4096);
  all.resize(read(all.data(), all.size()));
  return all;
}

std::vector<Event> events_since(size_t mark) {
  std::vector<Event> all = events();
  return std::vector<Event>(all.begin() + static_cast<std::ptrdiff_t>(std::min(mark, all.size())), all.end());
}

unsigned long long calls(int kind) {
  using Count = unsigned long long (*)(int);
  void* library = injection();
  auto count = library == nullptr ? nullptr : reinterpret_cast<Count>(dlsym(library, "fake_nvtx_count"));
  return count == nullptr ? 0 : count(kind);
}

// The heaps registered and not unregistered after `list`: start -> bytes.
std::map<std::uintptr_t, size_t> live_heaps(const std::vector<Event>& list) {
  std::map<std::uintptr_t, size_t> heaps;
  for (const Event& event : list) {
    if (event.kind == kHeapRegister) heaps[event.address] = event.bytes;
    if (event.kind == kHeapUnregister) heaps.erase(event.heap);
  }
  return heaps;
}

// The bytes of [address, address + bytes) that registrations of `list` cover, each inside the live
// heap it names.
size_t registered_bytes_inside_heaps(const std::vector<Event>& list, CUdeviceptr address, size_t bytes) {
  std::map<std::uintptr_t, size_t> heaps;
  size_t covered = 0;
  for (const Event& event : list) {
    if (event.kind == kHeapRegister) heaps[event.address] = event.bytes;
    if (event.kind == kHeapUnregister) heaps.erase(event.heap);
    if (event.kind != kRegionRegister || event.address < address || event.address >= address + bytes) continue;
    auto heap = heaps.find(event.heap);
    if (heap == heaps.end()) continue;
    const bool inside = event.address >= heap->first && event.address + event.bytes <= heap->first + heap->second;
    if (inside) covered += event.bytes;
  }
  return covered;
}

bool unregistered(const std::vector<Event>& list, CUdeviceptr address) {
  return std::any_of(list.begin(), list.end(),
                     [&](const Event& event) { return event.kind == kRegionUnregister && event.address == address; });
}

// Whether the last region event at `address` registers it: the region is still described.
bool still_registered(const std::vector<Event>& list, CUdeviceptr address) {
  bool live = false;
  for (const Event& event : list) {
    if (event.kind == kRegionRegister && event.address == address) live = true;
    if (event.kind == kRegionUnregister && event.address == address) live = false;
  }
  return live;
}

// Region registrations and unregistrations alone (a synchronisation may also trim, which
// unregisters heaps).
std::vector<Event> region_events(const std::vector<Event>& list) {
  std::vector<Event> regions;
  for (const Event& event : list) {
    if (event.kind == kRegionRegister || event.kind == kRegionUnregister) regions.push_back(event);
  }
  return regions;
}

class NvtxRegistration : public DriverTest {};

TEST_F(NvtxRegistration, EachAllocationIsARegionOfItsExactAddressAndSizeInsideARegisteredHeap) {
  const size_t mark = events().size();
  const size_t sizes[] = {4096, 1000, 3u << 20, 512};
  std::vector<CUdeviceptr> pointers;
  for (size_t bytes : sizes) {
    CUdeviceptr pointer = 0;
    ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, bytes, stream), CUDA_SUCCESS);
    pointers.push_back(pointer);
  }

  const std::vector<Event> seen = events();
  for (size_t i = 0; i < pointers.size(); ++i) {
    EXPECT_EQ(registered_bytes_inside_heaps(seen, pointers[i], sizes[i]), sizes[i]) << "allocation of " << sizes[i];
  }
  for (CUdeviceptr pointer : pointers) EXPECT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  // The frees unregister their regions when the stream reaches them: wait, so that none of them
  // lands among the next test's events.
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_GT(events_since(mark).size(), 0u);
}

// Host function holding its stream until the test opens the gate.
void CUDA_CB wait_for_gate(void* data) {
  auto* gate = static_cast<std::atomic<bool>*>(data);
  while (!gate->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST_F(NvtxRegistration, FreeAsyncUnregistersTheRegionWhenItsStreamReachesTheFree) {
  // The work queued before the free may still use the block (a kernel in bounds is no error under
  // memcheck): the region stays until the stream gets to the free.
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 8192, stream), CUDA_SUCCESS);
  std::atomic<bool> gate{false};
  ASSERT_EQ(SP(cuLaunchHostFunc)(stream, wait_for_gate, &gate), CUDA_SUCCESS);
  const size_t mark = events().size();

  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  EXPECT_FALSE(unregistered(events_since(mark), pointer)) << "unregistered while the work before the free is queued";

  gate = true;
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  const std::vector<Event> after = region_events(events_since(mark));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].kind, kRegionUnregister);
  EXPECT_EQ(after[0].address, pointer);
}

TEST_F(NvtxRegistration, ABlockHandedOutBeforeItsFreeRanIsANewRegionTheLateUnregistrationLeavesAlone) {
  CUdeviceptr first = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&first, 8192, stream), CUDA_SUCCESS);
  std::atomic<bool> gate{false};
  ASSERT_EQ(SP(cuLaunchHostFunc)(stream, wait_for_gate, &gate), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);
  const size_t mark = events().size();
  CUdeviceptr second = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&second, 4096, stream), CUDA_SUCCESS);  // the same stream: reused at once
  ASSERT_EQ(second, first);

  gate = true;
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  // The old region went when the new one came; the free's late turn took nothing more.
  const std::vector<Event> after = region_events(events_since(mark));
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].kind, kRegionUnregister);
  EXPECT_EQ(after[1].kind, kRegionRegister);
  EXPECT_EQ(after[1].address, second);
  EXPECT_EQ(after[1].bytes, 4096u);
  ASSERT_EQ(SP(cuMemFreeAsync)(second, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  const std::vector<Event> last = region_events(events_since(mark));
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[2].kind, kRegionUnregister);
  EXPECT_EQ(last[2].address, second);
}

TEST_F(NvtxRegistration, TheByteAfterABlockIsInNoRegionThoughTheNextBlockFollowsIt) {
  // Blocks of one pool lie side by side: without a guard the byte past one block is the first of
  // the next, a registered region, and memcheck takes a write there for a valid one.
  const size_t mark = events().size();
  CUdeviceptr first = 0, second = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&first, 1024, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemAllocAsync)(&second, 1024, stream), CUDA_SUCCESS);
  const std::vector<Event> seen = region_events(events_since(mark));
  for (CUdeviceptr past : {first + 1024, second + 1024}) {
    for (const Event& event : seen) {
      EXPECT_FALSE(event.kind == kRegionRegister && event.address <= past && past < event.address + event.bytes)
          << "the byte past a block is inside the region at " << event.address;
    }
  }
  EXPECT_EQ(registered_bytes_inside_heaps(events_since(mark), first, 1024), 1024u);
  ASSERT_EQ(SP(cuMemFreeAsync)(first, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(second, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
}

TEST_F(NvtxRegistration, PoolsAreWholeChunksOfCuMemAllocWithTheModeOn) {
  // compute-sanitizer takes an NVTX heap only over memory cuMemAlloc made (measured on the H200:
  // it refuses VMM mappings and NVIDIA's own pool memory), so the mode backs pools with chunks.
  using Counter = unsigned long long (*)(const char*);
  auto counter = reinterpret_cast<Counter>(dlsym(hooks_test::fake_driver(), "streampool_fake_counter"));
  ASSERT_NE(counter, nullptr);
  const unsigned long long maps = counter("cuMemMap");
  const unsigned long long chunks = counter("cuMemAlloc_v2");
  CUmemoryPool pool = create_device_pool();
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, 3u << 20, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(counter("cuMemMap"), maps);
  EXPECT_GT(counter("cuMemAlloc_v2"), chunks);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(NvtxRegistration, AllocFromPoolAndCuMemFreeOfAPoolBlockRegisterAndUnregister) {
  CUmemoryPool pool = create_device_pool();
  CUdeviceptr pointer = 0;
  const size_t mark = events().size();

  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&pointer, 700, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(registered_bytes_inside_heaps(events_since(mark), pointer, 700), 700u);
  ASSERT_EQ(SP(cuMemFree_v2)(pointer), CUDA_SUCCESS);

  EXPECT_TRUE(unregistered(events_since(mark), pointer));
  EXPECT_FALSE(still_registered(events_since(mark), pointer)) << "a freed block is described as allocated again";
  EXPECT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);
}

TEST_F(NvtxRegistration, TrimUnregistersTheFreeMappingsAndDestroyTheRest) {
  const size_t mark = events().size();
  CUmemoryPool pool = create_device_pool();
  std::uint64_t keep_everything = UINT64_MAX;  // so that only the trim gives memory back
  ASSERT_EQ(SP(cuMemPoolSetAttribute)(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything), CUDA_SUCCESS);
  CUdeviceptr large = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&large, 40u << 20, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(large, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  const size_t heaps_before_trim = live_heaps(events_since(mark)).size();

  ASSERT_EQ(SP(cuMemPoolTrimTo)(pool, 0), CUDA_SUCCESS);
  const size_t heaps_after_trim = live_heaps(events_since(mark)).size();
  CUdeviceptr small = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&small, 1 << 20, pool, stream), CUDA_SUCCESS);
  const size_t heaps_with_small = live_heaps(events_since(mark)).size();
  ASSERT_EQ(SP(cuMemFreeAsync)(small, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemPoolDestroy)(pool), CUDA_SUCCESS);

  EXPECT_GT(heaps_before_trim, 0u);
  EXPECT_EQ(heaps_after_trim, 0u);
  EXPECT_GT(heaps_with_small, 0u);
  EXPECT_TRUE(live_heaps(events_since(mark)).empty());
}

TEST_F(NvtxRegistration, SeveralThreadsEndBalancedWithEachAddressRegisteredBeforeItIsUnregistered) {
  const size_t mark = events().size();
  constexpr int kThreads = 4;
  constexpr int kRounds = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      CUstream own = nullptr;
      SP(cuCtxSetCurrent)(context);
      if (SP(cuStreamCreate)(&own, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return;
      std::vector<CUdeviceptr> held;
      for (int round = 0; round < kRounds; ++round) {
        CUdeviceptr pointer = 0;
        // Some on the shared stream, so that blocks freed by one thread are reused by another.
        CUstream target = round % 3 == 0 ? stream : own;
        if (SP(cuMemAllocAsync)(&pointer, 512u * static_cast<unsigned>(1 + (round + t) % 7), target) == CUDA_SUCCESS) {
          held.push_back(pointer);
        }
        if (held.size() > 4) {
          SP(cuMemFreeAsync)(held.front(), target);
          held.erase(held.begin());
        }
      }
      for (CUdeviceptr pointer : held) SP(cuMemFreeAsync)(pointer, own);
      SP(cuStreamSynchronize)(own);
      SP(cuStreamDestroy_v2)(own);
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Frees in stream order unregister when their stream gets there: the shared stream's too.
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);

  std::map<std::uintptr_t, int> registered;  // address -> 1 while registered
  int out_of_order = 0;
  size_t registrations = 0;
  for (const Event& event : events_since(mark)) {
    if (event.kind == kRegionRegister) {
      ++registrations;
      if (registered[event.address]++ != 0) ++out_of_order;
    }
    if (event.kind == kRegionUnregister && registered[event.address]-- != 1) ++out_of_order;
  }
  EXPECT_EQ(registrations, static_cast<size_t>(kThreads * kRounds));
  EXPECT_EQ(out_of_order, 0);
  for (const auto& [address, count] : registered) EXPECT_EQ(count, 0) << "address " << address;
}

TEST_F(NvtxRegistration, AnImportedBlockIsARegionOfItsMappingUntilItsFree) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool exporter = nullptr;
  ASSERT_EQ(SP(cuMemPoolCreate)(&exporter, &props), CUDA_SUCCESS);
  CUdeviceptr block = 0;
  ASSERT_EQ(SP(cuMemAllocFromPoolAsync)(&block, 3000, exporter, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  int descriptor = -1;
  ASSERT_EQ(SP(cuMemPoolExportToShareableHandle)(&descriptor, exporter, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  CUmemPoolPtrExportData data{};
  ASSERT_EQ(SP(cuMemPoolExportPointer)(&data, block), CUDA_SUCCESS);
  // This process is its own importer: the exporter serves from a thread of its own.
  CUmemoryPool importer = nullptr;
  ASSERT_EQ(SP(cuMemPoolImportFromShareableHandle)(&importer, reinterpret_cast<void*>(static_cast<std::intptr_t>(descriptor)),
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS);
  const size_t mark = events().size();
  CUdeviceptr imported = 0;

  ASSERT_EQ(SP(cuMemPoolImportPointer)(&imported, importer, &data), CUDA_SUCCESS);
  const std::vector<Event> after_import = events_since(mark);
  ASSERT_EQ(SP(cuMemFreeAsync)(imported, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);

  EXPECT_NE(imported, block);
  // The exporter's block, as its export data gives it: with the mode on there too, that includes the
  // 512-byte guard after the program's 3000 bytes (the importer cannot tell the two apart).
  EXPECT_EQ(registered_bytes_inside_heaps(after_import, imported, 3512), 3512u);
  EXPECT_TRUE(unregistered(events_since(mark), imported));
  EXPECT_FALSE(still_registered(events_since(mark), imported));
  // Its mapping, a heap of its own, goes too, once streampool's reaper has unmapped it.
  const auto mapping_described = [&] {
    for (const auto& [base, bytes] : live_heaps(events())) {
      if (imported >= base && imported < base + bytes) return true;
    }
    return false;
  };
  for (int tries = 0; tries < 200 && mapping_described(); ++tries) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(mapping_described()) << "the unmapped import is still described as a heap";
  EXPECT_EQ(SP(cuMemFreeAsync)(block, stream), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(importer), CUDA_SUCCESS);
  EXPECT_EQ(SP(cuMemPoolDestroy)(exporter), CUDA_SUCCESS);
  close(descriptor);
}

// ---- the mode's setting: each a child run with its own environment ----

// Run as children only: allocate and free, then report through the exit status whether the
// injection saw registrations (0: none, 1: some).
TEST_F(NvtxRegistration, DISABLED_AllocateAndFree) {
  CUdeviceptr pointer = 0;
  ASSERT_EQ(SP(cuMemAllocAsync)(&pointer, 4096, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuMemFreeAsync)(pointer, stream), CUDA_SUCCESS);
  ASSERT_EQ(SP(cuStreamSynchronize)(stream), CUDA_SUCCESS);
  const bool saw = calls(kRegionRegister) > 0 && calls(kHeapRegister) > 0;
  std::fflush(nullptr);
  _exit(saw ? 1 : 0);
}

int child_saw_registrations(const std::vector<std::string>& environment) {
  return run_child_test("NvtxRegistration.DISABLED_AllocateAndFree", environment);
}

TEST(NvtxMode, OffWithStreampoolNvtxZeroEvenUnderTheSanitizersInjection) {
  EXPECT_EQ(child_saw_registrations({"STREAMPOOL_NVTX=0", "NVTX_INJECTION64_PATH=" FAKE_NVTX_SANITIZER_INJECTION}),
            0);
  EXPECT_EQ(child_saw_registrations({"STREAMPOOL_NVTX=1", "NVTX_INJECTION64_PATH=" FAKE_NVTX_SANITIZER_INJECTION}),
            1);
}

TEST(NvtxMode, UnsetIsOnWhenTheInjectionIsComputeSanitizers) {
  EXPECT_EQ(child_saw_registrations({"STREAMPOOL_NVTX=", "NVTX_INJECTION64_PATH=" FAKE_NVTX_SANITIZER_INJECTION}), 1);
}

TEST(NvtxMode, UnsetIsOffUnderAnotherNvtxToolAndOneAsksForIt) {
  EXPECT_EQ(child_saw_registrations({"STREAMPOOL_NVTX=", "NVTX_INJECTION64_PATH=" FAKE_NVTX_INJECTION}), 0);
  EXPECT_EQ(child_saw_registrations({"STREAMPOOL_NVTX=1", "NVTX_INJECTION64_PATH=" FAKE_NVTX_INJECTION}), 1);
}

TEST(NvtxMode, AnUnknownValueIsDecidedAsUnset) {
  EXPECT_EQ(child_saw_registrations({"STREAMPOOL_NVTX=maybe", "NVTX_INJECTION64_PATH=" FAKE_NVTX_INJECTION}), 0);
  EXPECT_EQ(child_saw_registrations({"STREAMPOOL_NVTX=maybe", "NVTX_INJECTION64_PATH=" FAKE_NVTX_SANITIZER_INJECTION}),
            1);
}

}  // namespace
