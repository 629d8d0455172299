/* A stand-in for an NVTX tool (what compute-sanitizer loads through NVTX_INJECTION64_PATH), for the
 * tests of streampool's NVTX registration over the fake driver. It exports the two entry points
 * NVTX's loader looks for: InitializeInjectionNvtx2 (the core API, whose calls it leaves as no-ops)
 * and InitializeInjectionNvtxExtension (which fills the memory extension's heap and region calls).
 * Each call it receives is counted, and the first kMaxEvents are recorded in order; the test reads
 * them through fake_nvtx_* (it dlopens this same file, which is the same loaded instance). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NVTX_NO_IMPL
#define NVTX_AS_SYSTEM_HEADER
#include <nvtx3/nvToolsExtMem.h>

#define EXPORT __attribute__((visibility("default")))

enum { kHeapRegister = 1, kHeapUnregister = 2, kHeapReset = 3, kRegionRegister = 4, kRegionUnregister = 5 };
enum { kMaxEvents = 1 << 16, kKinds = 6 };

typedef struct FakeNvtxEvent {
  int kind;
  uintptr_t heap;    /* the heap's handle (its address) */
  uintptr_t address; /* heap or region start */
  size_t bytes;      /* 0 where the call names no size (unregisters) */
} FakeNvtxEvent;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FakeNvtxEvent events[kMaxEvents];
static size_t recorded;
static unsigned long long counts[kKinds];

static void record(int kind, uintptr_t heap, uintptr_t address, size_t bytes) {
  pthread_mutex_lock(&lock);
  counts[kind]++;
  if (recorded < kMaxEvents) {
    FakeNvtxEvent event = {kind, heap, address, bytes};
    events[recorded++] = event;
  }
  pthread_mutex_unlock(&lock);
}

static nvtxMemHeapHandle_t heap_register(nvtxDomainHandle_t domain, nvtxMemHeapDesc_t const* desc) {
  (void)domain;
  if (desc == NULL || desc->type != NVTX_MEM_TYPE_VIRTUAL_ADDRESS ||
      desc->usage != NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR || desc->typeSpecificDesc == NULL) {
    record(kHeapRegister, 0, 0, 0); /* malformed: recorded with no range, which the test rejects */
    return NULL;
  }
  const nvtxMemVirtualRangeDesc_t* range = (const nvtxMemVirtualRangeDesc_t*)desc->typeSpecificDesc;
  record(kHeapRegister, (uintptr_t)range->ptr, (uintptr_t)range->ptr, range->size);
  return (nvtxMemHeapHandle_t)range->ptr; /* a virtual-memory heap's handle is its address */
}

static void heap_unregister(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap) {
  (void)domain;
  record(kHeapUnregister, (uintptr_t)heap, (uintptr_t)heap, 0);
}

static void heap_reset(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap) {
  (void)domain;
  record(kHeapReset, (uintptr_t)heap, (uintptr_t)heap, 0);
}

static void regions_register(nvtxDomainHandle_t domain, nvtxMemRegionsRegisterBatch_t const* batch) {
  (void)domain;
  if (batch == NULL || batch->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS ||
      batch->regionDescElementSize != sizeof(nvtxMemVirtualRangeDesc_t)) {
    record(kRegionRegister, 0, 0, 0);
    return;
  }
  const nvtxMemVirtualRangeDesc_t* ranges = (const nvtxMemVirtualRangeDesc_t*)batch->regionDescElements;
  for (size_t i = 0; i < batch->regionCount; ++i) {
    record(kRegionRegister, (uintptr_t)batch->heap, (uintptr_t)ranges[i].ptr, ranges[i].size);
  }
}

static void regions_unregister(nvtxDomainHandle_t domain, nvtxMemRegionsUnregisterBatch_t const* batch) {
  (void)domain;
  if (batch == NULL || batch->refType != NVTX_MEM_REGION_REF_TYPE_POINTER ||
      batch->refElementSize != sizeof(nvtxMemRegionRef_t)) {
    record(kRegionUnregister, 0, 0, 0);
    return;
  }
  for (size_t i = 0; i < batch->refCount; ++i) {
    record(kRegionUnregister, 0, (uintptr_t)batch->refElements[i].pointer, 0);
  }
}

EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  (void)get_export_table;
  return 1;
}

EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* module) {
  if (module == NULL || module->moduleId != NVTX_EXT_MODULEID_MEM || module->segmentsCount < 1) return 1;
  nvtxExtModuleSegment_t* segment = &module->segments[0];
  if (segment->slotCount <= NVTX3EXT_CBID_nvtxMemRegionsUnregister) return 1;
  segment->functionSlots[NVTX3EXT_CBID_nvtxMemHeapRegister] = (intptr_t)heap_register;
  segment->functionSlots[NVTX3EXT_CBID_nvtxMemHeapUnregister] = (intptr_t)heap_unregister;
  segment->functionSlots[NVTX3EXT_CBID_nvtxMemHeapReset] = (intptr_t)heap_reset;
  segment->functionSlots[NVTX3EXT_CBID_nvtxMemRegionsRegister] = (intptr_t)regions_register;
  segment->functionSlots[NVTX3EXT_CBID_nvtxMemRegionsUnregister] = (intptr_t)regions_unregister;
  return 1;
}

EXPORT size_t fake_nvtx_events(FakeNvtxEvent* out, size_t capacity) {
  pthread_mutex_lock(&lock);
  size_t copied = recorded < capacity ? recorded : capacity;
  if (out != NULL) memcpy(out, events, copied * sizeof(FakeNvtxEvent));
  pthread_mutex_unlock(&lock);
  return copied;
}

EXPORT unsigned long long fake_nvtx_count(int kind) {
  pthread_mutex_lock(&lock);
  unsigned long long count = kind > 0 && kind < kKinds ? counts[kind] : 0;
  pthread_mutex_unlock(&lock);
  return count;
}
