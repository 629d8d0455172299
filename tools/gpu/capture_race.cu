// Graph capture begun on one thread while another allocates: the race cases of
// tests/safety/capture_race_test.cpp, for a GPU, in each capture mode (relaxed, thread-local, global).
//
// Each round: stream A allocates a chunk-sized block, queues work that still uses it (a host
// function that sleeps: the same program runs over the CPU-only fake driver, where kernels do not
// run) and frees it behind. Then, at one moment, thread T2 begins a capture and thread T1 allocates
// the same size on stream B:
//   growth    T2 captures A; B grows past A's pending free (streampool records a marker on A)
//   poll      B has grown once before (a marker on A pending); T2 captures another stream C and B
//             allocates again (streampool polls the marker)
//   capped    the pool is capped at one block: B's request waits on A (an inserted dependency) or fails
// T2 ends its capture once T1's allocation returned, and B allocates once more (where a marker the
// capture swallowed would read complete). A violation is B's first work on A's block (a host
// function queued right after the allocation) beginning while A's work on it still runs; and
// every capture must end with CUDA_SUCCESS (a call made while it ran may have invalidated it).
//
// Prints one line per case: "capture race <case> <mode>: rounds=N violations=V end_failures=F
// first_end=R" (R the first failing cuStreamEndCapture result, 0 if none). The output is the same on
// NVIDIA's driver alone and under LD_PRELOAD=libstreampool.so when both are safe. Driver API only,
// no kernels: built with nvcc (tools/gpu/capture_race.sh). Exit status 0 when every call that must
// succeed did (violations and end failures are reported, not counted in the status).
#include <cuda.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

constexpr std::size_t kBlockBytes = std::size_t{32} << 20;  // the driver's first chunk, and streampool's
constexpr int kOldWorkUs = 3000;

bool all_ok = true;

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "capture race: %s failed: %s (%d)\n", what, name != nullptr ? name : "?", static_cast<int>(result));
  all_ok = false;
}

struct OldOwner {
  std::atomic<bool> done{false};
};
struct NewOwner {
  const OldOwner* previous = nullptr;
  std::atomic<int>* violations = nullptr;
};

void CUDA_CB old_work(void* data) {
  std::this_thread::sleep_for(std::chrono::microseconds(kOldWorkUs));
  static_cast<OldOwner*>(data)->done.store(true);
}
void CUDA_CB new_work(void* data) {
  auto* owner = static_cast<NewOwner*>(data);
  if (!owner->previous->done.load()) owner->violations->fetch_add(1);
}

enum class Case { growth, poll, capped };
const char* case_name(Case which) {
  return which == Case::growth ? "growth" : which == Case::poll ? "poll" : "capped";
}
const char* mode_name(CUstreamCaptureMode mode) {
  return mode == CU_STREAM_CAPTURE_MODE_GLOBAL ? "global"
         : mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "thread-local" : "relaxed";
}

CUmemoryPool create_pool(CUdevice device, std::size_t max_size) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  props.maxSize = max_size;
  CUmemoryPool pool = nullptr;
  check(cuMemPoolCreate(&pool, &props), "cuMemPoolCreate");
  cuuint64_t keep = ~cuuint64_t{0};
  if (pool != nullptr) check(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep), "set threshold");
  return pool;
}

void run_case(CUcontext context, CUdevice device, Case which, CUstreamCaptureMode mode, int rounds) {
  CUstream a = nullptr, b = nullptr, c = nullptr;
  check(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUmemoryPool pool = create_pool(device, which == Case::capped ? kBlockBytes : 0);
  if (pool == nullptr) return;
  CUstream captured = which == Case::poll ? c : a;
  std::atomic<int> violations{0};
  int end_failures = 0;
  CUresult first_end = CUDA_SUCCESS;
  std::barrier meet(2);

  for (int round = 0; round < rounds; ++round) {
    OldOwner old_owner;
    NewOwner new_owner{&old_owner, &violations};
    CUdeviceptr old_block = 0, grown = 0, taken = 0;
    CUresult taken_result = CUDA_ERROR_UNKNOWN;
    // Nothing of an earlier round is pending, and nothing free stays mapped: B must grow or wait.
    check(cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo");
    check(cuMemAllocFromPoolAsync(&old_block, kBlockBytes, pool, a), "alloc on A");
    check(cuLaunchHostFunc(a, old_work, &old_owner), "old owner's work");
    check(cuMemFreeAsync(old_block, a), "free on A");
    if (which == Case::poll) check(cuMemAllocFromPoolAsync(&grown, kBlockBytes, pool, b), "alloc on B");

    std::thread capturer([&] {
      cuCtxSetCurrent(context);
      meet.arrive_and_wait();  // begin at the moment T1 allocates
      CUresult begin = cuStreamBeginCapture_v2(captured, mode);
      meet.arrive_and_wait();  // T1's allocation returned
      if (begin == CUDA_SUCCESS) {
        CUgraph graph = nullptr;
        CUresult end = cuStreamEndCapture(captured, &graph);
        if (end != CUDA_SUCCESS) {
          if (end_failures++ == 0) first_end = end;
        }
        if (graph != nullptr) cuGraphDestroy(graph);
      } else {
        check(begin, "cuStreamBeginCapture_v2");
      }
    });
    meet.arrive_and_wait();
    taken_result = cuMemAllocFromPoolAsync(&taken, kBlockBytes, pool, b);
    if (taken_result == CUDA_SUCCESS && taken == old_block) check(cuLaunchHostFunc(b, new_work, &new_owner), "new owner's work");
    meet.arrive_and_wait();
    capturer.join();
    if (taken_result != CUDA_SUCCESS && !(which == Case::capped && taken_result == CUDA_ERROR_OUT_OF_MEMORY)) {
      check(taken_result, "alloc on B");
    }
    // Once more after the capture: a marker the capture swallowed would now read complete.
    CUdeviceptr after = 0;
    if (which != Case::capped) {
      check(cuMemAllocFromPoolAsync(&after, kBlockBytes, pool, b), "alloc on B after the capture");
      if (after == old_block) check(cuLaunchHostFunc(b, new_work, &new_owner), "new owner's work");
    }
    // Only once the capture ended: synchronizing during a global capture is not allowed.
    check(cuStreamSynchronize(a), "cuStreamSynchronize(A)");
    check(cuStreamSynchronize(b), "cuStreamSynchronize(B)");
    if (taken_result == CUDA_SUCCESS) check(cuMemFreeAsync(taken, b), "free on B");
    if (grown != 0) check(cuMemFreeAsync(grown, b), "free on B");
    if (after != 0) check(cuMemFreeAsync(after, b), "free on B");
    check(cuStreamSynchronize(b), "cuStreamSynchronize(B)");
  }
  std::printf("capture race %s %s: rounds=%d violations=%d end_failures=%d first_end=%d\n", case_name(which),
              mode_name(mode), rounds, violations.load(), end_failures, static_cast<int>(first_end));
  std::fflush(stdout);
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  cuMemPoolDestroy(pool);
  cuStreamDestroy(a);
  cuStreamDestroy(b);
  cuStreamDestroy(c);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 100;
  if (argc > 1) rounds = std::atoi(argv[1]);
  if (rounds <= 0) rounds = 100;
  CUdevice device = 0;
  CUcontext context = nullptr;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  if (!all_ok) return 1;
  const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                       CU_STREAM_CAPTURE_MODE_GLOBAL};
  for (Case which : {Case::growth, Case::poll, Case::capped}) {
    for (CUstreamCaptureMode mode : modes) run_case(context, device, which, mode, rounds);
  }
  cuDevicePrimaryCtxRelease(device);
  return all_ok ? 0 : 1;
}
