// cudaProfilerStart / cudaProfilerStop: the driver's, in the current context (an attached profiler
// starts or stops collecting; without one both succeed).
#include <cudaProfiler.h>
#include <cuda_profiler_api.h>

#include "api.hpp"

using namespace streampool::runtime;

CUDART_EXPORT cudaError_t cudaProfilerStart() { STREAMPOOL_WITH_CONTEXT(cuProfilerStart()); }
CUDART_EXPORT cudaError_t cudaProfilerStop() { STREAMPOOL_WITH_CONTEXT(cuProfilerStop()); }
