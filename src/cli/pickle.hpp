// Writing Python's pickle format (protocol 2) without Python: the few opcodes that dictionaries,
// lists, strings, integers, booleans and None need, for `streampool export --format
// torch-snapshot`. The output is what pickle.load reads, and only the opcodes PyTorch's memory
// viewer (its own unpickler, in JavaScript) reads too. Items are written as they come: a container
// is opened, filled and closed, and long containers are emitted in batches of 1000 items (as
// Python's pickler does), so that no reader has to take one huge batch at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace streampool::cli {

class PickleWriter {
 public:
  // `sink` receives the bytes whenever the buffer holds about a MiB, and at finish().
  using Sink = bool (*)(void* context, const char* bytes, std::size_t size);
  PickleWriter(Sink sink, void* context);

  void begin_dict();
  void begin_list();
  void end();  // closes the innermost container
  // A dictionary's entries are written as key(), then the value.
  void key(std::string_view name) { string(name); }
  void string(std::string_view text);
  void integer(std::int64_t value);
  void unsigned_integer(std::uint64_t value);
  void boolean(bool value);
  void none();
  // Writes STOP and hands the rest to the sink; false when the sink refused some bytes or a
  // container is still open.
  bool finish();

 private:
  struct Open {
    bool list = false;
    bool marked = false;       // a MARK was written for the current batch
    std::uint32_t pending = 0;  // items written since it (a dictionary counts keys and values)
  };
  void before_item();
  void after_item();
  void flush_if_full();

  Sink sink_;
  void* context_;
  bool failed_ = false;
  std::string buffer_;
  std::vector<Open> open_;
};

// Into a string, for tests and small outputs.
std::string pickle_to_string(void (*write)(PickleWriter&, void*), void* context);

}  // namespace streampool::cli
