// JSON string text for every report streampool writes (the out-of-memory report, the leak report,
// the stats report): one escaping, so that a path or symbol name with a quote or a control
// character reads back the same from each.
#pragma once

#include <string>
#include <string_view>

namespace streampool::insight {

// `text` with quotes and backslashes escaped and control characters as \u00XX, without quotes.
void append_json_escaped(std::string& out, std::string_view text);

// `text` as a JSON string, quotes included.
inline void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  append_json_escaped(out, text);
  out += '"';
}

}  // namespace streampool::insight
