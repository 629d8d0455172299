// CHECK(call) for the single-file driver-API programs of tools/gpu: a failed call prints where and
// its CUresult, and the program exits 2 (a setup failure, apart from a verdict's exit 1).
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                   \
  do {                                                                                \
    CUresult r_ = (call);                                                             \
    if (r_ != CUDA_SUCCESS) {                                                         \
      std::printf("%s:%d %s = %d\n", __FILE__, __LINE__, #call, static_cast<int>(r_)); \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)
