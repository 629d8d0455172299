// Stream capture with the stream-ordered allocator: the patterns real programs use, checked on
// results. Run on NVIDIA's driver alone and under LD_PRELOAD=libstreampool.so; both runs must print
// the same lines.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 capture_patterns.cu -o capture_patterns [-cudart shared]
//
// 1. fork/join (the pattern of NVIDIA's graphMemoryNodes sample): cudaMallocAsync on the capturing
//    stream, an event recorded there and waited for by a second stream, allocations and frees on
//    both streams, the second stream joined back; the graph launched with new inputs, and a variant
//    whose result allocation outlives the graph and is freed outside it with cudaFreeAsync.
// 2. cudaStreamBeginCaptureToGraph: capture appended to a graph that already has a node.
// 3. captures on four threads at once, two in thread-local and two in relaxed mode, each with
//    allocations and frees inside.
// 4. a global-mode capture on one thread while another thread allocates, frees and orders frees
//    with events on streams that are not capturing.
// 5. frees of pool pointers (allocated outside any capture) inside a capture: the result codes
//    are printed (the runtime documents that a captured free takes graph allocations only), then
//    the pointers are freed for real.
// 6. pool pointers (default pool and a created pool) used by a captured graph that also allocates
//    from the created pool inside; launched on other streams, inputs changed between launches,
//    the pool pointers freed on a third stream afterwards.
//
// Prints "name: ok" or "name: FAILED ..." lines and, for the calls whose outcome is the driver's to
// decide, the error name; nothing that differs from run to run. Exits 1 if any check failed.
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 256;

int g_failures = 0;

// Reports a failed call and makes the enclosing test (a function returning bool) fail.
#define CHECK(call)                                                                           \
  do {                                                                                        \
    cudaError_t check_status_ = (call);                                                       \
    if (check_status_ != cudaSuccess) {                                                       \
      std::printf("  %s -> %s (line %d)\n", #call, cudaGetErrorName(check_status_), __LINE__); \
      return false;                                                                           \
    }                                                                                         \
  } while (0)

#define EXPECT(condition, what)                  \
  do {                                           \
    if (!(condition)) {                          \
      std::printf("  wrong result: %s\n", what); \
      return false;                              \
    }                                            \
  } while (0)

void report(const char* name, bool passed) {
  std::printf("%s: %s\n", name, passed ? "ok" : "FAILED");
  if (!passed) ++g_failures;
  // A failed test may leave an error behind; the next test starts clean.
  (void)cudaGetLastError();
}

__global__ void square(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i];
}

__global__ void negate(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = -in[i];
}

__global__ void add_scaled(const int* a, const int* b, int scale, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + scale * b[i];
}

__global__ void fill(int* out, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + i % 7;
}

int blocks(int n) { return (n + kThreads - 1) / kThreads; }

// Host memory that copies inside a capture can target (pageable memory cannot be captured).
struct Pinned {
  int* p = nullptr;
  explicit Pinned(int n) {
    if (cudaMallocHost(&p, sizeof(int) * static_cast<size_t>(n)) != cudaSuccess) p = nullptr;
  }
  ~Pinned() {
    if (p) cudaFreeHost(p);
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
};

// A barrier for std::thread (C++17 has none).
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    int generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation != generation_; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_;
  int arrived_ = 0;
  int generation_ = 0;
};

// 1. The fork/join of graphMemoryNodes. result = -(in^2) + 3 * in^2: squares on s1, a copy of
// them in a temporary on s2, the negation on s1 into an allocation made after a free on s1, the
// combination on s2, joined back to s1 for the copy out. When keep_result is set, the result allocation is not
// freed in the graph and comes back through *kept.
bool capture_fork_join(cudaStream_t s1, cudaStream_t s2, int n, const int* host_in, int* host_out,
                       cudaGraphExec_t* exec, int** kept) {
  cudaEvent_t squared, negated, joined;
  CHECK(cudaEventCreateWithFlags(&squared, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&negated, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  size_t bytes = sizeof(int) * static_cast<size_t>(n);
  int *in = nullptr, *sq = nullptr, *neg = nullptr, *tmp = nullptr, *result = nullptr;
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CHECK(cudaMallocAsync(&in, bytes, s1));
  CHECK(cudaMallocAsync(&sq, bytes, s1));
  CHECK(cudaMemcpyAsync(in, host_in, bytes, cudaMemcpyHostToDevice, s1));
  square<<<blocks(n), kThreads, 0, s1>>>(in, sq, n);
  CHECK(cudaEventRecord(squared, s1));
  CHECK(cudaStreamWaitEvent(s2, squared, 0));  // s2 joins the capture
  CHECK(cudaMallocAsync(&tmp, bytes, s2));
  fill<<<blocks(n), kThreads, 0, s2>>>(tmp, 1, n);
  add_scaled<<<blocks(n), kThreads, 0, s2>>>(sq, tmp, 0, tmp, n);  // tmp = sq + 0 * tmp
  CHECK(cudaFreeAsync(in, s1));
  CHECK(cudaMallocAsync(&neg, bytes, s1));
  negate<<<blocks(n), kThreads, 0, s1>>>(sq, neg, n);
  CHECK(cudaEventRecord(negated, s1));
  CHECK(cudaStreamWaitEvent(s2, negated, 0));
  CHECK(cudaMallocAsync(&result, bytes, s2));
  add_scaled<<<blocks(n), kThreads, 0, s2>>>(neg, tmp, 3, result, n);  // -sq + 3 * sq
  CHECK(cudaFreeAsync(tmp, s2));
  CHECK(cudaFreeAsync(sq, s2));
  CHECK(cudaEventRecord(joined, s2));
  CHECK(cudaStreamWaitEvent(s1, joined, 0));  // join back
  CHECK(cudaMemcpyAsync(host_out, result, bytes, cudaMemcpyDeviceToHost, s1));
  CHECK(cudaFreeAsync(neg, s1));
  if (kept) {
    *kept = result;
  } else {
    CHECK(cudaFreeAsync(result, s1));
  }
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(s1, &graph));
  CHECK(cudaGraphInstantiate(exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(squared));
  CHECK(cudaEventDestroy(negated));
  CHECK(cudaEventDestroy(joined));
  return true;
}

bool fork_join_expected(const int* in, const int* out, int n) {
  for (int i = 0; i < n; ++i) {
    int s = in[i] * in[i];
    if (out[i] != -s + 3 * s) return false;
  }
  return true;
}

bool test_fork_join(bool keep_result, const char* label) {
  const int n = 1 << 20;
  cudaStream_t s1, s2, other;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  Pinned in(n), out(n);
  EXPECT(in.p && out.p, "pinned host buffers");
  cudaGraphExec_t exec;
  int* kept = nullptr;
  if (!capture_fork_join(s1, s2, n, in.p, out.p, &exec, keep_result ? &kept : nullptr)) return false;
  for (int launch = 0; launch < 3; ++launch) {
    for (int i = 0; i < n; ++i) in.p[i] = (i * (launch + 3)) % 1000 - 500;
    std::memset(out.p, 0, sizeof(int) * n);
    // Launched on the capture stream, then on another one.
    cudaStream_t on = launch == 1 ? other : s1;
    CHECK(cudaGraphLaunch(exec, on));
    if (keep_result) {
      // The graph's result allocation survives the launch: freed outside the graph, on a stream,
      // before the next launch may allocate it again.
      CHECK(cudaFreeAsync(kept, on));
    }
    CHECK(cudaStreamSynchronize(on));
    char what[64];
    std::snprintf(what, sizeof what, "%s launch %d", label, launch);
    EXPECT(fork_join_expected(in.p, out.p, n), what);
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaStreamDestroy(other));
  return true;
}

// 2. Capture appended to an existing graph: a memset node first, then the captured work after it.
bool test_capture_to_graph() {
  const int n = 1 << 18;
  size_t bytes = sizeof(int) * n;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* out = nullptr;
  CHECK(cudaMallocAsync(&out, bytes, s));  // a pool pointer the graph writes to
  CHECK(cudaStreamSynchronize(s));
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t memset_node;
  cudaMemsetParams memset_params = {};
  memset_params.dst = out;
  memset_params.value = 0;
  memset_params.elementSize = sizeof(int);
  memset_params.width = n;
  memset_params.height = 1;
  CHECK(cudaGraphAddMemsetNode(&memset_node, graph, nullptr, 0, &memset_params));
  CHECK(cudaStreamBeginCaptureToGraph(s, graph, &memset_node, nullptr, 1, cudaStreamCaptureModeGlobal));
  int* tmp = nullptr;
  CHECK(cudaMallocAsync(&tmp, bytes, s));
  fill<<<blocks(n), kThreads, 0, s>>>(tmp, 10, n);
  add_scaled<<<blocks(n), kThreads, 0, s>>>(out, tmp, 2, out, n);  // out = 0 + 2 * (10 + i % 7)
  CHECK(cudaFreeAsync(tmp, s));
  cudaGraph_t captured;
  CHECK(cudaStreamEndCapture(s, &captured));
  EXPECT(captured == graph, "cudaStreamEndCapture returns the graph captured into");
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::printf("  capture to graph: %zu nodes\n", nodes);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<int> host(n);
  for (int launch = 0; launch < 2; ++launch) {
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaMemcpyAsync(host.data(), out, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) EXPECT(host[i] == 2 * (10 + i % 7), "captured-to-graph result");
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFreeAsync(out, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  return true;
}

// 3. One thread's capture, in the given mode, overlapping with the other threads' captures.
bool capture_on_thread(int index, cudaStreamCaptureMode mode, Barrier& barrier, std::string& message) {
  const int n = 1 << 16;
  size_t bytes = sizeof(int) * n;
  bool good = false;
  cudaStream_t s = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  Pinned out(n);
  auto step = [&]() -> bool {
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    EXPECT(out.p, "pinned host buffer");
    return true;
  };
  bool ready = step();
  barrier.wait();  // every thread set up
  auto capture = [&]() -> bool {
    CHECK(cudaStreamBeginCapture(s, mode));
    return true;
  };
  bool began = ready && capture();
  barrier.wait();  // every capture begun: they overlap from here
  auto body = [&]() -> bool {
    int *a = nullptr, *b = nullptr;
    for (int round = 0; round < 4; ++round) {
      CHECK(cudaMallocAsync(&a, bytes, s));
      fill<<<blocks(n), kThreads, 0, s>>>(a, index * 100 + round, n);
      CHECK(cudaMallocAsync(&b, bytes * (round + 1), s));
      square<<<blocks(n), kThreads, 0, s>>>(a, b, n);
      CHECK(cudaFreeAsync(a, s));
      if (round == 3) CHECK(cudaMemcpyAsync(out.p, b, bytes, cudaMemcpyDeviceToHost, s));
      CHECK(cudaFreeAsync(b, s));
    }
    return true;
  };
  bool captured = began && body();
  barrier.wait();  // every thread captured its work
  if (began) {
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    if (end != cudaSuccess) {
      message = std::string("cudaStreamEndCapture -> ") + cudaGetErrorName(end);
      captured = false;
    }
  }
  barrier.wait();  // every capture ended
  auto run = [&]() -> bool {
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) {
      int v = index * 100 + 3 + i % 7;
      EXPECT(out.p[i] == v * v, "thread capture result");
    }
    CHECK(cudaGraphExecDestroy(exec));
    return true;
  };
  if (captured) good = run();
  if (graph) cudaGraphDestroy(graph);
  if (s) cudaStreamDestroy(s);
  return good;
}

bool test_threaded_captures() {
  const int count = 4;
  const cudaStreamCaptureMode modes[count] = {cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeThreadLocal,
                                              cudaStreamCaptureModeRelaxed, cudaStreamCaptureModeRelaxed};
  Barrier barrier(count);
  std::vector<std::thread> threads;
  bool results[count] = {};
  std::string messages[count];
  for (int t = 0; t < count; ++t) {
    threads.emplace_back([&, t] { results[t] = capture_on_thread(t, modes[t], barrier, messages[t]); });
  }
  for (auto& thread : threads) thread.join();
  bool all = true;
  for (int t = 0; t < count; ++t) {
    std::printf("  thread %d (%s mode): %s%s%s\n", t,
                modes[t] == cudaStreamCaptureModeThreadLocal ? "thread-local" : "relaxed", results[t] ? "ok" : "FAILED",
                messages[t].empty() ? "" : ", ", messages[t].c_str());
    all = all && results[t];
  }
  return all;
}

// 4. A global-mode capture on this thread while another thread allocates on streams that do not
// capture. Every allocator call of the other thread happens while the capture is open.
bool test_global_capture_with_other_thread() {
  const int n = 1 << 18;
  size_t bytes = sizeof(int) * n;
  cudaStream_t capturing, b1, b2;
  CHECK(cudaStreamCreateWithFlags(&capturing, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b2, cudaStreamNonBlocking));
  cudaEvent_t handoff;
  CHECK(cudaEventCreateWithFlags(&handoff, cudaEventDisableTiming));
  Pinned out(n);
  EXPECT(out.p, "pinned host buffer");
  // Warm the default pool outside the capture, so the other thread also reuses freed blocks.
  int* warm = nullptr;
  CHECK(cudaMallocAsync(&warm, 64 << 20, b1));
  CHECK(cudaFreeAsync(warm, b1));
  CHECK(cudaStreamSynchronize(b1));

  // The capture begins before the other thread exists: all its calls overlap the capture.
  CHECK(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal));
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  int calls = 0, failed = 0;
  cudaError_t first_error = cudaSuccess;
  std::thread other([&] {
    // NVIDIA's driver refuses allocator and ordering calls of other threads during a global
    // capture (cudaErrorStreamCaptureUnsupported, and the capture is invalidated) unless the thread
    // opts out, as a well-behaved program does: the check is that what streampool itself does for
    // these calls leaves the capture intact.
    auto note = [&](cudaError_t status) {
      ++calls;
      if (status != cudaSuccess) {
        if (failed++ == 0) first_error = status;
      }
    };
    cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
    note(cudaThreadExchangeStreamCaptureMode(&relaxed));
    for (int round = 0; round < 200; ++round) {
      void* p = nullptr;
      size_t size = static_cast<size_t>(4096) << (round % 12);
      note(cudaMallocAsync(&p, size, b1));
      if (!p) continue;
      note(cudaMemsetAsync(p, round & 0xff, size, b1));
      if (round % 3 == 0) {
        // Freed on the other stream, ordered by an event.
        note(cudaEventRecord(handoff, b1));
        note(cudaStreamWaitEvent(b2, handoff, 0));
        note(cudaFreeAsync(p, b2));
      } else {
        note(cudaFreeAsync(p, b1));
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
    cv.notify_all();
  });

  // From here to the join, no early return: the thread must be joined.
  int *a = nullptr, *b = nullptr;
  cudaError_t capture_status = cudaSuccess;
  for (int round = 0; round < 20 && capture_status == cudaSuccess; ++round) {
    capture_status = cudaMallocAsync(&a, bytes, capturing);
    if (capture_status != cudaSuccess) break;
    fill<<<blocks(n), kThreads, 0, capturing>>>(a, round, n);
    capture_status = cudaMallocAsync(&b, bytes, capturing);
    if (capture_status != cudaSuccess) break;
    square<<<blocks(n), kThreads, 0, capturing>>>(a, b, n);
    if (round == 19) capture_status = cudaMemcpyAsync(out.p, b, bytes, cudaMemcpyDeviceToHost, capturing);
    if (capture_status == cudaSuccess) capture_status = cudaFreeAsync(a, capturing);
    if (capture_status == cudaSuccess) capture_status = cudaFreeAsync(b, capturing);
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return done; });
  }
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(capturing, &graph);
  other.join();
  std::printf("  other thread: %d allocator and ordering calls, %d failed%s%s\n", calls, failed,
              failed ? ", first: " : "", failed ? cudaGetErrorName(first_error) : "");
  std::printf("  capturing thread: calls %s, cudaStreamEndCapture %s\n", cudaGetErrorName(capture_status),
              cudaGetErrorName(end));
  (void)cudaGetLastError();
  CHECK(cudaStreamSynchronize(b1));
  CHECK(cudaStreamSynchronize(b2));
  bool good = failed == 0 && capture_status == cudaSuccess && end == cudaSuccess;
  if (end == cudaSuccess && graph) {
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, capturing));
    CHECK(cudaStreamSynchronize(capturing));
    for (int i = 0; i < n; ++i) {
      int v = 19 + i % 7;
      EXPECT(out.p[i] == v * v, "global capture result");
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }
  CHECK(cudaEventDestroy(handoff));
  CHECK(cudaStreamDestroy(capturing));
  CHECK(cudaStreamDestroy(b1));
  CHECK(cudaStreamDestroy(b2));
  return good;
}

// 5. A pool pointer, allocated outside any capture, freed inside one. The runtime documents that a
// captured free takes graph allocations only: the codes are printed, compared with the driver's.
bool test_free_pool_pointer_in_capture(cudaStreamCaptureMode mode, const char* mode_name) {
  const int n = 1 << 16;
  size_t bytes = sizeof(int) * n;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* p = nullptr;
  CHECK(cudaMallocAsync(&p, bytes, s));
  fill<<<blocks(n), kThreads, 0, s>>>(p, 5, n);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamBeginCapture(s, mode));
  square<<<blocks(n), kThreads, 0, s>>>(p, p, n);
  cudaError_t freed = cudaFreeAsync(p, s);
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(s, &graph);
  cudaError_t last = cudaGetLastError();
  std::printf("  %s mode: cudaFreeAsync(pool pointer) in capture %s, cudaStreamEndCapture %s, then %s\n", mode_name,
              cudaGetErrorName(freed), cudaGetErrorName(end), cudaGetErrorName(last));
  bool launched = false;
  if (end == cudaSuccess && graph) {
    cudaGraphExec_t exec;
    cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    std::printf("  %s mode: instantiate %s\n", mode_name, cudaGetErrorName(instantiated));
    if (instantiated == cudaSuccess) {
      CHECK(cudaGraphLaunch(exec, s));
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaGraphExecDestroy(exec));
      launched = true;
    }
    CHECK(cudaGraphDestroy(graph));
  }
  (void)cudaGetLastError();
  bool graph_freed = launched && freed == cudaSuccess;
  if (!graph_freed) {
    // The pointer is still the program's: it holds what the kernels that ran wrote (the one
    // before the capture, and the captured square if the graph was launched), and frees normally.
    std::vector<int> host(n);
    CHECK(cudaMemcpyAsync(host.data(), p, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) {
      int v = 5 + i % 7;
      EXPECT(host[i] == (launched ? v * v : v), "pool pointer contents after the capture");
    }
    CHECK(cudaFreeAsync(p, s));
  }
  std::printf("  %s mode: pointer freed %s\n", mode_name, graph_freed ? "by the graph" : "after the capture");
  CHECK(cudaStreamSynchronize(s));
  // The allocator still works on this stream.
  int* q = nullptr;
  CHECK(cudaMallocAsync(&q, bytes, s));
  CHECK(cudaFreeAsync(q, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
  return true;
}

// 6. Pool pointers used by a captured graph: inputs from the default pool and a created pool, a
// temporary allocated from the created pool inside the capture.
bool test_pool_pointers_in_graph() {
  const int n = 1 << 18;
  size_t bytes = sizeof(int) * n;
  cudaStream_t capture_stream, launch_stream, free_stream;
  CHECK(cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&launch_stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&free_stream, cudaStreamNonBlocking));
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  int *from_default = nullptr, *from_pool = nullptr;
  CHECK(cudaMallocAsync(&from_default, bytes, launch_stream));
  CHECK(cudaMallocFromPoolAsync(&from_pool, bytes, pool, launch_stream));
  CHECK(cudaStreamSynchronize(launch_stream));

  CHECK(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeGlobal));
  int* tmp = nullptr;
  CHECK(cudaMallocFromPoolAsync(&tmp, bytes, pool, capture_stream));
  square<<<blocks(n), kThreads, 0, capture_stream>>>(from_pool, tmp, n);
  add_scaled<<<blocks(n), kThreads, 0, capture_stream>>>(tmp, from_pool, 2, from_default, n);
  CHECK(cudaFreeAsync(tmp, capture_stream));
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(capture_stream, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));

  std::vector<int> host(n);
  for (int launch = 0; launch < 4; ++launch) {
    fill<<<blocks(n), kThreads, 0, launch_stream>>>(from_pool, launch * 10, n);
    CHECK(cudaGraphLaunch(exec, launch_stream));
    CHECK(cudaMemcpyAsync(host.data(), from_default, bytes, cudaMemcpyDeviceToHost, launch_stream));
    CHECK(cudaStreamSynchronize(launch_stream));
    for (int i = 0; i < n; ++i) {
      int v = launch * 10 + i % 7;
      EXPECT(host[i] == v * v + 2 * v, "graph on pool pointers");
    }
  }
  size_t used = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  std::printf("  created pool used bytes while the graph exists: %zu\n", used);
  // Freed on a third stream after an event: the last launch must have finished with them.
  cudaEvent_t launched;
  CHECK(cudaEventCreateWithFlags(&launched, cudaEventDisableTiming));
  CHECK(cudaGraphLaunch(exec, launch_stream));
  CHECK(cudaEventRecord(launched, launch_stream));
  CHECK(cudaStreamWaitEvent(free_stream, launched, 0));
  CHECK(cudaMemcpyAsync(host.data(), from_default, bytes, cudaMemcpyDeviceToHost, free_stream));
  CHECK(cudaFreeAsync(from_default, free_stream));
  CHECK(cudaFreeAsync(from_pool, free_stream));
  CHECK(cudaStreamSynchronize(free_stream));
  for (int i = 0; i < n; ++i) {
    int v = 30 + i % 7;
    EXPECT(host[i] == v * v + 2 * v, "last launch before the frees");
  }
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  std::printf("  created pool used bytes after the frees: %zu\n", used);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaEventDestroy(launched));
  CHECK(cudaMemPoolDestroy(pool));
  CHECK(cudaStreamDestroy(capture_stream));
  CHECK(cudaStreamDestroy(launch_stream));
  CHECK(cudaStreamDestroy(free_stream));
  return true;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return 1;
  }
  int pools = 0;
  cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0);
  std::printf("memory pools supported: %d\n", pools);
  report("fork/join capture (graphMemoryNodes pattern), 3 launches", test_fork_join(false, "fork/join"));
  report("fork/join capture, result freed outside the graph after each launch",
         test_fork_join(true, "fork/join, result kept"));
  report("cudaStreamBeginCaptureToGraph after an existing node", test_capture_to_graph());
  report("captures on 4 threads at once (thread-local and relaxed)", test_threaded_captures());
  report("global capture while another thread allocates on other streams", test_global_capture_with_other_thread());
  report("pool pointer freed inside a global capture",
         test_free_pool_pointer_in_capture(cudaStreamCaptureModeGlobal, "global"));
  report("pool pointer freed inside a relaxed capture",
         test_free_pool_pointer_in_capture(cudaStreamCaptureModeRelaxed, "relaxed"));
  report("pool pointers used by a captured graph", test_pool_pointers_in_graph());
  cudaError_t sync = cudaDeviceSynchronize();
  std::printf("final device synchronize: %s\n", cudaGetErrorName(sync));
  std::printf("capture patterns: %d failed\n", g_failures);
  return g_failures == 0 && sync == cudaSuccess ? 0 : 1;
}
