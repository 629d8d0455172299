/* Linked against libstreampool.so: calls the public interface directly. */
#include <stdio.h>
#include <string.h>

#include <streampool/streampool.h>

int main(void) {
  streampool_stats totals;
  memset(&totals, 0, sizeof totals);
  totals.struct_size = (uint32_t)sizeof totals;
  if (streampool_get_stats(&totals, NULL, 0) < 0) return 1;
  printf("linked: streampool %s, %u pools\n", streampool_version(), (unsigned)totals.pool_count);
  return strcmp(streampool_version(), STREAMPOOL_VERSION_STRING) == 0 ? 0 : 1;
}
