// cuGetErrorName / cuGetErrorString: the real driver's answer when there is one. Without a driver
// every call answers CUDA_ERROR_NO_DEVICE, and a program that prints its error would otherwise
// get no name for it either (the forwarded call fails too): the codes streampool itself returns
// are named here, with the driver's own wording.
#include "call_counters.hpp"
#include "process_state.hpp"

namespace streampool::interpose {

namespace {

struct Named {
  CUresult code;
  const char* name;
  const char* text;
};

// The codes streampool answers on its own (engine results, missing driver, bad arguments).
constexpr Named kNames[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

template <class RealCall>
CUresult error_text(Hook hook, CUresult error, const char** out, bool name, RealCall real_call) noexcept {
  count_call(hook);
  if (driver::real().have_driver) return real_call();
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const Named& entry : kNames) {
    if (entry.code == error) {
      *out = name ? entry.name : entry.text;
      return CUDA_SUCCESS;
    }
  }
  *out = nullptr;
  return CUDA_ERROR_INVALID_VALUE;  // as the driver answers a code it does not know
}

}  // namespace

}  // namespace streampool::interpose

namespace sp = streampool::interpose;

STREAMPOOL_HOOK CUresult cuGetErrorName(CUresult error, const char** pStr) {
  return sp::error_text(sp::Hook::cuGetErrorName, error, pStr, true,
                        [=] { return sp::forward(streampool::driver::real().cuGetErrorName, error, pStr); });
}

STREAMPOOL_HOOK CUresult cuGetErrorString(CUresult error, const char** pStr) {
  return sp::error_text(sp::Hook::cuGetErrorString, error, pStr, false,
                        [=] { return sp::forward(streampool::driver::real().cuGetErrorString, error, pStr); });
}
