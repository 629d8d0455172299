/* The interposer tests' mini driver: a tiny libcuda.so.1 (SONAME included) whose answers the tests
 * can predict. The hand-written functions below do something checkable with their arguments;
 * every other name returns a distinct code (mini_driver_generic.c).
 *
 * cuGetProcAddress_v2 picks variants the way a driver does, by a simple rule: for cudaVersion >=
 * 3020 the highest exported _vN of the symbol; with flag 2 (per-thread default stream) its _ptsz or
 * _ptds form when one exists. So cuMemAllocAsync at flags 0 and 2 give two functions,
 * cuCtxSynchronize at 2000 and 13000 give cuCtxSynchronize and cuCtxSynchronize_v2. */
#include <stdio.h>
#include <string.h>

#include "mini_driver.h"

enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kNotFound = 500,
  kStatusSuccess = 0,
  kStatusSymbolNotFound = 1,
  kPerThreadFlag = 2,
  kVersionedFrom = 3020
};

static struct mini_launch_record last_launch;
static struct mini_clamp_record last_clamp;

MINI_EXPORT const struct mini_launch_record* mini_last_launch(void);
MINI_EXPORT const struct mini_launch_record* mini_last_launch(void) { return &last_launch; }
MINI_EXPORT const struct mini_clamp_record* mini_last_clamp(void);
MINI_EXPORT const struct mini_clamp_record* mini_last_clamp(void) { return &last_clamp; }

MINI_EXPORT int cuInit(unsigned flags);
MINI_EXPORT int cuInit(unsigned flags) { return flags == 0 ? kSuccess : kInvalidValue; }

MINI_EXPORT int cuDriverGetVersion(int* version);
MINI_EXPORT int cuDriverGetVersion(int* version) {
  *version = 13000;
  return kSuccess;
}

MINI_EXPORT int cuDeviceGetCount(int* count);
MINI_EXPORT int cuDeviceGetCount(int* count) {
  *count = 3;
  return kSuccess;
}

/* "Device" memory is host memory here. */
MINI_EXPORT int cuMemsetD8_v2(unsigned long long destination, unsigned char value, size_t count);
MINI_EXPORT int cuMemsetD8_v2(unsigned long long destination, unsigned char value, size_t count) {
  memset((void*)(size_t)destination, value, count);
  return kSuccess;
}

/* Eleven arguments: the last five travel on the stack. */
MINI_EXPORT int cuLaunchKernel(void* function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                               unsigned block_y, unsigned block_z, unsigned shared_bytes, void* stream, void** params,
                               void** extra);
MINI_EXPORT int cuLaunchKernel(void* function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                               unsigned block_y, unsigned block_z, unsigned shared_bytes, void* stream, void** params,
                               void** extra) {
  struct mini_launch_record record = {function, {grid_x, grid_y, grid_z}, {block_x, block_y, block_z},
                                      shared_bytes, stream, params, extra};
  last_launch = record;
  return kSuccess;
}

/* Floating-point arguments arrive in vector registers. */
MINI_EXPORT int cuTexRefSetMipmapLevelClamp(void* texref, float min_clamp, float max_clamp);
MINI_EXPORT int cuTexRefSetMipmapLevelClamp(void* texref, float min_clamp, float max_clamp) {
  last_clamp.texref = texref;
  last_clamp.min_clamp = min_clamp;
  last_clamp.max_clamp = max_clamp;
  return kSuccess;
}

static mini_function find(const char* name) {
  const struct mini_entry* entry;
  for (entry = mini_entries; entry->name != NULL; ++entry) {
    if (strcmp(entry->name, name) == 0) return entry->function;
  }
  return NULL;
}

static mini_function choose_variant(const char* symbol, int version, unsigned long long flags) {
  static const char* const versions[] = {"_v3", "_v2", ""};
  char base[256];
  char candidate[272];
  size_t index;
  for (index = 0; index < sizeof versions / sizeof versions[0]; ++index) {
    mini_function found;
    if (versions[index][0] != '\0' && version < kVersionedFrom) continue;
    snprintf(base, sizeof base, "%s%s", symbol, versions[index]);
    if ((flags & kPerThreadFlag) != 0) {
      snprintf(candidate, sizeof candidate, "%s_ptsz", base);
      if ((found = find(candidate)) != NULL) return found;
      snprintf(candidate, sizeof candidate, "%s_ptds", base);
      if ((found = find(candidate)) != NULL) return found;
    }
    if ((found = find(base)) != NULL) return found;
  }
  return NULL;
}

MINI_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                                    int* status);
MINI_EXPORT int cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                                    int* status) {
  mini_function found;
  if (symbol == NULL || pfn == NULL) return kInvalidValue;
  found = symbol[0] == '\0' ? NULL : choose_variant(symbol, version, flags);
  *pfn = NULL;
  if (found == NULL) {
    if (status != NULL) *status = kStatusSymbolNotFound;
    return kNotFound;
  }
  memcpy(pfn, &found, sizeof found); /* function pointer into void*, without a pedantic cast */
  if (status != NULL) *status = kStatusSuccess;
  return kSuccess;
}

MINI_EXPORT int cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags);
MINI_EXPORT int cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
