// cuGetErrorName / cuGetErrorString. Names come from cuda.h's enum (generated); the strings are the
// driver's wording for the codes the fake returns, and the name for the rest.
#include <string_view>

#include "api_guard.hpp"

namespace fake {
namespace {

struct ErrorName {
  int code;
  const char* name;
};

constexpr ErrorName kErrorNames[] = {
#include "error_names.inc"
};

const char* name_of(CUresult error) {
  for (const auto& entry : kErrorNames) {
    if (entry.code == static_cast<int>(error)) return entry.name;
  }
  return nullptr;
}

const char* description_of(CUresult error) {
  switch (error) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
    case CUDA_ERROR_DEINITIALIZED: return "driver shutting down";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA driver is a stub library";
    case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
    case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
    case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return "context is destroyed";
    case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_NOT_READY: return "device not ready";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    case CUDA_ERROR_ILLEGAL_STATE: return "the operation cannot be performed in the present state";
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return "operation not permitted when stream is capturing";
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: return "part or all of the requested memory range is already mapped";
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return "pointer does not correspond to a registered memory region";
    case CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE: return "primary context active";
    case CUDA_ERROR_CONTEXT_ALREADY_IN_USE: return "context already in use";
    case CUDA_ERROR_UNKNOWN: return "unknown error";
    default: return name_of(error);
  }
}

}  // namespace
}  // namespace fake

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** pStr) {
  FAKE_ENTRY([&] {
    if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pStr = fake::name_of(error);
    return *pStr == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  }());
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult error, const char** pStr) {
  FAKE_ENTRY([&] {
    if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pStr = fake::name_of(error) == nullptr ? nullptr : fake::description_of(error);
    return *pStr == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  }());
}
