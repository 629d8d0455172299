/* A library that looks like libcuda but is a link-time stub: cuGetProcAddress_v2 answers every
 * query, the "" probe included, with CUDA_ERROR_STUB_LIBRARY (34), as NVIDIA's stubs do.
 * streampool must refuse to use it as the real driver. */
#include <stddef.h>

#define STUB_EXPORT __attribute__((visibility("default")))
enum { kStubLibrary = 34 };

STUB_EXPORT int cuInit(unsigned flags);
STUB_EXPORT int cuInit(unsigned flags) {
  (void)flags;
  return kStubLibrary;
}

STUB_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                                    int* status);
STUB_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                                    int* status) {
  (void)symbol;
  (void)version;
  (void)flags;
  if (pfn != NULL) *pfn = NULL;
  if (status != NULL) *status = 1;
  return kStubLibrary;
}
