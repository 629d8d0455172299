// Reuse-safety cases that can run on a real GPU, the same program against NVIDIA's pool (no
// preload) and under streampool: each case frees a block behind a host function that sleeps
// (the "old owner's" work still running), then another stream allocates the same size. If it got
// the same memory, the new owner's first work (a host function) checks that the sleeper has
// finished; a synchronize of the new owner's stream must likewise prove it. Prints one line per
// case, "case <name>: violations=<n> errors=<text>", identical on both runs when nothing breaks;
// whether memory was reused goes to stderr (the pools may legitimately decide differently).
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

namespace {

struct Sleeper {
  std::atomic<int> done{0};
  int milliseconds = 200;
};

void CUDART_CB sleep_then_finish(void* data) {
  auto* sleeper = static_cast<Sleeper*>(data);
  usleep(static_cast<useconds_t>(sleeper->milliseconds) * 1000);
  sleeper->done.store(1);
}

struct Check {
  Sleeper* sleeper = nullptr;
  std::atomic<int> ran{0};
  std::atomic<int> saw_done{0};
};

void CUDART_CB check_finished(void* data) {
  auto* check = static_cast<Check*>(data);
  check->saw_done.store(check->sleeper->done.load());
  check->ran.store(1);
}

std::string errors;
void expect_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) errors += std::string(" ") + what + "=" + cudaGetErrorName(status);
}

void report(const char* name, int violations, bool reused) {
  std::printf("case %s: violations=%d errors=%s\n", name, violations, errors.empty() ? "none" : errors.c_str());
  std::fprintf(stderr, "case %s: reused=%s\n", name, reused ? "yes" : "no");
  std::fflush(stdout);
  errors.clear();
}

constexpr size_t kBytes = 8 << 20;

// A block freed on `freer` behind a sleeper, still pending.
void* pending_free(cudaStream_t freer, Sleeper* sleeper) {
  void* block = nullptr;
  expect_ok(cudaMallocAsync(&block, kBytes, freer), "malloc");
  expect_ok(cudaLaunchHostFunc(freer, sleep_then_finish, sleeper), "hostfunc");
  expect_ok(cudaFreeAsync(block, freer), "free");
  return block;
}

// The legacy stream's implicit order: the new owner allocates and synchronises, enqueuing nothing.
void implicit_order(const char* name, cudaStream_t freer, cudaStream_t owner) {
  Sleeper sleeper;
  void* old_block = pending_free(freer, &sleeper);
  void* block = nullptr;
  expect_ok(cudaMallocAsync(&block, kBytes, owner), "malloc2");
  expect_ok(cudaStreamSynchronize(owner), "sync");
  const bool reused = block == old_block;
  const int violations = reused && sleeper.done.load() == 0 ? 1 : 0;
  expect_ok(cudaFreeAsync(block, owner), "free2");
  expect_ok(cudaDeviceSynchronize(), "devsync");
  report(name, violations, reused);
}

// A check host function on `owner` right after its allocation.
int checked_allocation(cudaStream_t owner, void* old_block, Sleeper* sleeper, bool* reused) {
  void* block = nullptr;
  Check check;
  check.sleeper = sleeper;
  expect_ok(cudaMallocAsync(&block, kBytes, owner), "malloc2");
  expect_ok(cudaLaunchHostFunc(owner, check_finished, &check), "check");
  expect_ok(cudaStreamSynchronize(owner), "sync");
  *reused = block == old_block;
  expect_ok(cudaFreeAsync(block, owner), "free2");
  expect_ok(cudaDeviceSynchronize(), "devsync");
  return *reused && check.saw_done.load() == 0 ? 1 : 0;
}

enum class After { wait, query, synchronize };

// The event had an old, completed record; the new record is rejected by the driver (flags 0x4).
void failed_record(const char* name, After after) {
  cudaStream_t a, b;
  cudaEvent_t event;
  expect_ok(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), "stream");
  expect_ok(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), "stream");
  expect_ok(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event");
  expect_ok(cudaEventRecord(event, a), "record");
  expect_ok(cudaEventSynchronize(event), "eventsync");
  Sleeper sleeper;
  void* old_block = pending_free(a, &sleeper);
  const cudaError_t rejected = cudaEventRecordWithFlags(event, a, 0x4);
  cudaGetLastError();
  if (rejected == cudaSuccess) errors += " flags0x4=accepted";
  if (after == After::wait) expect_ok(cudaStreamWaitEvent(b, event, 0), "wait");
  if (after == After::query) expect_ok(cudaEventQuery(event), "query");
  if (after == After::synchronize) expect_ok(cudaEventSynchronize(event), "eventsync2");
  bool reused = false;
  const int violations = checked_allocation(b, old_block, &sleeper, &reused);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaEventDestroy(event);
  report(name, violations, reused);
}

// The free relies on the implicit order alone: the block's last use (a sleeper) runs on a blocking
// stream, the free is on the legacy stream, the program synchronises the legacy stream, and a
// non-blocking stream allocates. The synchronize must have waited for the use, or the block must
// not be handed out.
void implicit_free(const char* name) {
  cudaStream_t user, owner;
  expect_ok(cudaStreamCreate(&user), "stream");
  expect_ok(cudaStreamCreateWithFlags(&owner, cudaStreamNonBlocking), "stream");
  void* old_block = nullptr;
  expect_ok(cudaMallocAsync(&old_block, kBytes, cudaStreamLegacy), "malloc");
  Sleeper sleeper;
  expect_ok(cudaLaunchHostFunc(user, sleep_then_finish, &sleeper), "hostfunc");  // the last use
  expect_ok(cudaFreeAsync(old_block, cudaStreamLegacy), "free");
  expect_ok(cudaStreamSynchronize(cudaStreamLegacy), "sync-legacy");
  bool reused = false;
  const int violations = checked_allocation(owner, old_block, &sleeper, &reused);
  cudaStreamDestroy(user);
  cudaStreamDestroy(owner);
  report(name, violations, reused);
}

// A block allocated on `freer` (and complete), then freed there behind a sleeper on `user` that
// the free follows only by the legacy stream's implicit order.
void* free_behind_use(cudaStream_t freer, cudaStream_t user, Sleeper* sleeper) {
  void* block = nullptr;
  expect_ok(cudaMallocAsync(&block, kBytes, freer), "malloc");
  expect_ok(cudaStreamSynchronize(freer), "sync-freer");
  expect_ok(cudaLaunchHostFunc(user, sleep_then_finish, sleeper), "hostfunc");  // the last use
  expect_ok(cudaFreeAsync(block, freer), "free");
  return block;
}

// A pool of one 32 MiB block: a stream that allocates that size again can only take its own free
// (streampool's legacy stream otherwise takes other memory until a batch of its frees waits for a
// marker, and would then not reuse at all in these cases).
constexpr size_t kOneBlock = size_t{32} << 20;
cudaMemPool_t one_block_pool() {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  props.maxSize = kOneBlock;
  cudaMemPool_t pool = nullptr;
  expect_ok(cudaMemPoolCreate(&pool, &props), "pool");
  return pool;
}

// The legacy stream frees a block of `pool` behind a sleeper on `user` (the implicit order alone)
// and takes the size again: returns that block; *old_block is the one it freed.
void* legacy_takes_again(cudaMemPool_t pool, cudaStream_t user, Sleeper* sleeper, void** old_block) {
  expect_ok(cudaMallocFromPoolAsync(old_block, kOneBlock, pool, cudaStreamLegacy), "malloc");
  expect_ok(cudaStreamSynchronize(cudaStreamLegacy), "sync-freer");
  expect_ok(cudaLaunchHostFunc(user, sleep_then_finish, sleeper), "hostfunc");  // the last use
  expect_ok(cudaFreeAsync(*old_block, cudaStreamLegacy), "free");
  void* again = nullptr;
  expect_ok(cudaMallocFromPoolAsync(&again, kOneBlock, pool, cudaStreamLegacy), "malloc-legacy");
  return again;
}

// A check host function on `stream`, then everything done: 1 if it ran before the sleeper ended.
int checked_work(cudaStream_t stream, Sleeper* sleeper) {
  Check check;
  check.sleeper = sleeper;
  expect_ok(cudaLaunchHostFunc(stream, check_finished, &check), "check");
  expect_ok(cudaDeviceSynchronize(), "devsync");
  return check.saw_done.load() == 0 ? 1 : 0;
}

// The legacy stream takes its own free (made behind a blocking stream's use) again; the program
// either frees that block, unused, on a second blocking stream (ordered after the legacy
// allocation by the implicit order) and allocates the size there (`leaves`), or uses it there.
// The second stream's work must not run on the memory before the use ends.
void legacy_reuse(const char* name, bool leaves) {
  cudaStream_t user, second;
  expect_ok(cudaStreamCreate(&user), "stream");
  expect_ok(cudaStreamCreate(&second), "stream");
  cudaMemPool_t pool = one_block_pool();
  Sleeper sleeper;
  void* old_block = nullptr;
  void* block = legacy_takes_again(pool, user, &sleeper, &old_block);
  bool reused = block == old_block;
  if (leaves) {
    expect_ok(cudaFreeAsync(block, second), "free-second");
    expect_ok(cudaMallocFromPoolAsync(&block, kOneBlock, pool, second), "malloc-second");
    reused = block == old_block;
  }
  const int violations = checked_work(second, &sleeper) != 0 && reused ? 1 : 0;
  expect_ok(cudaFreeAsync(block, second), "free-block");
  expect_ok(cudaDeviceSynchronize(), "devsync2");
  cudaMemPoolDestroy(pool);
  cudaStreamDestroy(user);
  cudaStreamDestroy(second);
  report(name, violations, reused);
}

// Not a safety case: what a query of the legacy stream answers after its free (and, in the second
// line, its allocation of the same size) behind a blocking stream's still-running use: NVIDIA's
// free and allocation are stream operations, bound by the implicit order.
void legacy_query_probe(bool reallocate) {
  cudaStream_t user;
  expect_ok(cudaStreamCreate(&user), "stream");
  Sleeper sleeper;
  free_behind_use(cudaStreamLegacy, user, &sleeper);
  void* again = nullptr;
  if (reallocate) expect_ok(cudaMallocAsync(&again, kBytes, cudaStreamLegacy), "malloc-legacy");
  const cudaError_t answer = cudaStreamQuery(cudaStreamLegacy);
  const bool use_done = sleeper.done.load() != 0;
  std::printf("probe legacy query after its free%s behind a blocking use: %s (use done: %s) errors=%s\n",
              reallocate ? " and reallocation" : "", cudaGetErrorName(answer), use_done ? "yes" : "no",
              errors.empty() ? "none" : errors.c_str());
  errors.clear();
  expect_ok(cudaDeviceSynchronize(), "devsync");
  if (again != nullptr) cudaFreeAsync(again, cudaStreamLegacy);
  cudaDeviceSynchronize();
  cudaStreamDestroy(user);
  errors.clear();
}

// A blocking stream frees a block behind the legacy stream's still-running use and takes it again;
// a query of the blocking stream must not answer cudaSuccess before the use ends (the program would
// take the allocation as complete). The line also says what the query answered.
void blocking_reuse_query(const char* name) {
  cudaStream_t owner;
  expect_ok(cudaStreamCreate(&owner), "stream");
  Sleeper sleeper;
  void* old_block = free_behind_use(owner, cudaStreamLegacy, &sleeper);
  void* again = nullptr;
  expect_ok(cudaMallocAsync(&again, kBytes, owner), "malloc-again");
  const cudaError_t answer = cudaStreamQuery(owner);
  const bool use_done = sleeper.done.load() != 0;
  const int violations = answer == cudaSuccess && again == old_block && !use_done ? 1 : 0;
  std::printf("case %s: violations=%d query=%s errors=%s\n", name, violations, cudaGetErrorName(answer),
              errors.empty() ? "none" : errors.c_str());
  std::fprintf(stderr, "case %s: reused=%s\n", name, again == old_block ? "yes" : "no");
  errors.clear();
  expect_ok(cudaDeviceSynchronize(), "devsync");
  cudaFreeAsync(again, owner);
  cudaDeviceSynchronize();
  cudaStreamDestroy(owner);
  errors.clear();
}

// Not a safety case: whether legacy-stream work waits for the queued work of a blocking stream
// destroyed before it (the tracking's model assumes it does).
void destroyed_stream_order() {
  cudaStream_t user;
  expect_ok(cudaStreamCreate(&user), "stream");
  Sleeper sleeper;
  expect_ok(cudaLaunchHostFunc(user, sleep_then_finish, &sleeper), "hostfunc");
  expect_ok(cudaStreamDestroy(user), "destroy");
  Check check;
  check.sleeper = &sleeper;
  expect_ok(cudaLaunchHostFunc(cudaStreamLegacy, check_finished, &check), "check");
  expect_ok(cudaDeviceSynchronize(), "devsync");
  std::printf("probe legacy work after a destroyed blocking stream's pending work: waited=%s errors=%s\n",
              check.saw_done.load() != 0 ? "yes" : "no", errors.empty() ? "none" : errors.c_str());
  errors.clear();
}

// All streams in a created context; the primary context's synchronize does not wait for them.
void other_context_sync(const char* name, bool explicit_primary) {
  CUdevice device;
  CUcontext primary, created;
  cuDeviceGet(&device, 0);
  cuDevicePrimaryCtxRetain(&primary, device);
  CUctxCreateParams params{};
  if (cuCtxCreate(&created, &params, 0, device) != CUDA_SUCCESS) errors += " cuCtxCreate";
  cudaStream_t s1, s2;
  expect_ok(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "stream");
  expect_ok(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "stream");
  Sleeper sleeper;
  void* old_block = pending_free(s1, &sleeper);
  cuCtxPushCurrent(primary);
  if ((explicit_primary ? cuCtxSynchronize_v2(primary) : cuCtxSynchronize()) != CUDA_SUCCESS) errors += " ctxsync";
  CUcontext popped;
  cuCtxPopCurrent(&popped);
  bool reused = false;
  const int violations = checked_allocation(s2, old_block, &sleeper, &reused);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
  cuCtxSetCurrent(primary);
  cuCtxDestroy(created);
  cuDevicePrimaryCtxRelease(device);
  report(name, violations, reused);
}

// Thread 1 frees on A behind a sleeper and re-records E on A; thread 2 spins on E and, once it
// reads complete, allocates on B: E's old record completed long ago.
void record_query_race(const char* name, int rounds) {
  cudaStream_t a, b;
  cudaEvent_t event;
  expect_ok(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), "stream");
  expect_ok(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), "stream");
  expect_ok(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "event");
  int violations = 0;
  bool any_reused = false;
  for (int round = 0; round < rounds; ++round) {
    expect_ok(cudaEventRecord(event, a), "record");
    expect_ok(cudaEventSynchronize(event), "eventsync");
    Sleeper sleeper;
    sleeper.milliseconds = 50;
    std::atomic<int> go{0};
    void* old_block = nullptr;
    std::thread freer([&] {
      while (go.load() == 0) {
      }
      old_block = pending_free(a, &sleeper);
      cudaEventRecord(event, a);
    });
    go.store(1);
    while (cudaEventQuery(event) != cudaSuccess) {
    }
    bool reused = false;
    freer.join();
    violations += checked_allocation(b, old_block, &sleeper, &reused);
    any_reused = any_reused || reused;
  }
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaEventDestroy(event);
  report(name, violations, any_reused);
}

}  // namespace

int main() {
  cudaFree(nullptr);
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  unsigned long long threshold = ~0ull;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  cudaStream_t blocking;
  cudaStreamCreate(&blocking);
  implicit_order("legacy-free_blocking-alloc", cudaStreamLegacy, blocking);
  implicit_order("legacy-free_per-thread-alloc", cudaStreamLegacy, cudaStreamPerThread);
  implicit_order("blocking-free_legacy-alloc", blocking, cudaStreamLegacy);
  cudaStreamDestroy(blocking);
  failed_record("failed-record_then-wait", After::wait);
  failed_record("failed-record_then-query", After::query);
  failed_record("failed-record_then-synchronize", After::synchronize);
  other_context_sync("created-context_primary-ctx-synchronize", false);
  other_context_sync("created-context_ctx-synchronize-v2", true);
  record_query_race("record-query-race", 20);
  implicit_free("blocking-use_legacy-free_legacy-synchronize");
  legacy_reuse("blocking-use_legacy-free_legacy-realloc_blocking-free_blocking-alloc", true);
  legacy_reuse("blocking-use_legacy-free_legacy-realloc_blocking-use", false);
  legacy_query_probe(false);
  legacy_query_probe(true);
  blocking_reuse_query("legacy-use_blocking-free_blocking-realloc_blocking-query");
  destroyed_stream_order();
  return 0;
}
