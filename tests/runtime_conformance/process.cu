// The process: driver entry points handed out by the runtime (the allocator's work with the
// runtime's own calls), and which CUDA runtime is mapped: the build linked to streampool's runtime
// must have no NVIDIA libcudart in the process, the build linked to NVIDIA's must have it. The
// build says which it is with STREAMPOOL_CONFORMANCE_RUNTIME_STREAMPOOL (1) or not (0).
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

#include "conformance.cuh"

#ifndef STREAMPOOL_CONFORMANCE_RUNTIME_STREAMPOOL
#error "the build defines STREAMPOOL_CONFORMANCE_RUNTIME_STREAMPOOL (1: streampool's runtime, 0: NVIDIA's)"
#endif

using conformance::clear_last_error;

namespace {

template <class Function>
Function entry_point(const char* name, int version, cudaDriverEntryPointQueryResult* result) {
  void* address = nullptr;
  EXPECT_CUDA(cudaGetDriverEntryPointByVersion(name, &address, version, cudaEnableDefault, result));
  return reinterpret_cast<Function>(address);
}

TEST(DriverEntryPoints, DeviceCountThroughTheDriverAgreesWithTheRuntime) {
  cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
  auto device_count = entry_point<CUresult (*)(int*)>("cuDeviceGetCount", 2000, &result);
  ASSERT_EQ(result, cudaDriverEntryPointSuccess);
  ASSERT_NE(device_count, nullptr);
  int runtime_count = 0, driver_count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&runtime_count));

  ASSERT_EQ(device_count(&driver_count), CUDA_SUCCESS);

  EXPECT_EQ(driver_count, runtime_count);
}

TEST(DriverEntryPoints, DriverAllocationIsFreedByTheRuntimeInStreamOrder) {
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
  auto alloc_async = entry_point<CUresult (*)(CUdeviceptr*, size_t, CUstream)>("cuMemAllocAsync", 11020, &result);
  ASSERT_EQ(result, cudaDriverEntryPointSuccess);
  ASSERT_NE(alloc_async, nullptr);
  CUdeviceptr address = 0;

  ASSERT_EQ(alloc_async(&address, 4096, stream), CUDA_SUCCESS);
  ASSERT_NE(address, 0u);
  const char text[] = "through the driver";
  char back[sizeof(text)] = {};
  void* memory = reinterpret_cast<void*>(address);
  ASSERT_CUDA(cudaMemcpyAsync(memory, text, sizeof(text), cudaMemcpyHostToDevice, stream));
  ASSERT_CUDA(cudaMemcpyAsync(back, memory, sizeof(text), cudaMemcpyDeviceToHost, stream));
  ASSERT_CUDA(cudaFreeAsync(memory, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));

  EXPECT_STREQ(back, text);
  EXPECT_CUDA(cudaStreamDestroy(stream));
}

TEST(DriverEntryPoints, UnknownSymbolIsNotFound) {
  void* address = reinterpret_cast<void*>(1);
  cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSuccess;

  static_cast<void>(
      cudaGetDriverEntryPointByVersion("cuNoSuchEntryPoint", &address, 13000, cudaEnableDefault, &result));

  EXPECT_EQ(result, cudaDriverEntryPointSymbolNotFound);
  EXPECT_EQ(address, nullptr);
  clear_last_error();
}

// The mapped files whose name contains `part`, one entry per file.
std::set<std::string> mapped_files_containing(const char* part) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> files;
  std::string line;
  while (std::getline(maps, line)) {
    const std::size_t slash = line.find('/');
    if (slash != std::string::npos && line.find(part, slash) != std::string::npos) files.insert(line.substr(slash));
  }
  return files;
}

TEST(ProcessMaps, TheRuntimeOfThisBuildIsTheOneMapped) {
  ASSERT_CUDA(cudaFree(nullptr));  // the runtime started and loaded the driver
  const std::set<std::string> cudart = mapped_files_containing("libcudart");
  const std::set<std::string> streampool = mapped_files_containing("libstreampool_cudart");
  const std::set<std::string> driver = mapped_files_containing("libcuda.so");
  for (const auto* files : {&cudart, &streampool, &driver}) {
    for (const std::string& file : *files) std::printf("mapped: %s\n", file.c_str());
  }

  EXPECT_FALSE(driver.empty());
  if (STREAMPOOL_CONFORMANCE_RUNTIME_STREAMPOOL) {
    EXPECT_TRUE(cudart.empty()) << "an NVIDIA libcudart is mapped";
    EXPECT_FALSE(streampool.empty());
  } else {
    EXPECT_FALSE(cudart.empty());
    EXPECT_TRUE(streampool.empty());
  }
}

}  // namespace
