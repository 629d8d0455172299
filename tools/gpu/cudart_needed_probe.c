/* Which runtime a library that links libcudart.so.13 dynamically gets in a program linked to
   streampool's runtime. cudart_samples.sh builds this file three times: twice as a library
   (-DPROBE_LIBRARY: libprobe_linked.so and libprobe_opened.so) linked to NVIDIA's libcudart, with a
   RUNPATH to NVIDIA's toolkit, as a CUDA library that links the runtime dynamically would be; and
   once as the program, linked to libprobe_linked.so before streampool's runtime (so the loader meets
   the library's DT_NEEDED libcudart.so.13 first in the link order) and opening libprobe_opened.so
   with dlopen. The script reads the loader's bindings of both libraries' cudaGetDeviceCount. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#ifdef PROBE_LIBRARY
int probe_device_count(void) {
  int count = -1;
  cudaError_t error = cudaGetDeviceCount(&count);
  return error == cudaSuccess ? count : -(int)error;
}
#else
#include <dlfcn.h>

int probe_device_count(void);

int main(int argc, char** argv) {
  int own = -1;
  if (cudaGetDeviceCount(&own) != cudaSuccess) {
    printf("the program's cudaGetDeviceCount failed\n");
    return 1;
  }
  int linked = probe_device_count();
  int opened = -1;
  if (argc > 1) {
    void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    int (*count)(void) = library ? (int (*)(void))dlsym(library, "probe_device_count") : NULL;
    if (count == NULL) {
      printf("dlopen %s: %s\n", argv[1], dlerror());
      return 1;
    }
    opened = count();
  }
  printf("devices: program %d, linked library %d, opened library %d\n", own, linked, opened);
  return linked == own && (argc < 2 || opened == own) ? 0 : 1;
}
#endif
