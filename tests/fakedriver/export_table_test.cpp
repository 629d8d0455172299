// cuGetExportTable serves no private table (api_export_table.cpp says why) and answers as an
// unimplemented entry point.
#include "fake_test_support.hpp"

namespace fake_test {
namespace {

TEST(ExportTableTest, EveryTableIsNotSupportedAndNoneIsHandedOut) {
  const CUuuid cudart_interface = {{'\x6b', '\xd5', '\xfb', '\x6c', '\x5b', '\xf4', '\xe7', '\x4a', '\x89', '\x87', '\xd9',
                                    '\x39', '\x12', '\xfd', '\x9d', '\xf9'}};
  const CUuuid unknown = {};
  const void* table = &cudart_interface;

  EXPECT_EQ(cuGetExportTable(&table, &cudart_interface), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(table, nullptr);
  table = &unknown;
  EXPECT_EQ(cuGetExportTable(&table, &unknown), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(table, nullptr);
}

TEST(ExportTableTest, NullArgumentsAreInvalidValue) {
  const CUuuid unknown = {};
  const void* table = nullptr;

  EXPECT_EQ(cuGetExportTable(nullptr, &unknown), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetExportTable(&table, nullptr), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace fake_test
