// Graphics interoperation: resources other APIs own (OpenGL buffers and images, EGL images and
// streams, VDPAU surfaces) registered with CUDA, mapped in stream order and reached as pointers or
// arrays; the driver's logs; export tables. The generic cudaGraphics* functions are the driver's
// cuGraphics* through the driver table. The API-specific ones (cuGL*, cuEGL*, cuVDPAU*) are not in
// the CUDA toolkit's stub library the table is made from, so they are found in the real driver by
// name, once; a driver without one (a build without that API) answers cudaErrorNotSupported.
// Their header types (GLuint, EGLImageKHR, VdpDevice ...) are declared here by what they are at
// the ABI, so that building streampool needs no OpenGL, EGL or VDPAU headers.
#include <atomic>
#include <cstdint>

#include "api.hpp"
#include "real_library.hpp"

// cudaEGL.h's connection handle (the runtime's cudaEglStreamConnection is the same type).
typedef struct CUeglStreamConnection_st* CUeglStreamConnection;

namespace streampool::runtime {
namespace {

using GLuint = unsigned int;
using GLenum = unsigned int;
using EGLint = std::int32_t;
using EGLHandle = void*;  // EGLImageKHR, EGLStreamKHR, EGLSyncKHR
using VdpHandle = std::uint32_t;  // VdpDevice, VdpVideoSurface, VdpOutputSurface
using VdpGetProcAddress = void;  // only ever passed by pointer

static_assert(static_cast<int>(cudaGraphicsMapFlagsWriteDiscard) == CU_GRAPHICS_MAP_RESOURCE_FLAGS_WRITE_DISCARD);
static_assert(static_cast<int>(cudaGraphicsRegisterFlagsTextureGather) == CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER);
static_assert(static_cast<int>(cudaGraphicsCubeFacePositiveX) == CU_CUBEMAP_FACE_POSITIVE_X);

CUgraphicsResource driver_resource(cudaGraphicsResource_t resource) noexcept {
  return reinterpret_cast<CUgraphicsResource>(resource);
}
CUgraphicsResource* driver_resources(cudaGraphicsResource_t* resources) noexcept {
  return reinterpret_cast<CUgraphicsResource*>(resources);
}

// A driver entry point outside the driver table, looked up in the real driver once.
template <class Function>
class InteropEntry {
 public:
  explicit constexpr InteropEntry(const char* name) noexcept : name_(name) {}
  Function* get() noexcept {
    void* found = address_.load(std::memory_order_acquire);
    if (found == nullptr) {
      found = streampool::driver::real_symbol(name_);
      address_.store(found, std::memory_order_release);
    }
    return reinterpret_cast<Function*>(found);
  }

 private:
  const char* name_;
  std::atomic<void*> address_{nullptr};
};

// Calls the entry point with the context ready; a driver without it answers cudaErrorNotSupported.
template <class Function, class... Args>
cudaError_t call(InteropEntry<Function>& entry, Args... args) noexcept {
  if (const cudaError_t error = ensure_context(); error != cudaSuccess) return finish(error);
  Function* function = entry.get();
  if (function == nullptr) return finish(cudaErrorNotSupported);
  return finish(function(args...));
}

InteropEntry<CUresult(CUgraphicsResource*, GLuint, unsigned)> g_gl_register_buffer{"cuGraphicsGLRegisterBuffer"};
InteropEntry<CUresult(CUgraphicsResource*, GLuint, GLenum, unsigned)> g_gl_register_image{"cuGraphicsGLRegisterImage"};
InteropEntry<CUresult(unsigned*, CUdevice*, unsigned, int)> g_gl_get_devices{"cuGLGetDevices_v2"};
InteropEntry<CUresult(GLuint)> g_gl_register_object{"cuGLRegisterBufferObject"};
InteropEntry<CUresult(CUdeviceptr*, size_t*, GLuint)> g_gl_map_object{"cuGLMapBufferObject_v2"};
InteropEntry<CUresult(CUdeviceptr*, size_t*, GLuint, CUstream)> g_gl_map_object_async{"cuGLMapBufferObjectAsync_v2"};
InteropEntry<CUresult(GLuint)> g_gl_unmap_object{"cuGLUnmapBufferObject"};
InteropEntry<CUresult(GLuint, CUstream)> g_gl_unmap_object_async{"cuGLUnmapBufferObjectAsync"};
InteropEntry<CUresult(GLuint)> g_gl_unregister_object{"cuGLUnregisterBufferObject"};
InteropEntry<CUresult(GLuint, unsigned)> g_gl_set_object_flags{"cuGLSetBufferObjectMapFlags"};
InteropEntry<CUresult(CUgraphicsResource*, EGLHandle, unsigned)> g_egl_register_image{"cuGraphicsEGLRegisterImage"};
InteropEntry<CUresult(CUeglStreamConnection*, EGLHandle)> g_egl_consumer_connect{"cuEGLStreamConsumerConnect"};
InteropEntry<CUresult(CUeglStreamConnection*, EGLHandle, unsigned)> g_egl_consumer_connect_flags{
    "cuEGLStreamConsumerConnectWithFlags"};
InteropEntry<CUresult(CUeglStreamConnection*)> g_egl_consumer_disconnect{"cuEGLStreamConsumerDisconnect"};
InteropEntry<CUresult(CUeglStreamConnection*, CUgraphicsResource*, CUstream*, unsigned)> g_egl_consumer_acquire{
    "cuEGLStreamConsumerAcquireFrame"};
InteropEntry<CUresult(CUeglStreamConnection*, CUgraphicsResource, CUstream*)> g_egl_consumer_release{
    "cuEGLStreamConsumerReleaseFrame"};
InteropEntry<CUresult(CUeglStreamConnection*, EGLHandle, EGLint, EGLint)> g_egl_producer_connect{
    "cuEGLStreamProducerConnect"};
InteropEntry<CUresult(CUeglStreamConnection*)> g_egl_producer_disconnect{"cuEGLStreamProducerDisconnect"};
InteropEntry<CUresult(CUevent*, EGLHandle, unsigned)> g_egl_event_from_sync{"cuEventCreateFromEGLSync"};
InteropEntry<CUresult(CUdevice*, VdpHandle, VdpGetProcAddress*)> g_vdpau_get_device{"cuVDPAUGetDevice"};
InteropEntry<CUresult(CUgraphicsResource*, VdpHandle, unsigned)> g_vdpau_register_video{
    "cuGraphicsVDPAURegisterVideoSurface"};
InteropEntry<CUresult(CUgraphicsResource*, VdpHandle, unsigned)> g_vdpau_register_output{
    "cuGraphicsVDPAURegisterOutputSurface"};

}  // namespace
}  // namespace streampool::runtime

using namespace streampool::runtime;

// The generic functions, for a resource any API registered.
CUDART_EXPORT cudaError_t cudaGraphicsUnregisterResource(cudaGraphicsResource_t resource) {
  STREAMPOOL_WITH_CONTEXT(cuGraphicsUnregisterResource(driver_resource(resource)));
}
CUDART_EXPORT cudaError_t cudaGraphicsResourceSetMapFlags(cudaGraphicsResource_t resource, unsigned int flags) {
  STREAMPOOL_WITH_CONTEXT(cuGraphicsResourceSetMapFlags(driver_resource(resource), flags));
}
CUDART_EXPORT cudaError_t cudaGraphicsMapResources(int count, cudaGraphicsResource_t* resources, cudaStream_t stream) {
  if (count < 0 || (count > 0 && resources == nullptr)) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphicsMapResources(static_cast<unsigned>(count), driver_resources(resources), driver_stream(stream, false)));
}
CUDART_EXPORT cudaError_t cudaGraphicsUnmapResources(int count, cudaGraphicsResource_t* resources,
                                                     cudaStream_t stream) {
  if (count < 0 || (count > 0 && resources == nullptr)) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphicsUnmapResources(static_cast<unsigned>(count), driver_resources(resources),
                                                   driver_stream(stream, false)));
}
CUDART_EXPORT cudaError_t cudaGraphicsResourceGetMappedPointer(void** devPtr, size_t* size,
                                                               cudaGraphicsResource_t resource) {
  if (resource == nullptr) return finish(cudaErrorInvalidResourceHandle);
  if (devPtr == nullptr || size == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(
      cuGraphicsResourceGetMappedPointer(reinterpret_cast<CUdeviceptr*>(devPtr), size, driver_resource(resource)));
}
CUDART_EXPORT cudaError_t cudaGraphicsSubResourceGetMappedArray(cudaArray_t* array, cudaGraphicsResource_t resource,
                                                                unsigned int arrayIndex, unsigned int mipLevel) {
  if (resource == nullptr) return finish(cudaErrorInvalidResourceHandle);
  if (array == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphicsSubResourceGetMappedArray(reinterpret_cast<CUarray*>(array),
                                                              driver_resource(resource), arrayIndex, mipLevel));
}
CUDART_EXPORT cudaError_t cudaGraphicsResourceGetMappedMipmappedArray(cudaMipmappedArray_t* mipmappedArray,
                                                                      cudaGraphicsResource_t resource) {
  if (mipmappedArray == nullptr) return finish(cudaErrorInvalidValue);
  STREAMPOOL_WITH_CONTEXT(cuGraphicsResourceGetMappedMipmappedArray(
      reinterpret_cast<CUmipmappedArray*>(mipmappedArray), driver_resource(resource)));
}

// OpenGL.
CUDART_EXPORT cudaError_t cudaGraphicsGLRegisterBuffer(cudaGraphicsResource_t* resource, GLuint buffer,
                                                       unsigned int flags) {
  if (resource == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_gl_register_buffer, driver_resources(resource), buffer, flags);
}
CUDART_EXPORT cudaError_t cudaGraphicsGLRegisterImage(cudaGraphicsResource_t* resource, GLuint image, GLenum target,
                                                      unsigned int flags) {
  if (resource == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_gl_register_image, driver_resources(resource), image, target, flags);
}
// The runtime's device numbers are the driver's ordinals (CUdevice is the ordinal).
CUDART_EXPORT cudaError_t cudaGLGetDevices(unsigned int* pCudaDeviceCount, int* pCudaDevices,
                                           unsigned int cudaDeviceCount, int deviceList) {
  if (pCudaDeviceCount == nullptr) return finish(cudaErrorInvalidValue);
  static_assert(sizeof(CUdevice) == sizeof(int));
  return call(g_gl_get_devices, pCudaDeviceCount, reinterpret_cast<CUdevice*>(pCudaDevices), cudaDeviceCount,
              deviceList);
}
// Choosing the device for OpenGL is choosing the device: no context needs an association since CUDA 5.
CUDART_EXPORT cudaError_t cudaGLSetGLDevice(int device) { return cudaSetDevice(device); }
CUDART_EXPORT cudaError_t cudaGLRegisterBufferObject(GLuint bufObj) { return call(g_gl_register_object, bufObj); }
CUDART_EXPORT cudaError_t cudaGLMapBufferObject(void** devPtr, GLuint bufObj) {
  if (devPtr == nullptr) return finish(cudaErrorInvalidValue);
  size_t size = 0;
  return call(g_gl_map_object, reinterpret_cast<CUdeviceptr*>(devPtr), &size, bufObj);
}
CUDART_EXPORT cudaError_t cudaGLMapBufferObjectAsync(void** devPtr, GLuint bufObj, cudaStream_t stream) {
  if (devPtr == nullptr) return finish(cudaErrorInvalidValue);
  size_t size = 0;
  return call(g_gl_map_object_async, reinterpret_cast<CUdeviceptr*>(devPtr), &size, bufObj,
              driver_stream(stream, false));
}
CUDART_EXPORT cudaError_t cudaGLUnmapBufferObject(GLuint bufObj) { return call(g_gl_unmap_object, bufObj); }
CUDART_EXPORT cudaError_t cudaGLUnmapBufferObjectAsync(GLuint bufObj, cudaStream_t stream) {
  return call(g_gl_unmap_object_async, bufObj, driver_stream(stream, false));
}
CUDART_EXPORT cudaError_t cudaGLUnregisterBufferObject(GLuint bufObj) { return call(g_gl_unregister_object, bufObj); }
CUDART_EXPORT cudaError_t cudaGLSetBufferObjectMapFlags(GLuint bufObj, unsigned int flags) {
  return call(g_gl_set_object_flags, bufObj, flags);
}

// EGL.
CUDART_EXPORT cudaError_t cudaGraphicsEGLRegisterImage(cudaGraphicsResource_t* pCudaResource, EGLHandle image,
                                                       unsigned int flags) {
  if (pCudaResource == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_register_image, driver_resources(pCudaResource), image, flags);
}
CUDART_EXPORT cudaError_t cudaEGLStreamConsumerConnect(CUeglStreamConnection* conn, EGLHandle eglStream) {
  if (conn == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_consumer_connect, conn, eglStream);
}
CUDART_EXPORT cudaError_t cudaEGLStreamConsumerConnectWithFlags(CUeglStreamConnection* conn, EGLHandle eglStream,
                                                                unsigned int flags) {
  if (conn == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_consumer_connect_flags, conn, eglStream, flags);
}
CUDART_EXPORT cudaError_t cudaEGLStreamConsumerDisconnect(CUeglStreamConnection* conn) {
  if (conn == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_consumer_disconnect, conn);
}
CUDART_EXPORT cudaError_t cudaEGLStreamConsumerAcquireFrame(CUeglStreamConnection* conn,
                                                            cudaGraphicsResource_t* pCudaResource,
                                                            cudaStream_t* pStream, unsigned int timeout) {
  if (conn == nullptr || pCudaResource == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_consumer_acquire, conn, driver_resources(pCudaResource), pStream, timeout);
}
CUDART_EXPORT cudaError_t cudaEGLStreamConsumerReleaseFrame(CUeglStreamConnection* conn,
                                                            cudaGraphicsResource_t pCudaResource,
                                                            cudaStream_t* pStream) {
  if (conn == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_consumer_release, conn, driver_resource(pCudaResource), pStream);
}
CUDART_EXPORT cudaError_t cudaEGLStreamProducerConnect(CUeglStreamConnection* conn, EGLHandle eglStream, EGLint width,
                                                       EGLint height) {
  if (conn == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_producer_connect, conn, eglStream, width, height);
}
CUDART_EXPORT cudaError_t cudaEGLStreamProducerDisconnect(CUeglStreamConnection* conn) {
  if (conn == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_producer_disconnect, conn);
}
// Events from EGL syncs are a Tegra feature: on x86-64 cudart answers cudaErrorNotSupported before it
// looks at the arguments (a null output included), and so does this runtime.
CUDART_EXPORT cudaError_t cudaEventCreateFromEGLSync(cudaEvent_t* phEvent, EGLHandle eglSync, unsigned int flags) {
#if defined(__x86_64__)
  (void)phEvent, (void)eglSync, (void)flags;
  return finish(cudaErrorNotSupported);
#else
  if (phEvent == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_egl_event_from_sync, phEvent, eglSync, flags);
#endif
}

// VDPAU.
CUDART_EXPORT cudaError_t cudaVDPAUGetDevice(int* device, VdpHandle vdpDevice, VdpGetProcAddress* vdpGetProcAddress) {
  if (device == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_vdpau_get_device, reinterpret_cast<CUdevice*>(device), vdpDevice, vdpGetProcAddress);
}
// Recording the VDPAU device for a CUDA device is choosing that device: the driver associates the
// surfaces at registration.
CUDART_EXPORT cudaError_t cudaVDPAUSetVDPAUDevice(int device, VdpHandle vdpDevice,
                                                  VdpGetProcAddress* vdpGetProcAddress) {
  (void)vdpDevice, (void)vdpGetProcAddress;
  return cudaSetDevice(device);
}
CUDART_EXPORT cudaError_t cudaGraphicsVDPAURegisterVideoSurface(cudaGraphicsResource_t* resource,
                                                                VdpHandle vdpSurface, unsigned int flags) {
  if (resource == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_vdpau_register_video, driver_resources(resource), vdpSurface, flags);
}
CUDART_EXPORT cudaError_t cudaGraphicsVDPAURegisterOutputSurface(cudaGraphicsResource_t* resource,
                                                                 VdpHandle vdpSurface, unsigned int flags) {
  if (resource == nullptr) return finish(cudaErrorInvalidValue);
  return call(g_vdpau_register_output, driver_resources(resource), vdpSurface, flags);
}

// The driver's logs.
static_assert(sizeof(cudaLogIterator) == sizeof(CUlogIterator) &&
              static_cast<int>(cudaLogLevelWarning) == static_cast<int>(CU_LOG_LEVEL_WARNING));
CUDART_EXPORT cudaError_t cudaLogsRegisterCallback(cudaLogsCallback_t callbackFunc, void* userData,
                                                   cudaLogsCallbackHandle* callback_out) {
  if (callbackFunc == nullptr || callback_out == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuLogsRegisterCallback(reinterpret_cast<CUlogsCallback>(callbackFunc), userData,
                                       reinterpret_cast<CUlogsCallbackHandle*>(callback_out)));
}
CUDART_EXPORT cudaError_t cudaLogsUnregisterCallback(cudaLogsCallbackHandle callback) {
  return finish(cuLogsUnregisterCallback(reinterpret_cast<CUlogsCallbackHandle>(callback)));
}
CUDART_EXPORT cudaError_t cudaLogsCurrent(cudaLogIterator* iterator_out, unsigned int flags) {
  if (iterator_out == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuLogsCurrent(iterator_out, flags));
}
CUDART_EXPORT cudaError_t cudaLogsDumpToFile(cudaLogIterator* iterator, const char* pathToFile, unsigned int flags) {
  if (pathToFile == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuLogsDumpToFile(iterator, pathToFile, flags));
}
CUDART_EXPORT cudaError_t cudaLogsDumpToMemory(cudaLogIterator* iterator, char* buffer, size_t* size,
                                               unsigned int flags) {
  if (buffer == nullptr || size == nullptr) return finish(cudaErrorInvalidValue);
  return finish(cuLogsDumpToMemory(iterator, buffer, size, flags));
}

// Export tables: the driver's, by the same identifiers (cudart's own private tables are not there:
// an identifier only NVIDIA's runtime knows is the driver's answer, cudaErrorInvalidValue).
CUDART_EXPORT cudaError_t cudaGetExportTable(const void** ppExportTable, const cudaUUID_t* pExportTableId) {
  if (ppExportTable == nullptr || pExportTableId == nullptr) return finish(cudaErrorInvalidValue);
  static_assert(sizeof(cudaUUID_t) == sizeof(CUuuid));
  return finish(cuGetExportTable(ppExportTable, reinterpret_cast<const CUuuid*>(pExportTableId)));
}
