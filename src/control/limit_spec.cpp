#include "limit_spec.hpp"

namespace streampool::control {

namespace {

// Six digits after the point: a share is kept in millionths, and a fraction times a unit (< 2^40)
// then fits in 64 bits.
constexpr int kMaxFractionDigits = 6;

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// A cursor over the text: every step checks the end first.
struct Cursor {
  std::string_view text;
  std::size_t at = 0;
  bool done() const noexcept { return at >= text.size(); }
  char peek() const noexcept { return done() ? '\0' : text[at]; }
};

// Multiplies with overflow detection.
bool mul(std::uint64_t a, std::uint64_t b, std::uint64_t* out) noexcept { return !__builtin_mul_overflow(a, b, out); }
bool add(std::uint64_t a, std::uint64_t b, std::uint64_t* out) noexcept { return !__builtin_add_overflow(a, b, out); }

// Whole part and up to kMaxFractionDigits of fraction (more digits are an error, not rounding).
struct Number {
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;  // the digits after the point, as an integer
  std::uint64_t scale = 1;     // 10^(digits after the point)
  bool has_point = false;
};

const char* read_number(Cursor& cursor, Number* number) noexcept {
  if (cursor.peek() == '-') return "negative values are not limits";
  if (cursor.peek() == '+') return "expected a number";
  std::size_t whole_digits = 0;
  while (is_digit(cursor.peek())) {
    if (!mul(number->whole, 10, &number->whole) ||
        !add(number->whole, static_cast<std::uint64_t>(cursor.peek() - '0'), &number->whole)) {
      return "the value does not fit in 64 bits";
    }
    ++cursor.at;
    ++whole_digits;
  }
  std::size_t fraction_digits = 0;
  if (cursor.peek() == '.') {
    number->has_point = true;
    ++cursor.at;
    while (is_digit(cursor.peek())) {
      if (++fraction_digits > kMaxFractionDigits) return "too many digits after the decimal point";
      number->fraction = number->fraction * 10 + static_cast<std::uint64_t>(cursor.peek() - '0');
      number->scale *= 10;
      ++cursor.at;
    }
  }
  if (whole_digits == 0 && fraction_digits == 0) return "expected a number";
  return nullptr;
}

// The unit after a number: 0 for none, else its multiplier in bytes. Returns false for an unknown one.
bool read_unit(Cursor& cursor, std::uint64_t* multiplier) noexcept {
  *multiplier = 0;
  int shift = 0;
  switch (lower(cursor.peek())) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    case 't': shift = 40; break;
    case 'b':
      ++cursor.at;
      *multiplier = 1;
      return true;
    default:
      return true;  // no unit
  }
  ++cursor.at;
  if (lower(cursor.peek()) == 'i') {
    ++cursor.at;
    if (lower(cursor.peek()) != 'b') return false;
  }
  if (lower(cursor.peek()) == 'b') ++cursor.at;
  *multiplier = std::uint64_t{1} << shift;
  return true;
}

// A value: a size with or without unit, a share (`0.3`) or a percentage (`30%`).
const char* read_value(Cursor& cursor, LimitValue* value) noexcept {
  Number number;
  if (const char* error = read_number(cursor, &number)) return error;
  if (cursor.peek() == '%') {
    ++cursor.at;
    // millionths = (whole + fraction/scale) * 10'000
    std::uint64_t millionths = 0;
    if (number.whole > 100 || !mul(number.whole, 10'000, &millionths)) return "a share is at most 100%";
    millionths += number.fraction * 10'000 / number.scale;
    if (millionths > kWholeShare) return "a share is at most 100%";
    if (millionths == 0) return "a limit of 0 leaves nothing to allocate";
    *value = {LimitValue::Kind::share, millionths};
    return nullptr;
  }
  std::uint64_t multiplier = 0;
  if (!read_unit(cursor, &multiplier)) return "unknown unit (expected K, M, G or T, alone or with B or iB)";
  if (multiplier == 0 && number.has_point) {
    if (number.whole > 1) return "a share is at most 1 (a size needs a unit: 1.5G)";
    const std::uint64_t millionths = number.whole * kWholeShare + number.fraction * kWholeShare / number.scale;
    if (millionths > kWholeShare) return "a share is at most 1 (a size needs a unit: 1.5G)";
    if (millionths == 0) return "a limit of 0 leaves nothing to allocate";
    *value = {LimitValue::Kind::share, millionths};
    return nullptr;
  }
  if (multiplier == 0) multiplier = 1;
  std::uint64_t bytes = 0;
  if (!mul(number.whole, multiplier, &bytes)) return "the value does not fit in 64 bits";
  // The fraction's bytes, rounded down (fraction < 10^6, multiplier <= 2^40: no overflow).
  if (!add(bytes, number.fraction * multiplier / number.scale, &bytes)) return "the value does not fit in 64 bits";
  if (bytes == 0) return "a limit of 0 leaves nothing to allocate";
  *value = {LimitValue::Kind::bytes, bytes};
  return nullptr;
}

const char* parse(std::string_view text, LimitSpec* spec) noexcept {
  if (text.empty()) return "empty";
  if (text.size() > kMaxText) return "longer than 1024 characters";
  Cursor cursor{text};
  // Per device when the text starts with digits and a colon.
  std::size_t probe = 0;
  while (probe < text.size() && is_digit(text[probe])) ++probe;
  if (probe > 0 && probe < text.size() && text[probe] == ':') {
    spec->per_device = true;
    while (true) {
      std::uint64_t device = 0;
      std::size_t digits = 0;
      while (is_digit(cursor.peek())) {
        device = device * 10 + static_cast<std::uint64_t>(cursor.peek() - '0');
        ++cursor.at;
        if (++digits > 3 || device >= kMaxDevices) return "a device index is at most 63";
      }
      if (digits == 0) return "expected a device index before ':' (0:40G,1:20G)";
      if (cursor.peek() != ':') return "expected ':' after a device index (0:40G,1:20G)";
      ++cursor.at;
      LimitValue& slot = spec->devices[device];
      if (slot.kind != LimitValue::Kind::none) return "a device is named twice";
      if (const char* error = read_value(cursor, &slot)) return error;
      if (cursor.done()) return nullptr;
      if (cursor.peek() != ',') return "unexpected characters after a value";
      ++cursor.at;
    }
  }
  if (const char* error = read_value(cursor, &spec->every)) return error;
  if (!cursor.done()) return "unexpected characters after the value";
  return nullptr;
}

}  // namespace

// Field by field: gcc 12 fails on assigning a value-initialised LimitSpec (an internal error).
void clear(LimitSpec* spec) noexcept {
  spec->per_device = false;
  spec->every = LimitValue{};
  for (LimitValue& value : spec->devices) value = LimitValue{};
}

const char* parse_limit(std::string_view text, LimitSpec* spec) noexcept {
  clear(spec);
  const char* error = parse(text, spec);
  if (error != nullptr) clear(spec);
  return error;
}

std::uint64_t resolve_limit(const LimitSpec& spec, int device, std::uint64_t device_total_bytes) noexcept {
  if (device < 0 || device >= kMaxDevices) return kNoLimit;
  const LimitValue& value = spec.per_device ? spec.devices[device] : spec.every;
  switch (value.kind) {
    case LimitValue::Kind::none:
      return kNoLimit;
    case LimitValue::Kind::bytes:
      return value.amount;
    case LimitValue::Kind::share: {
      // device_total * millionths / 10^6 without overflow: split the total.
      const std::uint64_t whole = device_total_bytes / kWholeShare * value.amount;
      const std::uint64_t rest = device_total_bytes % kWholeShare * value.amount / kWholeShare;
      const std::uint64_t bytes = whole + rest;
      return bytes == 0 ? 1 : bytes;
    }
  }
  return kNoLimit;
}

int first_device_missing(const LimitSpec& spec, int device_count) noexcept {
  if (!spec.per_device) return -1;
  for (int device = device_count < 0 ? 0 : device_count; device < kMaxDevices; ++device) {
    if (spec.devices[device].kind != LimitValue::Kind::none) return device;
  }
  return -1;
}

bool limits_anything(const LimitSpec& spec) noexcept {
  if (!spec.per_device) return spec.every.kind != LimitValue::Kind::none;
  for (const LimitValue& value : spec.devices) {
    if (value.kind != LimitValue::Kind::none) return true;
  }
  return false;
}

}  // namespace streampool::control
