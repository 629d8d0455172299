// Which memory compute-sanitizer accepts as an NVTX heap (nvtxMemHeapRegister), and whether memcheck
// then reports a write one element past a region registered in it. streampool's pools are VMM
// mappings (cuMemAddressReserve + cuMemCreate + cuMemMap + cuMemSetAccess); the Sanitizer NVTX guide's
// example registers cudaMalloc memory. Run each case under
//   compute-sanitizer --tool memcheck --nvtx yes nvtx_probe CASE
// CASE: malloc (cudaMalloc), vmm (a VMM mapping, access set before the heap), vmm-late (the heap
// registered before cuMemSetAccess), pool (NVIDIA's pool, cudaMallocAsync), vmm-ascii (vmm with a
// message on the heap). Prints what it registered and the handle; memcheck prints the rest.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExtMem.h>

#include <cstdio>
#include <cstring>

__global__ void write_elements(int* data, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = i;
}

namespace {

nvtxMemHeapHandle_t register_heap(nvtxDomainHandle_t domain, void* base, size_t bytes, bool message) {
  nvtxMemVirtualRangeDesc_t range{};
  range.ptr = base;
  range.size = bytes;
  nvtxMemHeapDesc_t desc{};
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof(desc);
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof(range);
  desc.typeSpecificDesc = &range;
  if (message) {
    desc.messageType = NVTX_MESSAGE_TYPE_ASCII;
    desc.message.ascii = "probe heap";
  }
  return nvtxMemHeapRegister(domain, &desc);
}

void register_region(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap, void* pointer, size_t bytes) {
  nvtxMemVirtualRangeDesc_t range{};
  range.ptr = pointer;
  range.size = bytes;
  nvtxMemRegionsRegisterBatch_t batch{};
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof(batch);
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.heap = heap;
  batch.regionCount = 1;
  batch.regionDescElementSize = sizeof(range);
  batch.regionDescElements = &range;
  nvtxMemRegionsRegister(domain, &batch);
}

void* vmm_mapping(size_t bytes, bool set_access) {
  CUdevice device = 0;
  cuDeviceGet(&device, 0);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle = 0;
  if (cuMemAddressReserve(&base, bytes, 0, 0, 0) != CUDA_SUCCESS) return nullptr;
  if (cuMemCreate(&handle, bytes, &prop, 0) != CUDA_SUCCESS) return nullptr;
  if (cuMemMap(base, bytes, 0, handle, 0) != CUDA_SUCCESS) return nullptr;
  if (set_access) {
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (cuMemSetAccess(base, bytes, &access, 1) != CUDA_SUCCESS) return nullptr;
  }
  return reinterpret_cast<void*>(base);
}

}  // namespace

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "malloc";
  cudaFree(nullptr);  // the runtime initialised before any NVTX call, as the guide asks
  nvtxDomainHandle_t domain = nvtxDomainCreateA("nvtx_probe");
  const size_t heap_bytes = 2u << 20;
  void* base = nullptr;
  bool late = std::strcmp(what, "vmm-late") == 0;
  if (std::strcmp(what, "malloc") == 0) {
    cudaMalloc(&base, heap_bytes);
  } else if (std::strcmp(what, "pool") == 0) {
    cudaMallocAsync(&base, heap_bytes, nullptr);
    cudaStreamSynchronize(nullptr);
  } else {
    base = vmm_mapping(heap_bytes, !late);
  }
  if (base == nullptr) {
    std::printf("%s: no memory\n", what);
    return 1;
  }
  nvtxMemHeapHandle_t heap = register_heap(domain, base, heap_bytes, std::strcmp(what, "vmm-ascii") == 0);
  if (late) {
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cuMemSetAccess(reinterpret_cast<CUdeviceptr>(base), heap_bytes, &access, 1);
  }
  register_region(domain, heap, base, 256 * sizeof(int));
  write_elements<<<1, 257>>>(static_cast<int*>(base), 257);  // one element past the region
  const cudaError_t result = cudaDeviceSynchronize();
  std::printf("%s: heap %p over %p (%zu bytes), region of 1024 bytes, wrote 257 ints: %s\n", what,
              static_cast<void*>(heap), base, heap_bytes, cudaGetErrorName(result));
  return 0;
}
