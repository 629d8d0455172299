// The functions the runtime exports without a driver counterpart (src/runtime/not_supported.txt)
// answer cudaErrorNotSupported, which becomes the calling thread's last error as any failure does.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

namespace {

TEST(NotSupported, SetValidDevicesIsNotSupportedAndTheLastError) {
  static_cast<void>(cudaGetLastError());
  int devices[] = {0};

  EXPECT_EQ(cudaSetValidDevices(devices, 1), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
