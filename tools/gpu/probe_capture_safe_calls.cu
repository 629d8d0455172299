// Which driver queries invalidate a global-mode capture in progress: for each, begin a capture
// on a non-blocking stream, make the call (on that stream, or on another stream), and print the
// capture's status afterwards. streampool may only make the calls that leave it active.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cstdio>
#include <functional>

int main() {
  cudaFree(nullptr);
  cudaStream_t captured, other;
  cudaStreamCreateWithFlags(&captured, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
  CUstream s = reinterpret_cast<CUstream>(captured);
  CUstream o = reinterpret_cast<CUstream>(other);
  struct Probe {
    const char* name;
    std::function<CUresult()> call;
  };
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  Probe probes[] = {
      {"nothing", [] { return CUDA_SUCCESS; }},
      {"cuStreamGetCtx(captured)", [&] { CUcontext c; return cuStreamGetCtx(s, &c); }},
      {"cuStreamGetCtx(other)", [&] { CUcontext c; return cuStreamGetCtx(o, &c); }},
      {"cuStreamGetFlags(captured)", [&] { unsigned f; return cuStreamGetFlags(s, &f); }},
      {"cuStreamGetFlags(other)", [&] { unsigned f; return cuStreamGetFlags(o, &f); }},
      {"cuStreamIsCapturing(captured)", [&] { CUstreamCaptureStatus st; return cuStreamIsCapturing(s, &st); }},
      {"cuStreamIsCapturing(other)", [&] { CUstreamCaptureStatus st; return cuStreamIsCapturing(o, &st); }},
      {"cuCtxGetCurrent", [&] { CUcontext c; return cuCtxGetCurrent(&c); }},
      {"cuCtxGetDevice", [&] { CUdevice d; return cuCtxGetDevice(&d); }},
      {"cuCtxPushCurrent+Pop", [&] { cuCtxPushCurrent(ctx); CUcontext c; return cuCtxPopCurrent(&c); }},
      {"cuStreamGetId(captured)", [&] { unsigned long long id; return cuStreamGetId(s, &id); }},
      {"cuEventCreate", [&] { CUevent e; return cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); }},
      {"cuEventRecord(other)", [&] { CUevent e; cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); return cuEventRecord(e, o); }},
      {"cuEventQuery(recorded on other)", [&] { CUevent e; cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); cuEventRecord(e, o); return cuEventQuery(e); }},
      {"cuStreamWaitEvent(other)", [&] { CUevent e; cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); cuEventRecord(e, o); return cuStreamWaitEvent(o, e, 0); }},
      {"cuStreamQuery(other)", [&] { return cuStreamQuery(o); }},
      {"cuMemGetAllocationGranularity", [&] { CUmemAllocationProp p{}; p.type = CU_MEM_ALLOCATION_TYPE_PINNED; p.location.type = CU_MEM_LOCATION_TYPE_DEVICE; size_t g; return cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM); }},
      {"cuMemAddressReserve+Free", [&] { CUdeviceptr a; CUresult r = cuMemAddressReserve(&a, 2 << 20, 0, 0, 0); if (r == CUDA_SUCCESS) cuMemAddressFree(a, 2 << 20); return r; }},
      {"cuMemCreate+Map+SetAccess+Unmap+Release", [&] {
         CUmemAllocationProp p{}; p.type = CU_MEM_ALLOCATION_TYPE_PINNED; p.location.type = CU_MEM_LOCATION_TYPE_DEVICE; p.location.id = 0;
         CUmemGenericAllocationHandle h; CUresult r = cuMemCreate(&h, 2 << 20, &p, 0); if (r) return r;
         CUdeviceptr a; cuMemAddressReserve(&a, 2 << 20, 0, 0, 0); r = cuMemMap(a, 2 << 20, 0, h, 0); if (r) return r;
         CUmemAccessDesc d{}; d.location = p.location; d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE; r = cuMemSetAccess(a, 2 << 20, &d, 1); if (r) return r;
         cuMemUnmap(a, 2 << 20); cuMemRelease(h); cuMemAddressFree(a, 2 << 20); return r; }},
      {"cuMemCreate only", [&] {
         CUmemAllocationProp p{}; p.type = CU_MEM_ALLOCATION_TYPE_PINNED; p.location.type = CU_MEM_LOCATION_TYPE_DEVICE; p.location.id = 0;
         CUmemGenericAllocationHandle h; CUresult r = cuMemCreate(&h, 2 << 20, &p, 0); if (r == CUDA_SUCCESS) cuMemRelease(h); return r; }},
      {"cuPointerGetAttribute", [&] { CUdeviceptr p = 0; cuMemAlloc(&p, 0); int t; return cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p); }},
      {"cuMemGetInfo", [&] { size_t f, t; return cuMemGetInfo(&f, &t); }},
      // The chunks of pools VMM cannot serve (managed memory, pinned host memory without VMM):
      // streampool's own calls when such a pool grows while another thread captures.
      {"cuMemAllocManaged+cuMemFree", [&] { CUdeviceptr m = 0; CUresult r = cuMemAllocManaged(&m, 2 << 20, CU_MEM_ATTACH_GLOBAL); if (r == CUDA_SUCCESS) cuMemFree(m); return r; }},
      {"cuMemHostAlloc+cuMemFreeHost", [&] { void* h = nullptr; CUresult r = cuMemHostAlloc(&h, 2 << 20, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP); if (r == CUDA_SUCCESS) cuMemFreeHost(h); return r; }},
      {"mincore", [&] { unsigned char v; mincore(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(s) & ~uintptr_t(4095)), 4096, &v); return CUDA_SUCCESS; }},
  };
  for (const Probe& probe : probes) {
    CUresult begin = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUresult call = probe.call();
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuStreamIsCapturing(s, &status);
    CUgraph graph = nullptr;
    CUresult end = cuStreamEndCapture(s, &graph);
    if (graph) cuGraphDestroy(graph);
    std::printf("%-45s begin=%d call=%d status=%s end=%d\n", probe.name, begin, call,
                status == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "active" : status == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? "INVALIDATED" : "none", end);
  }
  return 0;
}
