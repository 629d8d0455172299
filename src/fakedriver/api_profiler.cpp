// Entry points: the profiler's start and stop. No profiler attaches to the fake; both succeed, as they
// do on a driver with none attached.
#include "api_guard.hpp"
#include "driver.hpp"

using namespace fake;

FAKE_EXPORT CUresult cuProfilerStart() { FAKE_ENTRY(require_initialized()); }
FAKE_EXPORT CUresult cuProfilerStop() { FAKE_ENTRY(require_initialized()); }
