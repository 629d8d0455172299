// The fake's record of kernel launches (api_module.cpp): kernels are never run, their launches are
// recorded for tests. Graph launches (api_graph.cpp) add their kernel nodes' launches here too.
#pragma once

#include <cuda.h>

namespace fake {

// Whether `function` is a handle cuModuleGetFunction handed out (of a module still loaded).
bool is_function(CUfunction function);

// Appends a launch of `function` (a handle from cuModuleGetFunction) to the record.
// CUDA_ERROR_INVALID_HANDLE for an unknown function; nothing is recorded then.
CUresult record_launch(CUfunction function, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                       CUstream stream);

}  // namespace fake
