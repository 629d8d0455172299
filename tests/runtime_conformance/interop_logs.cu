// Graphics interoperation, the driver's logs and export tables: the runtime's own argument checks
// (over any driver), and the logs read back on the GPU. Registering real OpenGL/EGL/VDPAU resources
// needs those APIs' contexts, which the suite does not make. The interop functions are declared
// here with their ABI types (GLuint is unsigned int), as cuda_gl_interop.h needs OpenGL's headers.
#include <vector>

#include "conformance.cuh"

extern "C" {
cudaError_t cudaGraphicsGLRegisterBuffer(cudaGraphicsResource_t* resource, unsigned int buffer, unsigned int flags);
cudaError_t cudaGraphicsEGLRegisterImage(cudaGraphicsResource_t* resource, void* image, unsigned int flags);
cudaError_t cudaEventCreateFromEGLSync(cudaEvent_t* event, void* sync, unsigned int flags);
}

namespace {

// A missing output of a registration is a bad value; a missing resource is a bad handle, found before
// a missing output; events from EGL syncs are not supported off Tegra, whatever the arguments.
TEST(GraphicsInterop, MissingArgumentsAnswerAsCudartDoesAndTheLastError) {
  std::size_t size = 0;
  void* pointer = nullptr;
  conformance::clear_last_error();

  EXPECT_EQ(cudaGraphicsGLRegisterBuffer(nullptr, 1, cudaGraphicsRegisterFlagsNone), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGraphicsEGLRegisterImage(nullptr, nullptr, 0), cudaErrorInvalidValue);
#if defined(__x86_64__)
  EXPECT_EQ(cudaEventCreateFromEGLSync(nullptr, nullptr, 0), cudaErrorNotSupported);
#endif
  EXPECT_EQ(cudaGraphicsResourceGetMappedPointer(nullptr, &size, nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGraphicsResourceGetMappedPointer(&pointer, nullptr, nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGraphicsSubResourceGetMappedArray(nullptr, nullptr, 0, 0), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

TEST(LogsAndExportTables, MissingOutputsAreInvalidValue) {
  cudaUUID_t id{};
  conformance::clear_last_error();
  EXPECT_EQ(cudaLogsCurrent(nullptr, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetExportTable(nullptr, &id), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(LogsOnGpu, TheCurrentPositionDumpsToMemory) {
  cudaLogIterator position{};
  ASSERT_CUDA(cudaLogsCurrent(&position, 0));
  std::vector<char> buffer(4096);
  std::size_t size = buffer.size();
  EXPECT_CUDA(cudaLogsDumpToMemory(&position, buffer.data(), &size, 0));
  EXPECT_LE(size, buffer.size());
}

void CUDART_CB ignore_log(void*, cudaLogLevel, char*, std::size_t) {}

TEST(LogsOnGpu, ACallbackRegistersAndUnregisters) {
  cudaLogsCallbackHandle handle = nullptr;
  ASSERT_CUDA(cudaLogsRegisterCallback(ignore_log, nullptr, &handle));
  EXPECT_CUDA(cudaLogsUnregisterCallback(handle));
}

}  // namespace
