// What nvcc's generated code registers at program start (__cudaRegisterFatBinary and friends):
// fat binaries, the kernels and variables in them, keyed by their host-side addresses. Modules are
// loaded lazily, once per context, on the first launch or symbol access that needs one, as cudart 13
// does; nothing touches the driver during registration (it runs in static constructors).
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "api.hpp"

namespace streampool::runtime {

struct FatBinary;

struct Kernel {
  FatBinary* binary = nullptr;
  const void* host_function = nullptr;
  std::string name;  // the mangled device name
  std::mutex mutex;
  std::vector<std::pair<CUcontext, CUfunction>> functions;  // per context, filled on first use
};

struct Variable {
  FatBinary* binary = nullptr;
  std::string name;
  std::size_t size = 0;
  void** managed_host_pointer = nullptr;  // __managed__ variables: where the host's pointer lives
};

struct FatBinary {
  const void* image = nullptr;  // the fat binary itself (the wrapper's data)
  std::mutex mutex;
  std::vector<std::pair<CUcontext, CUmodule>> modules;
  std::vector<Variable*> managed;
};

// Registration (static constructors of the program): never fails, never calls the driver.
FatBinary* register_fat_binary(const void* image);
void register_kernel(FatBinary* binary, const void* host_function, const char* name);
void register_variable(FatBinary* binary, const void* host_variable, const char* name, std::size_t size,
                       void** managed_host_pointer);
void unregister_fat_binary(FatBinary* binary) noexcept;

// The kernel a launch names: a host stub's address, or a cudaKernel_t we handed out. nullptr: unknown.
Kernel* find_kernel(const void* function) noexcept;
// The host stub of the kernel whose function (in any context) is `function`; nullptr when no
// registered kernel has it (a function of a module the program loaded itself). A linear walk: graph
// node queries only.
const void* host_function_of(CUfunction function) noexcept;
// What naming no kernel answers: cudart 13 takes a pointer that is no registered stub for a
// cudaKernel_t handle, so an unknown one is an invalid handle (measured with NVIDIA's cudart 13
// on driver 580 for cudaLaunchKernel and cudaFuncGetAttributes), not InvalidDeviceFunction.
inline constexpr cudaError_t kUnknownKernel = cudaErrorInvalidResourceHandle;
// The kernel's function in the current context (the context must be current), loading its module.
cudaError_t kernel_function(Kernel* kernel, CUfunction* function) noexcept;
// What a launch needs: the function that `key` (a host stub's address or a cudaKernel_t) names in the
// current context, making the context ready first (ensure_context). A thread's second and later
// launches of a kernel in a context take no lock and no map lookup: the answer is kept in a
// per-thread cache that registration and resets invalidate. Errors as find_kernel (unknown:
// kUnknownKernel, checked before the context), ensure_context and kernel_function.
cudaError_t launch_function(const void* key, CUfunction* function) noexcept;
// Kernels of libraries the program loaded (cudaLibraryGetKernel, cudaLibraryEnumerateKernels): their
// CUkernel is the cudaKernel_t, accepted wherever a kernel is named; forgotten when the library is
// unloaded (which makes every launch cache stale).
void register_library_kernels(CUlibrary library, const CUkernel* kernels, std::size_t count) noexcept;
void forget_library(CUlibrary library) noexcept;
bool is_library_kernel(const void* key) noexcept;
// The function `key` (a host stub, a cudaKernel_t of a registered kernel or of a loaded library)
// names in the current context, making the context ready first; kUnknownKernel for anything else.
cudaError_t resolve_function(const void* key, CUfunction* function) noexcept;
// A registered variable's address and size in the current context.
cudaError_t variable_address(const void* symbol, CUdeviceptr* address, std::size_t* size) noexcept;
// Loads a fat binary in the current context and points its managed variables at their memory.
cudaError_t load_in_current_context(FatBinary* binary) noexcept;
// A context went away (cudaDeviceReset): its modules with it.
void forget_modules(CUcontext context) noexcept;

}  // namespace streampool::runtime
