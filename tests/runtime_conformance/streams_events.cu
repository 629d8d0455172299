// Streams and events: flags and priorities, host functions in stream order, the legacy default
// stream's synchronisation with blocking streams (and, on a GPU, not with non-blocking ones), the
// per-thread default stream (on a GPU: two threads' are independent), queries (cudaErrorNotReady is an answer, never a last error), event flags,
// elapsed time and waits between streams.
#include <mutex>
#include <vector>

#include "conformance.cuh"

using conformance::clear_last_error;
using conformance::note;
using conformance::Order;
using conformance::Step;
using conformance::Gate;
using conformance::idle_within;

namespace {

void CUDART_CB sleep_then_set(void* data) {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  static_cast<std::atomic<bool>*>(data)->store(true);
}

struct Observation {
  std::atomic<bool>* flag;
  std::atomic<int> seen{-1};
};
void CUDART_CB observe(void* data) {
  auto* observation = static_cast<Observation*>(data);
  observation->seen = observation->flag->load() ? 1 : 0;
}

void CUDART_CB sleep_20ms(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

TEST(Streams, FlagsAreTheCreationFlags) {
  cudaStream_t blocking = nullptr, non_blocking = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&blocking));
  ASSERT_CUDA(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));
  unsigned flags = 99;

  ASSERT_CUDA(cudaStreamGetFlags(blocking, &flags));
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamDefault));
  ASSERT_CUDA(cudaStreamGetFlags(non_blocking, &flags));
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamNonBlocking));

  EXPECT_CUDA(cudaStreamDestroy(blocking));
  EXPECT_CUDA(cudaStreamDestroy(non_blocking));
}

TEST(Streams, PrioritiesAreClampedToTheDevicesRange) {
  int least = 0, greatest = 0;
  ASSERT_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  EXPECT_LE(greatest, least);  // a lower number is a greater priority
  cudaStream_t high = nullptr, beyond_high = nullptr, beyond_low = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  ASSERT_CUDA(cudaStreamCreateWithPriority(&beyond_high, cudaStreamDefault, greatest - 5));
  ASSERT_CUDA(cudaStreamCreateWithPriority(&beyond_low, cudaStreamDefault, least + 5));
  int priority = 12345;
  unsigned flags = 99;

  ASSERT_CUDA(cudaStreamGetPriority(high, &priority));
  EXPECT_EQ(priority, greatest);
  ASSERT_CUDA(cudaStreamGetFlags(high, &flags));
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamNonBlocking));
  ASSERT_CUDA(cudaStreamGetPriority(beyond_high, &priority));
  EXPECT_EQ(priority, greatest);
  ASSERT_CUDA(cudaStreamGetPriority(beyond_low, &priority));
  EXPECT_EQ(priority, least);

  EXPECT_CUDA(cudaStreamDestroy(high));
  EXPECT_CUDA(cudaStreamDestroy(beyond_high));
  EXPECT_CUDA(cudaStreamDestroy(beyond_low));
}

TEST(Streams, HostFunctionsRunInStreamOrder) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Order order;
  Step steps[] = {{&order, 1}, {&order, 2}, {&order, 3}};

  for (Step& step : steps) ASSERT_CUDA(cudaLaunchHostFunc(stream, note, &step));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(order.seen, (std::vector<int>{1, 2, 3}));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(Streams, HostFunctionSeesTheCopiesBeforeIt) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&stream));
  int *pinned = nullptr, *device = nullptr;
  ASSERT_CUDA(cudaMallocHost(&pinned, 2 * sizeof(int)));
  ASSERT_CUDA(cudaMalloc(&device, sizeof(int)));
  pinned[0] = 42;
  pinned[1] = 0;
  struct Check {
    int* pinned;
    std::atomic<int> seen{-1};
  } check{pinned};

  ASSERT_CUDA(cudaMemcpyAsync(device, &pinned[0], sizeof(int), cudaMemcpyHostToDevice, stream));
  ASSERT_CUDA(cudaMemcpyAsync(&pinned[1], device, sizeof(int), cudaMemcpyDeviceToHost, stream));
  ASSERT_CUDA(cudaLaunchHostFunc(
      stream, [](void* data) { static_cast<Check*>(data)->seen = static_cast<Check*>(data)->pinned[1]; }, &check));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(check.seen, 42);
  EXPECT_CUDA(cudaFree(device));
  EXPECT_CUDA(cudaFreeHost(pinned));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(Streams, QueryIsNotReadyWhileWorkIsPendingAndThatIsNoLastError) {
  clear_last_error();
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Gate gate;
  ASSERT_CUDA(cudaLaunchHostFunc(stream, Gate::hold, &gate));

  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  gate.open = true;
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  EXPECT_CUDA(cudaStreamQuery(stream));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(Streams, BlockingStreamWaitsForTheLegacyDefaultStream) {
  cudaStream_t blocking = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&blocking));
  std::atomic<bool> legacy_done{false};
  Observation observation{&legacy_done};

  ASSERT_CUDA(cudaLaunchHostFunc(cudaStreamLegacy, sleep_then_set, &legacy_done));
  ASSERT_CUDA(cudaLaunchHostFunc(blocking, observe, &observation));
  ASSERT_CUDA(cudaStreamSynchronize(blocking));

  EXPECT_EQ(observation.seen, 1);
  EXPECT_CUDA(cudaDeviceSynchronize());
  EXPECT_CUDA(cudaStreamDestroy(blocking));
}

TEST(Streams, PerThreadDefaultStreamRunsWorkInOrder) {
  Order order;
  Step steps[] = {{&order, 1}, {&order, 2}};

  for (Step& step : steps) ASSERT_CUDA(cudaLaunchHostFunc(cudaStreamPerThread, note, &step));
  ASSERT_CUDA(cudaStreamSynchronize(cudaStreamPerThread));

  EXPECT_EQ(order.seen, (std::vector<int>{1, 2}));
}

TEST(Streams, PerThreadDefaultStreamWaitsForTheLegacyDefaultStream) {
  std::atomic<bool> legacy_done{false};
  Observation observation{&legacy_done};

  ASSERT_CUDA(cudaLaunchHostFunc(cudaStreamLegacy, sleep_then_set, &legacy_done));
  ASSERT_CUDA(cudaLaunchHostFunc(cudaStreamPerThread, observe, &observation));
  ASSERT_CUDA(cudaStreamSynchronize(cudaStreamPerThread));

  EXPECT_EQ(observation.seen, 1);
  EXPECT_CUDA(cudaDeviceSynchronize());
}

TEST(Streams, DeviceSynchronizeWaitsForEveryStream) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::atomic<bool> done{false};

  ASSERT_CUDA(cudaLaunchHostFunc(stream, sleep_then_set, &done));
  ASSERT_CUDA(cudaDeviceSynchronize());

  EXPECT_TRUE(done);
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(Events, StreamWaitEventOrdersWorkAcrossStreams) {
  cudaStream_t producer = nullptr, consumer = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  ASSERT_CUDA(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  cudaEvent_t produced = nullptr;
  ASSERT_CUDA(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  std::atomic<bool> done{false};
  Observation observation{&done};

  ASSERT_CUDA(cudaLaunchHostFunc(producer, sleep_then_set, &done));
  ASSERT_CUDA(cudaEventRecord(produced, producer));
  ASSERT_CUDA(cudaStreamWaitEvent(consumer, produced, 0));
  ASSERT_CUDA(cudaLaunchHostFunc(consumer, observe, &observation));
  ASSERT_CUDA(cudaStreamSynchronize(consumer));

  EXPECT_EQ(observation.seen, 1);
  EXPECT_CUDA(cudaEventDestroy(produced));
  EXPECT_CUDA(cudaStreamDestroy(producer));
  EXPECT_CUDA(cudaStreamDestroy(consumer));
}

TEST(Events, ElapsedTimeCoversTheWorkBetweenTheEvents) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start = nullptr, stop = nullptr;
  ASSERT_CUDA(cudaEventCreate(&start));
  ASSERT_CUDA(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync));

  ASSERT_CUDA(cudaEventRecord(start, stream));
  ASSERT_CUDA(cudaLaunchHostFunc(stream, sleep_20ms, nullptr));
  ASSERT_CUDA(cudaEventRecord(stop, stream));
  ASSERT_CUDA(cudaEventSynchronize(stop));
  float milliseconds = -1.0f;
  ASSERT_CUDA(cudaEventElapsedTime(&milliseconds, start, stop));

  EXPECT_GE(milliseconds, 15.0f);
  EXPECT_LT(milliseconds, 5000.0f);
  EXPECT_CUDA(cudaEventDestroy(start));
  EXPECT_CUDA(cudaEventDestroy(stop));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(Events, ElapsedTimeNeedsTimingAndRecordedEvents) {
  clear_last_error();
  cudaEvent_t timed = nullptr, untimed = nullptr, never_recorded = nullptr;
  ASSERT_CUDA(cudaEventCreate(&timed));
  ASSERT_CUDA(cudaEventCreate(&never_recorded));
  ASSERT_CUDA(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  ASSERT_CUDA(cudaEventRecord(timed, nullptr));
  ASSERT_CUDA(cudaEventRecord(untimed, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  float milliseconds = 0.0f;

  EXPECT_EQ(cudaEventElapsedTime(&milliseconds, timed, untimed), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventElapsedTime(&milliseconds, timed, never_recorded), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);

  EXPECT_CUDA(cudaEventDestroy(timed));
  EXPECT_CUDA(cudaEventDestroy(untimed));
  EXPECT_CUDA(cudaEventDestroy(never_recorded));
}

TEST(Events, QueryIsSuccessUnrecordedNotReadyPendingAndSuccessDone) {
  clear_last_error();
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t event = nullptr;
  ASSERT_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync));
  Gate gate;

  EXPECT_CUDA(cudaEventQuery(event));
  ASSERT_CUDA(cudaLaunchHostFunc(stream, Gate::hold, &gate));
  ASSERT_CUDA(cudaEventRecord(event, stream));
  EXPECT_EQ(cudaEventQuery(event), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  gate.open = true;
  ASSERT_CUDA(cudaEventSynchronize(event));
  EXPECT_CUDA(cudaEventQuery(event));

  EXPECT_CUDA(cudaEventDestroy(event));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(Events, InterprocessEventWithoutTimingIsCreated) {
  cudaEvent_t event = nullptr;
  ASSERT_CUDA(cudaEventCreateWithFlags(&event, cudaEventInterprocess | cudaEventDisableTiming));
  EXPECT_CUDA(cudaEventDestroy(event));
}

// Independence of two streams, shown with the device itself: one stream is held by a kernel that
// spins until the host releases it (a host function cannot hold it: the driver runs every host
// function of a context on one thread, so a held host function would hold the other stream's too),
// and a kernel on the other stream must finish meanwhile. The spin gives up after about 10 s so
// that a failing test does not hang.
__global__ void spin_until_released(const volatile int* released) {
  const long long start = clock64();
  while (*released == 0 && clock64() - start < 20000000000LL) {
  }
}
__global__ void write_one(volatile int* out) { *out = 1; }

struct HeldStream {
  int* flags = nullptr;  // [0]: released, [1]: written by the other stream's kernel
  HeldStream() {
    if (cudaMallocHost(&flags, 2 * sizeof(int)) != cudaSuccess) {
      flags = nullptr;
      return;
    }
    // Both kernels run once before the hold: with lazy loading (CUDA's default) the first launch
    // of a kernel loads it, which waits for the device's running work, the spinning kernel too.
    flags[0] = 1;
    spin_until_released<<<1, 1>>>(flags);
    write_one<<<1, 1>>>(flags + 1);
    if (cudaDeviceSynchronize() != cudaSuccess) flags = nullptr;
    if (flags != nullptr) flags[0] = flags[1] = 0;
  }
  ~HeldStream() {
    release();
    cudaDeviceSynchronize();
    cudaFreeHost(flags);
  }
  void hold(cudaStream_t stream) { spin_until_released<<<1, 1, 0, stream>>>(flags); }
  void release() {
    if (flags != nullptr) *static_cast<volatile int*>(flags) = 1;
  }
  bool written() const { return *static_cast<volatile int*>(flags + 1) == 1; }
};

TEST(StreamsOnGpu, NonBlockingStreamDoesNotWaitForTheLegacyDefaultStream) {
  cudaStream_t non_blocking = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));
  HeldStream held;
  ASSERT_NE(held.flags, nullptr);
  held.hold(cudaStreamLegacy);

  write_one<<<1, 1, 0, non_blocking>>>(held.flags + 1);
  const bool ran_while_legacy_held = idle_within(non_blocking, std::chrono::seconds(5));
  const bool written = held.written();
  held.release();

  EXPECT_TRUE(ran_while_legacy_held);
  EXPECT_TRUE(written);
  EXPECT_CUDA(cudaDeviceSynchronize());
  EXPECT_CUDA(cudaStreamDestroy(non_blocking));
}

TEST(StreamsOnGpu, PerThreadDefaultStreamsOfTwoThreadsAreIndependent) {
  HeldStream held;
  ASSERT_NE(held.flags, nullptr);
  held.hold(cudaStreamPerThread);
  bool other_idle = false;

  std::thread other([&] {
    write_one<<<1, 1, 0, cudaStreamPerThread>>>(held.flags + 1);
    other_idle = idle_within(cudaStreamPerThread, std::chrono::seconds(5));
  });
  other.join();
  const bool written = held.written();
  held.release();

  EXPECT_TRUE(other_idle);
  EXPECT_TRUE(written);
  EXPECT_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
}

}  // namespace
