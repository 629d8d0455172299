/* Looks streampool up at run time: prints whether it serves this process. */
#include <dlfcn.h>
#include <stdio.h>

#include <streampool/streampool.h>

int main(void) {
  typedef int (*active_fn)(void);
  typedef const char* (*version_fn)(void);
  active_fn active = (active_fn)dlsym(RTLD_DEFAULT, "streampool_active");
  version_fn version = (version_fn)dlsym(RTLD_DEFAULT, "streampool_version");
  if (active == NULL || version == NULL) {
    puts("streampool: absent");
    return 0;
  }
  printf("streampool %s (header %s): %s\n", version(), STREAMPOOL_VERSION_STRING, active() ? "active" : "pass-through");
  return 0;
}
