#include "pickle.hpp"

namespace streampool::cli {

namespace {

// Protocol 2 opcodes (Python's Lib/pickletools.py documents each).
constexpr char kProto = '\x80';
constexpr char kStop = '.';
constexpr char kMark = '(';
constexpr char kEmptyDict = '}';
constexpr char kEmptyList = ']';
constexpr char kSetItems = 'u';
constexpr char kAppends = 'e';
constexpr char kBinUnicode = 'X';  // u32 length, UTF-8
constexpr char kBinInt1 = 'K';     // u8
constexpr char kBinInt2 = 'M';     // u16
constexpr char kBinInt = 'J';      // s32
constexpr char kLong1 = '\x8a';    // u8 length, two's complement little-endian
constexpr char kNewTrue = '\x88';
constexpr char kNewFalse = '\x89';
constexpr char kNone = 'N';

constexpr std::uint32_t kBatch = 1000;
constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

PickleWriter::PickleWriter(Sink sink, void* context) : sink_(sink), context_(context) {
  buffer_.push_back(kProto);
  buffer_.push_back('\x02');
}

void PickleWriter::before_item() {
  if (!open_.empty() && !open_.back().marked) {
    buffer_.push_back(kMark);
    open_.back().marked = true;
  }
}

void PickleWriter::after_item() {
  if (open_.empty()) return;
  Open& top = open_.back();
  ++top.pending;
  if (top.pending == (top.list ? kBatch : 2 * kBatch)) {
    buffer_.push_back(top.list ? kAppends : kSetItems);
    top.marked = false;
    top.pending = 0;
  }
  flush_if_full();
}

void PickleWriter::flush_if_full() {
  if (buffer_.size() < kFlushBytes) return;
  if (!sink_(context_, buffer_.data(), buffer_.size())) failed_ = true;
  buffer_.clear();
}

void PickleWriter::begin_dict() {
  before_item();
  buffer_.push_back(kEmptyDict);
  open_.push_back({false, false, 0});
}

void PickleWriter::begin_list() {
  before_item();
  buffer_.push_back(kEmptyList);
  open_.push_back({true, false, 0});
}

void PickleWriter::end() {
  if (open_.empty()) {
    failed_ = true;
    return;
  }
  const Open top = open_.back();
  open_.pop_back();
  if (top.marked) buffer_.push_back(top.list ? kAppends : kSetItems);
  after_item();
}

void PickleWriter::string(std::string_view text) {
  before_item();
  buffer_.push_back(kBinUnicode);
  put_le(buffer_, text.size(), 4);
  buffer_.append(text);
  after_item();
}

void PickleWriter::integer(std::int64_t value) {
  before_item();
  if (value >= 0 && value < 256) {
    buffer_.push_back(kBinInt1);
    put_le(buffer_, static_cast<std::uint64_t>(value), 1);
  } else if (value >= 0 && value < 65536) {
    buffer_.push_back(kBinInt2);
    put_le(buffer_, static_cast<std::uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    buffer_.push_back(kBinInt);
    put_le(buffer_, static_cast<std::uint64_t>(value), 4);
  } else {
    // The fewest bytes whose top bit is the sign: 5 to 8.
    int bytes = 5;
    while (bytes < 8) {
      const std::int64_t low = -(std::int64_t{1} << (8 * bytes - 1));
      const std::int64_t high = (std::int64_t{1} << (8 * bytes - 1)) - 1;
      if (value >= low && value <= high) break;
      ++bytes;
    }
    buffer_.push_back(kLong1);
    buffer_.push_back(static_cast<char>(bytes));
    put_le(buffer_, static_cast<std::uint64_t>(value), bytes);
  }
  after_item();
}

void PickleWriter::unsigned_integer(std::uint64_t value) {
  if (value <= static_cast<std::uint64_t>(INT64_MAX)) {
    integer(static_cast<std::int64_t>(value));
    return;
  }
  before_item();
  buffer_.push_back(kLong1);
  buffer_.push_back('\x09');  // eight bytes and a zero byte of sign
  put_le(buffer_, value, 8);
  buffer_.push_back('\0');
  after_item();
}

void PickleWriter::boolean(bool value) {
  before_item();
  buffer_.push_back(value ? kNewTrue : kNewFalse);
  after_item();
}

void PickleWriter::none() {
  before_item();
  buffer_.push_back(kNone);
  after_item();
}

bool PickleWriter::finish() {
  if (!open_.empty()) failed_ = true;
  buffer_.push_back(kStop);
  if (!sink_(context_, buffer_.data(), buffer_.size())) failed_ = true;
  buffer_.clear();
  return !failed_;
}

std::string pickle_to_string(void (*write)(PickleWriter&, void*), void* context) {
  std::string out;
  PickleWriter writer(
      [](void* target, const char* bytes, std::size_t size) {
        static_cast<std::string*>(target)->append(bytes, size);
        return true;
      },
      &out);
  write(writer, context);
  writer.finish();
  return out;
}

}  // namespace streampool::cli
