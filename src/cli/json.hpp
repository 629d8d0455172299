// A small JSON reader for streampool's own reports (STREAMPOOL_STATS): objects, arrays, strings,
// numbers, true/false/null. Not a general-purpose parser: no \u escapes beyond ASCII.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace streampool::cli {

struct Json {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json& operator[](const std::string& name) const;  // a null value when absent
  double number_or(double fallback) const { return kind == Kind::number ? number : fallback; }
};

// Reports are a few KiB; a file beyond this is not one. Nesting is limited so that a hostile file
// (a long run of '[') cannot exhaust the stack: streampool's reports nest 3 levels deep.
inline constexpr std::size_t kMaxJsonBytes = std::size_t{64} << 20;
inline constexpr int kMaxJsonDepth = 64;

// False with a reason in *error ("<what> at offset N") when `text` is not JSON.
bool parse_json(const std::string& text, Json* out, std::string* error);

}  // namespace streampool::cli
