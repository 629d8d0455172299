# Tests that LD_PRELOAD libstreampool.so into a sanitized program must preload the sanitizer's
# runtime before it: the runtime insists on coming first in the initial library list, and
# LD_PRELOAD puts libstreampool.so ahead of the program's own DT_NEEDED runtime.
# STREAMPOOL_SANITIZER_RUNTIME is that runtime's path ('' in a plain build).
set(STREAMPOOL_SANITIZER_RUNTIME "")
if(STREAMPOOL_SANITIZE STREQUAL "address" OR STREAMPOOL_SANITIZE STREQUAL "thread")
  string(SUBSTRING "${STREAMPOOL_SANITIZE}" 0 1 streampool_sanitizer_letter)  # libasan / libtsan
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${streampool_sanitizer_letter}san.so
                  OUTPUT_VARIABLE STREAMPOOL_SANITIZER_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${STREAMPOOL_SANITIZER_RUNTIME}" OR NOT EXISTS "${STREAMPOOL_SANITIZER_RUNTIME}")
    message(FATAL_ERROR "no sanitizer runtime lib${streampool_sanitizer_letter}san.so for ${CMAKE_CXX_COMPILER}")
  endif()
endif()

# STREAMPOOL_SANITIZE=address gives ASan+UBSan, =thread gives TSan, =fuzz gives ASan+UBSan with
# libFuzzer's coverage (clang only; tests/fuzz builds the harness); applied to every target.
if(STREAMPOOL_SANITIZE STREQUAL "fuzz")
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "STREAMPOOL_SANITIZE=fuzz needs clang (libFuzzer): CXX=clang++ CC=clang")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
elseif(STREAMPOOL_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(STREAMPOOL_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT STREAMPOOL_SANITIZE STREQUAL "")
  message(FATAL_ERROR "STREAMPOOL_SANITIZE must be '', 'address', 'thread' or 'fuzz'")
endif()
