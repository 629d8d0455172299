/* Pools at a device locality domain (CUDA 13.4's location type 6, the id read as
 * `localized` {deviceId, localityDomainId, reserved[2]}), on device 0: what the driver answers, and
 * with `expect`, that the answers are streampool's (one domain per device, domain 0 = the device:
 * the pool serves memory a copy reads back, LOCATION_TYPE device, LOCALITY_DOMAIN_ID -1; domain 1
 * and Managed refused; the device's default pool named through the domain).
 *   cc -I<cuda>/include probe_locality_domain.c -lcuda && ./a.out [expect]          */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#define LOCALITY_DOMAIN ((CUmemLocationType)6)
#define DOMAIN_COUNT ((CUdevice_attribute)149)

static CUmemLocation localized(int device, int domain) {
  CUmemLocation where;
  unsigned char bytes[4] = {(unsigned char)device, (unsigned char)domain, 0, 0};
  memset(&where, 0, sizeof where);
  where.type = LOCALITY_DOMAIN;
  memcpy(&where.id, bytes, sizeof bytes);
  return where;
}

static int failures = 0;
static void check(int expect, int ok, const char* what) {
  if (expect && !ok) {
    printf("UNEXPECTED: %s\n", what);
    failures++;
  }
}

int main(int argc, char** argv) {
  const int expect = argc > 1 && strcmp(argv[1], "expect") == 0;
  CUcontext context;
  CUstream stream;
  if (cuInit(0) || cuDevicePrimaryCtxRetain(&context, 0) || cuCtxSetCurrent(context) ||
      cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) {
    printf("no device\n");
    return 2;
  }
  int count = -1;
  CUresult r = cuDeviceGetAttribute(&count, DOMAIN_COUNT, 0);
  printf("LOCALITY_DOMAIN_COUNT: result %d, count %d\n", (int)r, count);
  check(expect, r == CUDA_SUCCESS && count == 1, "one domain per device");

  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = localized(0, 0);
  CUmemoryPool pool = NULL;
  r = cuMemPoolCreate(&pool, &props);
  printf("create at (device 0, domain 0): result %d\n", (int)r);
  check(expect, r == CUDA_SUCCESS, "domain 0 pool created");
  if (r == CUDA_SUCCESS) {
    int type = -7, id = -7, domain = -7;
    cuMemPoolGetAttribute(pool, (CUmemPool_attribute)12, &type);
    cuMemPoolGetAttribute(pool, (CUmemPool_attribute)11, &id);
    r = cuMemPoolGetAttribute(pool, (CUmemPool_attribute)15, &domain);
    printf("  LOCATION_TYPE %d, LOCATION_ID %d, LOCALITY_DOMAIN_ID %d (result %d)\n", type, id, domain, (int)r);
    check(expect, type == CU_MEM_LOCATION_TYPE_DEVICE && id == 0 && domain == -1, "a full-device pool");
    CUdeviceptr pointer = 0;
    unsigned char last = 0;
    r = cuMemAllocFromPoolAsync(&pointer, 1 << 20, pool, stream);
    if (r == CUDA_SUCCESS) {
      cuMemsetD8Async(pointer, 0x3c, 1 << 20, stream);
      cuMemcpyDtoHAsync(&last, pointer + (1 << 20) - 1, 1, stream);
      cuMemFreeAsync(pointer, stream);
      cuStreamSynchronize(stream);
    }
    printf("  allocate, set, read back: result %d, byte 0x%02x\n", (int)r, last);
    check(expect, r == CUDA_SUCCESS && last == 0x3c, "memory of the domain pool");
    cuMemPoolDestroy(pool);
  }
  props.location = localized(0, 1);
  r = cuMemPoolCreate(&pool, &props);
  printf("create at (device 0, domain 1): result %d\n", (int)r);
  check(expect, r == CUDA_ERROR_INVALID_VALUE, "domain 1 does not exist");
  props.location = localized(0, 0);
  props.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
  r = cuMemPoolCreate(&pool, &props);
  printf("managed at (device 0, domain 0): result %d\n", (int)r);
  check(expect, r == CUDA_ERROR_INVALID_VALUE, "no managed pool at a domain");

  CUmemoryPool device_default = NULL, domain_default = NULL;
  CUmemLocation where = localized(0, 0);
  cuDeviceGetDefaultMemPool(&device_default, 0);
  r = cuMemGetDefaultMemPool(&domain_default, &where, CU_MEM_ALLOCATION_TYPE_PINNED);
  printf("default pool through domain 0: result %d, %s the device's\n", (int)r,
         domain_default == device_default ? "is" : "is not");
  check(expect, r == CUDA_SUCCESS && domain_default == device_default, "the device's default pool");
  printf("%s\n", failures == 0 ? "done" : "FAILED");
  return failures == 0 ? 0 : 1;
}
