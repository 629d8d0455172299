// Files the streampool command reads (traces, STREAMPOOL_STATS reports) and the preload writes
// (the same two). Both sides may be handed anything a path can name: a FIFO with no reader on the
// other end, /dev/zero, a directory, a file far larger than any report. Reading takes regular
// files only, up to a size limit, and never blocks on open; writing opens without blocking and
// keeps to regular files, so that a program under streampool never waits on its outputs.
#pragma once

#include <cstddef>
#include <string>

namespace streampool::trace {

// Reads all of `path` into *bytes. False with a one-line reason in *error ("<path>: not a
// regular file", "<path>: larger than ...", "<path>: <strerror>") otherwise.
bool read_regular_file(const std::string& path, std::size_t max_bytes, std::string* bytes, std::string* error);

// Opens `path` for writing (created, truncated; `append`: O_APPEND) without ever blocking, and
// only when it is (or becomes) a regular file. Returns the descriptor, or -1 with errno set
// (EINVAL: not a regular file) and *why a short reason ("not a regular file", or strerror's
// text). Never throws, never allocates.
int open_output_file(const char* path, bool append, const char** why) noexcept;

}  // namespace streampool::trace
