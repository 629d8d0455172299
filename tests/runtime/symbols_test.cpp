// Device variables named by their host shadows: size, address, and copies to and from them, the
// asynchronous ones in stream order; ranges past the variable's end are invalid values.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <array>

#include "fake_registration.hpp"

namespace {

int g_table[16];  // the host shadow of a __device__ int[16]

class Symbols : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    void** handle = __cudaRegisterFatBinary(&runtime_test::g_fat_binary);
    __cudaRegisterVar(handle, reinterpret_cast<char*>(g_table), nullptr, "g_table", 0, sizeof(g_table), 0, 0);
    __cudaRegisterFatBinaryEnd(handle);
  }
};

TEST_F(Symbols, SizeAndAddressAreTheVariables) {
  std::size_t size = 0;
  void* address = nullptr;

  ASSERT_EQ(cudaGetSymbolSize(&size, g_table), cudaSuccess);
  ASSERT_EQ(cudaGetSymbolAddress(&address, g_table), cudaSuccess);

  EXPECT_EQ(size, sizeof(g_table));
  EXPECT_NE(address, nullptr);
  EXPECT_NE(address, static_cast<void*>(g_table));
}

TEST_F(Symbols, AsyncCopiesToAndFromRunInStreamOrderAtTheOffset) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const std::array<int, 4> values{1, 2, 3, 4};
  std::array<int, 4> back{};
  const std::array<int, 16> zeros{};
  ASSERT_EQ(cudaMemcpyToSymbol(g_table, zeros.data(), sizeof(zeros), 0, cudaMemcpyHostToDevice), cudaSuccess);

  ASSERT_EQ(cudaMemcpyToSymbolAsync(g_table, values.data(), sizeof(values), 8 * sizeof(int), cudaMemcpyHostToDevice,
                                    stream),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyFromSymbolAsync(back.data(), g_table, sizeof(back), 8 * sizeof(int), cudaMemcpyDeviceToHost,
                                      stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::array<int, 16> whole{};
  ASSERT_EQ(cudaMemcpyFromSymbol(whole.data(), g_table, sizeof(whole), 0, cudaMemcpyDeviceToHost), cudaSuccess);

  EXPECT_EQ(back, values);
  EXPECT_EQ(whole[8], 1);  // written at the offset asked for
  EXPECT_EQ(whole[11], 4);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(Symbols, RangePastTheEndIsInvalidValueAndUnknownSymbolIsInvalidSymbol) {
  int value = 0;
  (void)cudaGetLastError();

  EXPECT_EQ(cudaMemcpyToSymbolAsync(g_table, &value, sizeof(value), sizeof(g_table), cudaMemcpyHostToDevice, nullptr),
            cudaErrorInvalidValue);
  std::size_t size = 0;
  EXPECT_EQ(cudaGetSymbolSize(&size, &value), cudaErrorInvalidSymbol);
  (void)cudaGetLastError();
}

}  // namespace
