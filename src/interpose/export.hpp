// How streampool defines a symbol other programs see. Everything else in libstreampool.so is
// hidden (-fvisibility=hidden) and the version script exports only cu* and streampool_* names.
//
// A hooked driver entry point (one listed in hooked_symbols.txt) is defined as
//   STREAMPOOL_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {...}
// with the exact versioned name; mind cuda.h's macros (cuStreamDestroy -> cuStreamDestroy_v2 ...):
// #undef the macro before defining an unversioned name. The generated weak forwarder of the same
// name loses to it at link time.
#pragma once

#define STREAMPOOL_EXPORT extern "C" __attribute__((visibility("default")))
