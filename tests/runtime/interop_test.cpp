// Graphics interoperation through a driver without the API's entry points (the fake driver has no
// OpenGL or VDPAU interop): the runtime answers cudaErrorNotSupported, as the last error too, and
// choosing a device for OpenGL or VDPAU is choosing the device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>

extern "C" {
cudaError_t cudaGraphicsGLRegisterBuffer(cudaGraphicsResource_t* resource, unsigned int buffer, unsigned int flags);
cudaError_t cudaVDPAUGetDevice(int* device, std::uint32_t vdpDevice, void* vdpGetProcAddress);
cudaError_t cudaGLSetGLDevice(int device);
}

namespace {

TEST(Interop, AnEntryPointTheDriverLacksIsNotSupportedAndTheLastError) {
  static_cast<void>(cudaGetLastError());
  cudaGraphicsResource_t resource = nullptr;
  int device = -1;

  EXPECT_EQ(cudaGraphicsGLRegisterBuffer(&resource, 1, 0), cudaErrorNotSupported);
  EXPECT_EQ(cudaVDPAUGetDevice(&device, 1, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  EXPECT_EQ(resource, nullptr);
}

TEST(Interop, SettingTheOpenGLDeviceSetsTheDevice) {
  EXPECT_EQ(cudaGLSetGLDevice(0), cudaSuccess);
  int device = -1;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(cudaGLSetGLDevice(1 << 20), cudaErrorInvalidDevice);
}

}  // namespace
