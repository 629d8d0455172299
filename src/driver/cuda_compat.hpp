// cuda.h as streampool's driver layer and hooks need it: every versioned entry point declared under
// its exact exported name, plus the values newer CUDA 13.x headers add that the 13.0 toolkit lacks.
//
// cuda.h normally #defines old names to their newest versions (cuStreamDestroy -> cuStreamDestroy_v2)
// and declares the per-thread (_ptsz) variants only under CUDA_API_PER_THREAD_DEFAULT_STREAM. An
// interposer must define *each* versioned name, so we include it the way NVIDIA builds the driver
// itself: __CUDA_API_VERSION_INTERNAL declares all of them (cuStreamBeginCapture with one argument,
// cuMemAllocAsync and cuMemAllocAsync_ptsz, ...), and __CUDA_API_VERSION_INTERNAL_ODR keeps the enum
// definitions identical to those of a normal include. Include this header before anything that
// includes cuda.h.
#pragma once

#if defined(__cuda_cuda_h__) && !defined(__CUDA_API_VERSION_INTERNAL)
#error "include driver/cuda_compat.hpp before <cuda.h>"
#endif
#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#ifndef __CUDA_API_VERSION_INTERNAL_ODR
#define __CUDA_API_VERSION_INTERNAL_ODR 1
#endif
#include <cuda.h>

namespace streampool::driver {

// CUmemPool_attribute values 9..15 (CUDA 13.x; the 13.0 header stops at USED_MEM_HIGH = 8).
inline constexpr int kMempoolAttrAllocationType = 9;
inline constexpr int kMempoolAttrExportHandleTypes = 10;
inline constexpr int kMempoolAttrLocationId = 11;
inline constexpr int kMempoolAttrLocationType = 12;
inline constexpr int kMempoolAttrMaxPoolSize = 13;
inline constexpr int kMempoolAttrHwDecompressEnabled = 14;
inline constexpr int kMempoolAttrLocalityDomainId = 15;
inline constexpr int kMempoolAttrFirst = 1;
inline constexpr int kMempoolAttrLast = 15;

// CUmemLocationType additions of CUDA 13.2 (imported pools whose device is not visible).
inline constexpr int kMemLocationTypeInvisible = 5;
// CUDA 13.4's device locality domain: the location's id holds `localized`, a (deviceId,
// localityDomainId) pair of bytes followed by two reserved bytes (see locality_domains.hpp).
inline constexpr int kMemLocationTypeDeviceLocalityDomain = 6;
// CUDA 13.4's CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT: the value after ATOMIC_REDUCTION_SUPPORTED
// (148), where the 13.0 header has CU_DEVICE_ATTRIBUTE_MAX. A driver that predates it answers
// INVALID_VALUE.
inline constexpr int kDeviceAttributeLocalityDomainCount = 149;

// CUmemPoolProps::usage bit asking for hardware decompression (CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS).
inline constexpr unsigned kMemPoolUsageHwDecompress = 0x2;

// The handle types streampool's pools can export: POSIX file descriptors (see docs/DESIGN.md, "Pools
// shared between processes"), where the real driver can export VMM memory as such.
inline constexpr unsigned kSupportedPoolHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

}  // namespace streampool::driver
