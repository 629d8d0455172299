// Which sanitizer this test program was built with, for the few tests a sanitizer's runtime cannot
// run (GCC names them __SANITIZE_*__, Clang through __has_feature):
//   STREAMPOOL_TEST_UNDER_TSAN  the thread build
//   STREAMPOOL_TEST_UNDER_ASAN  the address build (ASan, with UBSan beside it)
#pragma once

#if defined(__SANITIZE_THREAD__)
#define STREAMPOOL_TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STREAMPOOL_TEST_UNDER_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define STREAMPOOL_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STREAMPOOL_TEST_UNDER_ASAN 1
#endif
#endif
