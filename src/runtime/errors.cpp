// The error model: the per-thread last error, sticky errors, their names and descriptions.
#include <algorithm>
#include <atomic>
#include <iterator>

#include "api.hpp"

namespace streampool::runtime {

std::atomic<int> detail::g_sticky_count{0};

namespace {

constexpr int kMaxDevices = 64;

struct ErrorText {
  int value;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
#include "error_table.inc"
};

constexpr const char* kUnrecognized = "unrecognized error code";

const ErrorText* find_error(int value) noexcept {
  const auto found = std::lower_bound(std::begin(kErrors), std::end(kErrors), value,
                                      [](const ErrorText& entry, int wanted) { return entry.value < wanted; });
  return found != std::end(kErrors) && found->value == value ? found : nullptr;
}

constinit thread_local cudaError_t t_last_error = cudaSuccess;
std::atomic<int> g_sticky[kMaxDevices]{};

}  // namespace

cudaError_t to_runtime_error(CUresult result) noexcept {
  const int value = static_cast<int>(result);
  if (find_error(value) != nullptr) return static_cast<cudaError_t>(value);
  return cudaErrorUnknown;
}

bool is_sticky(cudaError_t error) noexcept {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
      return true;
    default:
      return false;
  }
}

void record_sticky(int device, cudaError_t error) noexcept {
  if (device < 0 || device >= kMaxDevices) return;
  int expected = 0;
  if (g_sticky[device].compare_exchange_strong(expected, static_cast<int>(error))) {
    detail::g_sticky_count.fetch_add(1, std::memory_order_relaxed);
  }
}

cudaError_t sticky_error(int device) noexcept {
  if (detail::g_sticky_count.load(std::memory_order_relaxed) == 0) [[likely]] return cudaSuccess;
  if (device < 0 || device >= kMaxDevices) return cudaSuccess;
  return static_cast<cudaError_t>(g_sticky[device].load(std::memory_order_acquire));
}

void clear_sticky(int device) noexcept {
  if (device < 0 || device >= kMaxDevices) return;
  if (g_sticky[device].exchange(0) != 0) detail::g_sticky_count.fetch_sub(1, std::memory_order_relaxed);
}

cudaError_t finish(cudaError_t error) noexcept {
  // cudaErrorNotReady is an answer (a query of unfinished work), not a failure: cudart leaves the
  // last error alone for it.
  if (error == cudaSuccess || error == cudaErrorNotReady) return error;
  t_last_error = error;
  if (is_sticky(error)) record_sticky(current_device(), error);
  return error;
}

}  // namespace streampool::runtime

using namespace streampool::runtime;

// A sticky error is the last error like any other: cudaGetLastError returns and clears it, and the
// next call that fails because of it sets it again (measured with NVIDIA's cudart 13 on driver 580:
// a second cudaGetLastError after an illegal address does not answer it again).
CUDART_EXPORT cudaError_t cudaGetLastError() {
  const cudaError_t last = t_last_error;
  t_last_error = cudaSuccess;
  return last;
}

CUDART_EXPORT cudaError_t cudaPeekAtLastError() { return t_last_error; }

CUDART_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* entry = find_error(static_cast<int>(error));
  return entry != nullptr ? entry->name : kUnrecognized;
}

CUDART_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* entry = find_error(static_cast<int>(error));
  return entry != nullptr ? entry->text : kUnrecognized;
}
