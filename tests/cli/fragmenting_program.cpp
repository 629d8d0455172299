// A driver-API program whose pool peaks in use and in reservation at different moments: 30 MiB on
// one stream, freed there, then 20 MiB on another stream that no ordering joins to the first, so
// the pool grows instead of reusing the free (peak used 30 MiB, peak reserved 50 MiB, 20 MiB in use
// at that peak). `run`'s report and `replay` of its trace must give it one fragmentation.
#include <cuda.h>

#include <cstdint>
#include <cstdio>

namespace {

bool ok(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) std::fprintf(stderr, "fragmenting_program: %s failed (%d)\n", what, static_cast<int>(result));
  return result == CUDA_SUCCESS;
}

}  // namespace

int main() {
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (!ok(cuInit(0), "cuInit") || !ok(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !ok(cuDevicePrimaryCtxRetain(&context, device), "retain") || !ok(cuCtxSetCurrent(context), "set context")) {
    return 1;
  }
  CUstream first = nullptr;
  CUstream second = nullptr;
  CUdeviceptr large = 0;
  CUdeviceptr small = 0;
  const bool done = ok(cuStreamCreate(&first, CU_STREAM_NON_BLOCKING), "cuStreamCreate") &&
                    ok(cuStreamCreate(&second, CU_STREAM_NON_BLOCKING), "cuStreamCreate") &&
                    ok(cuMemAllocAsync(&large, 30u << 20, first), "alloc 30 MiB") &&
                    ok(cuMemFreeAsync(large, first), "free 30 MiB") &&
                    ok(cuMemAllocAsync(&small, 20u << 20, second), "alloc 20 MiB") &&
                    ok(cuMemFreeAsync(small, second), "free 20 MiB") && ok(cuCtxSynchronize(), "cuCtxSynchronize");
  return done ? 0 : 1;
}
