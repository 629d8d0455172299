/* streampool's public C interface (C99 and C++): what a program may ask of streampool when it runs
 * under it. libstreampool.so (the LD_PRELOAD library) exports these functions; the CUDA runtime
 * library of streampool exports the same ones.
 *
 * A program that must also run without streampool should not link them directly: look them up at
 * run time instead, and treat a missing symbol as "streampool is not here":
 *
 *     typedef int (*streampool_active_fn)(void);
 *     streampool_active_fn active = (streampool_active_fn)dlsym(RTLD_DEFAULT, "streampool_active");
 *     if (active != NULL && active()) { ... }
 *
 * A program built against streampool (find_package(streampool), target streampool::preload or
 * streampool::cudart; or pkg-config streampool) may call them directly.
 *
 * None of these functions throws, blocks on the GPU or calls into the CUDA driver; all are safe to
 * call from any thread at any time, before CUDA is initialised and after. */
#ifndef STREAMPOOL_STREAMPOOL_H
#define STREAMPOOL_STREAMPOOL_H

#include <stddef.h>
#include <stdint.h>

#define STREAMPOOL_VERSION_MAJOR 0
#define STREAMPOOL_VERSION_MINOR 1
#define STREAMPOOL_VERSION_PATCH 0
/* The version of this header; streampool_version() is the library's. */
#define STREAMPOOL_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version, "MAJOR.MINOR.PATCH". Never NULL. */
const char* streampool_version(void);

/* 1 when streampool serves this process's stream-ordered allocations; 0 when it is loaded but
 * passes every call through to NVIDIA's driver (STREAMPOOL_DISABLE=1). */
int streampool_active(void);

/* --- statistics ------------------------------------------------------------------------------ */

/* One pool, as CUDA's pool attributes would report it. */
typedef struct streampool_pool_stats {
  uint64_t handle;            /* the CUmemoryPool handle value */
  int32_t kind;               /* 1: device memory, 2: pinned host memory, 3: managed memory */
  int32_t location_type;      /* CUmemLocationType (1: device, 2: host, ...; 0 for managed) */
  int32_t location_id;        /* the device ordinal (or NUMA node) of the location */
  int32_t is_default;         /* 1 for a default pool of its location */
  uint64_t release_threshold; /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
  uint64_t reserved_current;  /* bytes of physical memory the pool holds now */
  uint64_t reserved_high;     /* ... at most since creation or the last reset */
  uint64_t used_current;      /* bytes handed out to the program now */
  uint64_t used_high;         /* ... at most */
} streampool_pool_stats;

/* The process as a whole. Set struct_size to sizeof(streampool_stats) before the call: a later
 * library fills only the fields a program built against an older header knows. */
typedef struct streampool_stats {
  uint32_t struct_size;
  uint32_t pool_count;           /* live pools */
  uint64_t reserved_current;     /* sums over the live pools */
  uint64_t reserved_high;        /* sum of the pools' peaks (an upper bound of the process's peak) */
  uint64_t used_current;
  uint64_t used_high;
  uint64_t allocation_calls;     /* cuMemAllocAsync and cuMemAllocFromPoolAsync calls (all variants) */
  uint64_t free_calls;           /* cuMemFreeAsync calls (all variants) */
  uint64_t time_in_allocator_ns; /* measured only with STREAMPOOL_TIMING=1 (streampool run sets it), else 0 */
  uint64_t timed_calls;          /* the calls time_in_allocator_ns covers */
} streampool_stats;

/* Fills *totals (when not NULL) and the first `capacity` entries of `pools` (may be NULL when
 * capacity is 0). Returns the number of live pools, which may exceed `capacity` (call again with a
 * larger array), or -1 when totals->struct_size is too small or the snapshot failed. */
int streampool_get_stats(streampool_stats* totals, streampool_pool_stats* pools, size_t capacity);

/* The same report as JSON (the format STREAMPOOL_STATS writes at exit), NUL-terminated and
 * truncated to `size` bytes, into `buffer` (may be NULL when size is 0). Returns the report's length
 * without the NUL, as snprintf does: a value >= size means the buffer was too small. -1 on failure. */
int streampool_stats_json(char* buffer, size_t size);

/* The leak report (STREAMPOOL_LEAKS=1) as JSON, filled like streampool_stats_json: the live pool
 * allocations grouped by call site, most bytes first ("sites", each with its frames: object, offset,
 * symbol), those past the call-site limit ("other_sites"), and the bad frees seen, counted by kind
 * and the first few in full. With the mode off, "enabled" is false and nothing is recorded. */
int streampool_leak_report(char* buffer, size_t size);

/* --- the process cap (STREAMPOOL_LIMIT) ------------------------------------------------------- */

/* One device's share of the process cap. Set struct_size to sizeof(streampool_device_limit) before
 * the call; an older, smaller struct_size (at least up to `charged`) is filled up to its size.
 * Counted whether or not a limit is set; device memory only (pinned host and managed pools, host
 * allocations and IPC imports are not counted). */
typedef struct streampool_device_limit {
  uint32_t struct_size;
  int32_t device;
  uint64_t limit;                 /* the cap, in bytes; UINT64_MAX where none is set */
  uint64_t charged;               /* what the cap applies to: pools_in_use + pools_cached + forwarded
                                     + arrays + graph */
  uint64_t pools_in_use;          /* of the pools' mapped memory: allocated to the program */
  uint64_t pools_cached;          /* of the pools' mapped memory: free, kept for reuse */
  uint64_t forwarded;             /* cuMemAlloc, cuMemAllocPitch and cuMemCreate memory (with a cap set) */
  uint64_t peak;                  /* the most charged at once */
  uint64_t estimated_uncounted;   /* an estimate, not a count: device memory that went since the first
                                     cuMemGetInfo under the cap and that nothing above accounts for
                                     (contexts, modules, the driver's own use, other processes) */
  /* Appended (a caller's older, smaller struct_size is filled up to its size): */
  uint64_t served_malloc;         /* of pools_in_use: cuMemAlloc and cuMemAllocPitch memory served from
                                     streampool's pools (STREAMPOOL_SERVE_MALLOC=1), not yet freed */
  uint64_t arrays;                /* cuArrayCreate, cuArray3DCreate and cuMipmappedArrayCreate memory
                                     (with a cap set): the driver's cuArrayGetMemoryRequirements or
                                     cuMipmappedArrayGetMemoryRequirements size, else the elements'
                                     bytes */
  uint64_t graph;                 /* reserved by the driver for graphs' memory-allocation nodes (with a
                                     cap set): CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT as last read,
                                     after a launch of a graph known to allocate, a trim, ... */
} streampool_device_limit;

/* Fills *info for `device`. 0, or -1 for a device streampool has not seen, a NULL info or a
 * struct_size too small. */
int streampool_limit_info(int device, streampool_device_limit* info);

/* --- out of memory ------------------------------------------------------------------------------ */

/* The report of the last allocation that failed for lack of memory, as JSON: the request ("pool",
 * or "driver" for a cuMemAlloc the process cap refused; bytes, pool, stream, device), the cap and the device's free memory, each pool of the device (reserved,
 * used, free, largest free range, fragmentation, frees pending per stream), the largest live
 * allocations, the count of failures so far, and "cause" with its "explanation" (one of
 * pending_frees, fragmentation, held_outside, cap_reached, device_full, pool_limit). Filled as
 * streampool_stats_json fills its buffer; returns 0 (and writes an empty string) while no
 * allocation has failed, -1 on failure. */
int streampool_oom_report(char* buffer, size_t size);

/* --- traces (format: docs/TRACE_FORMAT.md; `streampool replay`, `streampool plot`) ------------- */

/* Starts recording every allocator and ordering event into the file `path` (%p: the process id,
 * %%: a percent sign). Returns 0, or an errno value: EBUSY when a trace is already being recorded
 * (STREAMPOOL_TRACE starts one at the first CUDA call), EINVAL for an empty path, or why the file
 * could not be created. */
int streampool_trace_start(const char* path);

/* Writes every thread's buffered events to the file. 0, or ENOENT when no trace is recording. */
int streampool_trace_flush(void);

/* Flushes and closes the trace. 0, or ENOENT when no trace is recording. */
int streampool_trace_stop(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STREAMPOOL_STREAMPOOL_H */
