// A small stand-in for the hooks and the tracking, for tests/tools/test_mutate.py: one of each
// shape the rules of tools/mutate.py look for. Self-contained, so that every mutant of it can be
// compiled on its own. if (commented < out) is not code.
// No standard header: each mutant compiles in milliseconds.
namespace lib {
using size_t = decltype(sizeof 0);
template <class T>
struct vector {
  T items[4];
  size_t used;
  size_t size() const { return used; }
  const T& operator[](size_t index) const { return items[index]; }
};
}  // namespace lib

enum CUresult { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1 };
int log_line(const char* format, int stream, int seen) { return format[0] + stream + seen; }
#define STREAMPOOL_LOG_DEBUG(...) log_line(__VA_ARGS__)

struct Ticket {
  lib::vector<int> clock;
};

struct Engine {
  Ticket ticket_for_stream(int stream) { return Ticket{{{stream, 0, 0, 0}, 1}}; }
  void commit(const Ticket& ticket) { last = static_cast<int>(ticket.clock.size()); }
  void stream_ended(int stream) { last = stream; }
  int last = 0;
};

Engine& engine() {
  static Engine instance;
  return instance;
}

struct Table {
  CUresult (*cuStreamSynchronize)(int);
};

CUresult forward(CUresult (*entry)(int), int stream) { return entry == nullptr ? CUDA_ERROR_INVALID_VALUE : entry(stream); }

CUresult synchronize(const Table& table, int stream) {
  Ticket ticket = engine().ticket_for_stream(stream);
  CUresult result = forward(table.cuStreamSynchronize, stream);
  if (result != CUDA_SUCCESS) return result;
  engine().commit(ticket);
  return result;
}

int count_below(const lib::vector<int>& values, int limit) {
  int count = 0;
  for (lib::size_t i = 0; i < values.size(); ++i) {
    if (values[i] < limit && values[i] >= 0) ++count;
  }
  const char* text = "a < b && c";  // a string: not code
  (void)text;
  return static_cast<int>(count) == 0 ? -1 : count;
}

void end_stream(int stream, bool seen) {
  try {
    engine().stream_ended(stream);
  } catch (...) {
    if (seen) engine().stream_ended(stream + 1);  // a fallback: not mutated
  }
  STREAMPOOL_LOG_DEBUG("ended %d (%d)\n", stream, seen ? 1 : 0);
  while (engine().last > stream) --engine().last;
  const bool same = engine().last == stream;
  (void)same;
}

int main() { return count_below(lib::vector<int>{{1, 2, 3, 0}, 3}, 2) == 1 ? 0 : 1; }
