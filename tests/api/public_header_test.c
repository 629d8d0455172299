/* The public header from C (C99, every warning an error): a program linked against libstreampool.so
 * calls each function directly. Exits 0 when every check holds, else prints the first that failed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "streampool/streampool.h"

#define CHECK(condition)                                              \
  do {                                                                \
    if (!(condition)) {                                               \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #condition); \
      return 1;                                                       \
    }                                                                 \
  } while (0)

int main(void) {
  streampool_stats totals;
  char json[4096];
  int pools;

  CHECK(strcmp(streampool_version(), STREAMPOOL_VERSION_STRING) == 0);
  CHECK(streampool_active() == 1);

  memset(&totals, 0, sizeof totals);
  totals.struct_size = (uint32_t)sizeof totals;
  pools = streampool_get_stats(&totals, NULL, 0);
  CHECK(pools >= 0);
  CHECK(totals.pool_count == (uint32_t)pools);
  CHECK(totals.struct_size == sizeof totals);

  CHECK(streampool_stats_json(json, sizeof json) > 0);
  CHECK(strstr(json, "\"pools\":") != NULL);
  json[0] = 'x';
  CHECK(streampool_oom_report(json, sizeof json) == 0); /* no allocation failed: an empty report */
  CHECK(json[0] == '\0');

  CHECK(streampool_trace_stop() == ENOENT);
  CHECK(streampool_trace_flush() == ENOENT);
  CHECK(streampool_trace_start("") == EINVAL);
  puts("public header from C: ok");
  return 0;
}
