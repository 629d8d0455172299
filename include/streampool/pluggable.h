/* streampool as a pluggable allocator (C99 and C++): the entry points of libstreampool_alloc.so,
 * for a process whose libcuda is NVIDIA's and where LD_PRELOAD cannot be set (a Jupyter kernel, a
 * job launcher). The library serves these calls with streampool's engine and forwards everything
 * else it needs to NVIDIA's driver, already loaded in the process. It exports these functions and
 * the public C interface of <streampool/streampool.h>, and no cu* or cuda* name.
 *
 * PyTorch:  torch.cuda.memory.CUDAPluggableAllocator(path, "streampool_torch_alloc",
 *                                                      "streampool_torch_free")
 * CuPy:     streampool_cupy_malloc / streampool_cupy_free through ctypes
 * (python/streampool: streampool.torch.use(), streampool.cupy.use()).
 *
 * What streampool cannot see here (the program's own event records, waits and synchronisations,
 * capture begins and ends, stream destroys) and what that means for reuse: docs/pluggable.md. */
#ifndef STREAMPOOL_PLUGGABLE_H
#define STREAMPOOL_PLUGGABLE_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st; /* cudaStream_t and CUstream are both struct CUstream_st* */

/* `size` bytes on `device` in the order of `stream` (0: the legacy default stream); NULL for a
 * size of 0, a bad device or a failed allocation (one line on stderr for the last two). Never
 * blocks on the GPU. PyTorch's alloc_fn signature. */
void* streampool_torch_alloc(ssize_t size, int device, struct CUstream_st* stream);
/* Frees `ptr` in the order of `stream`, the stream it was allocated on (as PyTorch passes it):
 * reusable at once on that stream, on another one once streampool has proof that the free ran.
 * Never blocks. NULL is ignored. PyTorch's free_fn signature. */
void streampool_torch_free(void* ptr, ssize_t size, int device, struct CUstream_st* stream);

/* `ptr` is used on `stream` too (Tensor.record_stream): its free then makes the freeing stream wait
 * for the work queued on `stream` so far, without blocking. PyTorch calls it only when a C++
 * program sets it with CUDAPluggableAllocator::set_record_stream_fn; Python cannot. */
void streampool_torch_record_stream(void* ptr, struct CUstream_st* stream);

/* The same for CuPy (a ctypes allocator passes the current stream's handle). */
void* streampool_cupy_malloc(size_t size, int device, struct CUstream_st* stream);
void streampool_cupy_free(void* ptr, int device, struct CUstream_st* stream);

/* Waits for all work of `device` (a synchronisation streampool observes, so every free made so far
 * becomes reusable by every stream), then gives the device pool's unused memory back to the driver.
 * Blocks: for an explicit call (streampool.torch.empty_cache()), never for an allocator hot path.
 * 0 on success, -1 for a bad device or a driver error. */
int streampool_empty_cache(int device);
/* streampool_empty_cache for every device whose primary context is active: PyTorch's reset_fn
 * (torch.cuda.empty_cache()), for a C++ program that sets it with set_reset_fn. */
void streampool_torch_empty_cache(void);

#ifdef __cplusplus
}
#endif

#endif /* STREAMPOOL_PLUGGABLE_H */
