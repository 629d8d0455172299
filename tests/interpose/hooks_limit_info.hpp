// streampool_limit_info of the preloaded library, for the hooks' tests that read the process cap's
// figures (their targets have the public header's folder: tests/interpose/CMakeLists.txt).
#pragma once

#include "hooks_test_api.hpp"
#include "streampool/streampool.h"

namespace hooks_test {

// One device's figures; a failed test (not a crash) when the library lacks the call or the device.
inline streampool_device_limit limit_info(int device) {
  using Info = int (*)(int, streampool_device_limit*);
  auto info = reinterpret_cast<Info>(streampool_symbol("streampool_limit_info"));
  streampool_device_limit figures{};
  figures.struct_size = sizeof figures;
  EXPECT_NE(info, nullptr);
  if (info != nullptr) {
    EXPECT_EQ(info(device, &figures), 0);
  }
  return figures;
}

}  // namespace hooks_test
