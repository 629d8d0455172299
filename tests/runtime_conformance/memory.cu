// Memory: device, pinned, mapped, registered and managed allocations; copies of every kind,
// synchronous and asynchronous; memset; pointer attributes; memory information. Copies check the
// bytes that come back, so no kernel is needed (except for the managed memory a kernel updates).
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "conformance.cuh"

using conformance::clear_last_error;

namespace {

constexpr std::size_t kCount = 4096;
constexpr std::size_t kBytes = kCount * sizeof(int);

std::vector<int> ramp(int first) {
  std::vector<int> values(kCount);
  std::iota(values.begin(), values.end(), first);
  return values;
}

TEST(Memory, CopiesOfEveryKindRoundTripTheBytes) {
  const std::vector<int> source = ramp(7);
  std::vector<int> host_copy(kCount), back(kCount), via_default(kCount);
  int *first = nullptr, *second = nullptr;
  ASSERT_CUDA(cudaMalloc(&first, kBytes));
  ASSERT_CUDA(cudaMalloc(&second, kBytes));

  ASSERT_CUDA(cudaMemcpy(host_copy.data(), source.data(), kBytes, cudaMemcpyHostToHost));
  ASSERT_CUDA(cudaMemcpy(first, host_copy.data(), kBytes, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy(second, first, kBytes, cudaMemcpyDeviceToDevice));
  ASSERT_CUDA(cudaMemcpy(back.data(), second, kBytes, cudaMemcpyDeviceToHost));
  ASSERT_CUDA(cudaMemcpy(via_default.data(), second, kBytes, cudaMemcpyDefault));

  EXPECT_EQ(host_copy, source);
  EXPECT_EQ(back, source);
  EXPECT_EQ(via_default, source);
  EXPECT_CUDA(cudaFree(first));
  EXPECT_CUDA(cudaFree(second));
}

TEST(Memory, AsyncCopiesThroughPinnedMemoryRunInStreamOrder) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&stream));
  int *pinned_in = nullptr, *pinned_out = nullptr, *device = nullptr, *device_copy = nullptr;
  ASSERT_CUDA(cudaMallocHost(&pinned_in, kBytes));
  ASSERT_CUDA(cudaHostAlloc(&pinned_out, kBytes, cudaHostAllocDefault));
  ASSERT_CUDA(cudaMalloc(&device, kBytes));
  ASSERT_CUDA(cudaMalloc(&device_copy, kBytes));
  const std::vector<int> source = ramp(-100);
  std::copy(source.begin(), source.end(), pinned_in);

  ASSERT_CUDA(cudaMemcpyAsync(device, pinned_in, kBytes, cudaMemcpyHostToDevice, stream));
  ASSERT_CUDA(cudaMemcpyAsync(device_copy, device, kBytes, cudaMemcpyDeviceToDevice, stream));
  ASSERT_CUDA(cudaMemcpyAsync(pinned_out, device_copy, kBytes, cudaMemcpyDeviceToHost, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_EQ(std::vector<int>(pinned_out, pinned_out + kCount), source);
  EXPECT_CUDA(cudaFree(device));
  EXPECT_CUDA(cudaFree(device_copy));
  EXPECT_CUDA(cudaFreeHost(pinned_in));
  EXPECT_CUDA(cudaFreeHost(pinned_out));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(Memory, MemsetSetsEveryByteSynchronouslyAndInStreamOrder) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned char* device = nullptr;
  ASSERT_CUDA(cudaMalloc(&device, kBytes));
  std::vector<unsigned char> back(kBytes);

  ASSERT_CUDA(cudaMemset(device, 0xab, kBytes));
  ASSERT_CUDA(cudaMemcpy(back.data(), device, kBytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(back, std::vector<unsigned char>(kBytes, 0xab));

  ASSERT_CUDA(cudaMemsetAsync(device + 16, 0x5c, 32, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  ASSERT_CUDA(cudaMemcpy(back.data(), device, kBytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(back[15], 0xab);
  EXPECT_EQ(back[16], 0x5c);
  EXPECT_EQ(back[47], 0x5c);
  EXPECT_EQ(back[48], 0xab);
  EXPECT_CUDA(cudaFree(device));
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(Memory, FreeOfNullIsSuccess) { EXPECT_CUDA(cudaFree(nullptr)); }

TEST(Memory, PointerAttributesTellDeviceHostManagedAndUnregisteredMemory) {
  int current = -1;
  ASSERT_CUDA(cudaGetDevice(&current));
  char *device = nullptr, *pinned = nullptr, *managed = nullptr;
  ASSERT_CUDA(cudaMalloc(&device, kBytes));
  ASSERT_CUDA(cudaMallocHost(&pinned, kBytes));
  ASSERT_CUDA(cudaMallocManaged(&managed, kBytes));
  std::vector<char> unregistered(kBytes);
  cudaPointerAttributes attributes{};

  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, device + 100));
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, current);
  EXPECT_EQ(attributes.devicePointer, device + 100);
  EXPECT_EQ(attributes.hostPointer, nullptr);

  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, pinned));
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  EXPECT_EQ(attributes.hostPointer, pinned);
  EXPECT_NE(attributes.devicePointer, nullptr);

  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, managed));
  EXPECT_EQ(attributes.type, cudaMemoryTypeManaged);
  EXPECT_EQ(attributes.devicePointer, managed);
  EXPECT_EQ(attributes.hostPointer, managed);

  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, unregistered.data()));
  EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered);

  EXPECT_CUDA(cudaFree(device));
  EXPECT_CUDA(cudaFreeHost(pinned));
  EXPECT_CUDA(cudaFree(managed));
}

TEST(Memory, RegisteredHostMemoryIsHostMemoryUntilUnregistered) {
  void* plain = std::aligned_alloc(4096, kBytes);
  ASSERT_NE(plain, nullptr);
  cudaPointerAttributes attributes{};

  ASSERT_CUDA(cudaHostRegister(plain, kBytes, cudaHostRegisterDefault));
  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, plain));
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  ASSERT_CUDA(cudaHostUnregister(plain));
  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, plain));
  EXPECT_EQ(attributes.type, cudaMemoryTypeUnregistered);
  std::free(plain);
}

TEST(Memory, MappedHostAllocationHasADevicePointerThatCopiesReach) {
  int* host = nullptr;
  ASSERT_CUDA(cudaHostAlloc(&host, kBytes, cudaHostAllocMapped));
  int* mapped = nullptr;
  ASSERT_CUDA(cudaHostGetDevicePointer(&mapped, host, 0));
  ASSERT_NE(mapped, nullptr);
  const std::vector<int> source = ramp(3);

  ASSERT_CUDA(cudaMemcpy(mapped, source.data(), kBytes, cudaMemcpyDefault));

  EXPECT_EQ(std::vector<int>(host, host + kCount), source);
  EXPECT_CUDA(cudaFreeHost(host));
}

TEST(Memory, ManagedMemoryIsReadableAndWritableFromTheHost) {
  int* managed = nullptr;
  ASSERT_CUDA(cudaMallocManaged(&managed, kBytes));
  for (std::size_t i = 0; i < kCount; ++i) managed[i] = static_cast<int>(i);
  std::vector<int> back(kCount);

  ASSERT_CUDA(cudaMemcpy(back.data(), managed, kBytes, cudaMemcpyDefault));

  EXPECT_EQ(back, ramp(0));
  EXPECT_CUDA(cudaFree(managed));
}

// As NVIDIA's cudart 13 answers on driver 580: a managed allocation of nothing succeeds (as
// cudaMalloc of nothing does); unknown flags are invalid.
TEST(Memory, ManagedAllocationOfNothingSucceedsAndUnknownFlagsAreInvalidValue) {
  clear_last_error();
  void* managed = nullptr;

  EXPECT_EQ(cudaMallocManaged(&managed, 0), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaMallocManaged(&managed, kBytes, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(Memory, MemGetInfoShrinksByAnAllocation) {
  std::size_t free_before = 0, total = 0, free_after = 0, total_after = 0;
  ASSERT_CUDA(cudaMemGetInfo(&free_before, &total));
  EXPECT_GT(total, 0u);
  EXPECT_LE(free_before, total);
  constexpr std::size_t kLarge = 256u << 20;
  void* large = nullptr;

  ASSERT_CUDA(cudaMalloc(&large, kLarge));
  ASSERT_CUDA(cudaMemGetInfo(&free_after, &total_after));

  EXPECT_EQ(total_after, total);
  EXPECT_LE(free_after + kLarge, free_before);
  EXPECT_CUDA(cudaFree(large));
}

__global__ void increment(int* values, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) values[i] += 1;
}

TEST(MemoryOnGpu, KernelUpdatesManagedMemoryTheHostThenReads) {
  int* managed = nullptr;
  ASSERT_CUDA(cudaMallocManaged(&managed, kBytes));
  for (std::size_t i = 0; i < kCount; ++i) managed[i] = static_cast<int>(i);

  increment<<<kCount / 256, 256>>>(managed, static_cast<int>(kCount));
  ASSERT_CUDA(cudaGetLastError());
  ASSERT_CUDA(cudaDeviceSynchronize());

  EXPECT_EQ(std::vector<int>(managed, managed + kCount), ramp(1));
  EXPECT_CUDA(cudaFree(managed));
}

TEST(MemoryOnGpu, KernelWritesMappedHostMemory) {
  int* host = nullptr;
  ASSERT_CUDA(cudaHostAlloc(&host, kBytes, cudaHostAllocMapped));
  for (std::size_t i = 0; i < kCount; ++i) host[i] = static_cast<int>(i);
  int* mapped = nullptr;
  ASSERT_CUDA(cudaHostGetDevicePointer(&mapped, host, 0));

  increment<<<kCount / 256, 256>>>(mapped, static_cast<int>(kCount));
  ASSERT_CUDA(cudaDeviceSynchronize());

  EXPECT_EQ(std::vector<int>(host, host + kCount), ramp(1));
  EXPECT_CUDA(cudaFreeHost(host));
}

}  // namespace
