// cuGetProcAddress: versioned names, per-thread variants, status codes, the "" probe.
#include <cstring>

#include "fake_test_support.hpp"

extern "C" CUresult cuStreamSynchronize_ptsz(CUstream hStream);
extern "C" CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
extern "C" CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
#undef cuGetProcAddress
#undef cuCtxCreate
#undef cuStreamGetCaptureInfo
extern "C" CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
extern "C" CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);
extern "C" CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                           cuuint64_t* id_out);

namespace fake_test {
namespace {

void* resolve(const char* name, int version, cuuint64_t flags, CUresult* result = nullptr,
              CUdriverProcAddressQueryResult* status = nullptr) {
  void* function = nullptr;
  CUdriverProcAddressQueryResult local_status{};
  const CUresult local_result =
      cuGetProcAddress_v2(name, &function, version, flags, status != nullptr ? status : &local_status);
  if (result != nullptr) *result = local_result;
  return function;
}

void* as_void(auto function) { return reinterpret_cast<void*>(function); }

TEST(ProcAddressTest, PicksTheNewestVersionTheCallerKnows) {
  EXPECT_EQ(resolve("cuMemAlloc", 13000, 0), as_void(&cuMemAlloc_v2));
  EXPECT_EQ(resolve("cuCtxCreate", 13000, 0), as_void(&cuCtxCreate_v4));
  EXPECT_EQ(resolve("cuCtxCreate", 3020, 0), as_void(&cuCtxCreate_v2));
  EXPECT_EQ(resolve("cuStreamGetCaptureInfo", 12030, 0), as_void(&cuStreamGetCaptureInfo_v3));
  EXPECT_EQ(resolve("cuStreamGetCaptureInfo", 10010, 0), as_void(&cuStreamGetCaptureInfo));
  EXPECT_EQ(resolve("cuCtxSynchronize", 13000, 0), as_void(&cuCtxSynchronize_v2));
  EXPECT_EQ(resolve("cuCtxSynchronize", 12000, 0), as_void(&cuCtxSynchronize));
}

TEST(ProcAddressTest, PerThreadFlagPrefersThePtszOrPtdsExport) {
  EXPECT_EQ(resolve("cuStreamSynchronize", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
            as_void(&cuStreamSynchronize_ptsz));
  EXPECT_EQ(resolve("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
            as_void(&cuMemcpyHtoD_v2_ptds));
  EXPECT_EQ(resolve("cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
            as_void(&cuMemAllocAsync_ptsz));
  EXPECT_EQ(resolve("cuStreamSynchronize", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM), as_void(&cuStreamSynchronize));
  // No per-thread variant exists: the plain one.
  EXPECT_EQ(resolve("cuStreamCreate", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), as_void(&cuStreamCreate));
}

TEST(ProcAddressTest, TooOldVersionIsVersionNotSufficient) {
  CUresult result = CUDA_SUCCESS;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  void* function = resolve("cuMemAllocAsync", 11000, 0, &result, &status);
  EXPECT_EQ(function, nullptr);
  EXPECT_EQ(result, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST(ProcAddressTest, UnknownAndUnimplementedNamesAreNotFound) {
  CUresult result = CUDA_SUCCESS;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(resolve("cuNoSuchFunction", 13000, 0, &result, &status), nullptr);
  EXPECT_EQ(result, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(resolve("cuCheckpointProcessLock", 13000, 0, &result, &status), nullptr);  // real name, not in the fake
  EXPECT_EQ(result, CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

TEST(ProcAddressTest, EmptyNameProbeIsNotFoundRatherThanStubLibrary) {
  CUresult result = CUDA_SUCCESS;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(resolve("", 13000, 0, &result, &status), nullptr);
  EXPECT_EQ(result, CUDA_ERROR_NOT_FOUND);
  EXPECT_NE(result, CUDA_ERROR_STUB_LIBRARY);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

TEST(ProcAddressTest, ResolvesItselfAndTheOlderEntryPoint) {
  EXPECT_EQ(resolve("cuGetProcAddress", 13000, 0), as_void(&cuGetProcAddress_v2));
  void* function = nullptr;
  ASSERT_EQ(cuGetProcAddress("cuGetProcAddress", &function, 11030, 0), CUDA_SUCCESS);
  EXPECT_EQ(function, as_void(&cuGetProcAddress));
}

TEST(ProcAddressTest, BadArgumentsAreInvalidValue) {
  void* function = nullptr;
  CUdriverProcAddressQueryResult status{};
  EXPECT_EQ(cuGetProcAddress_v2(nullptr, &function, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress_v2("cuInit", nullptr, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress_v2("cuInit", &function, 13000, 8, &status), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace fake_test
