// Its presence tells tests and the conformance suite they run under streampool:
// dlsym(RTLD_DEFAULT, "streampool_version") != nullptr.
#include "export.hpp"

#ifndef STREAMPOOL_VERSION_STRING
#error "STREAMPOOL_VERSION_STRING must be defined by the build"
#endif

STREAMPOOL_EXPORT const char* streampool_version(void) { return STREAMPOOL_VERSION_STRING; }
