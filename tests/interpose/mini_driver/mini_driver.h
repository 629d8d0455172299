/* The interposer tests' mini driver: shared declarations of the hand-written and generated halves. */
#ifndef STREAMPOOL_TESTS_MINI_DRIVER_H
#define STREAMPOOL_TESTS_MINI_DRIVER_H

#define MINI_EXPORT __attribute__((visibility("default")))

typedef void (*mini_function)(void); /* matches any function type in casts */
struct mini_entry {
  const char* name;
  mini_function function;
};
/* Every cu* name the mini exports, sorted, NULL-terminated. */
extern const struct mini_entry mini_entries[];

/* What the last cuLaunchKernel / cuTexRefSetMipmapLevelClamp call received (tests read it). */
struct mini_launch_record {
  void* function;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  void* stream;
  void** params;
  void** extra;
};
struct mini_clamp_record {
  void* texref;
  float min_clamp;
  float max_clamp;
};

#endif
