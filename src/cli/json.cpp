#include "json.hpp"

#include <cctype>
#include <cstdlib>

namespace streampool::cli {

const Json& Json::operator[](const std::string& name) const {
  static const Json kNull;
  auto found = fields.find(name);
  return found == fields.end() ? kNull : found->second;
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  bool value(Json* out) {
    skip();
    if (at_ >= text_.size()) return fail("unexpected end");
    const char c = text_[at_];
    if (c == '{' || c == '[') {
      if (depth_ == kMaxJsonDepth) return fail("nested more than 64 levels deep");
      ++depth_;
      const bool parsed = c == '{' ? object(out) : array(out);
      --depth_;
      return parsed;
    }
    if (c == '"') {
      out->kind = Json::Kind::string;
      return string(&out->text);
    }
    if (literal("true")) {
      out->kind = Json::Kind::boolean;
      out->boolean = true;
      return true;
    }
    if (literal("false")) {
      out->kind = Json::Kind::boolean;
      return true;
    }
    if (literal("null")) return true;
    char* end = nullptr;
    out->number = std::strtod(text_.c_str() + at_, &end);
    if (end == text_.c_str() + at_) return fail("unexpected character");
    out->kind = Json::Kind::number;
    at_ = static_cast<std::size_t>(end - text_.c_str());
    return true;
  }

  bool done() {
    skip();
    return at_ == text_.size();
  }
  std::string error;

 private:
  bool fail(const char* why) {
    error = std::string(why) + " at offset " + std::to_string(at_);
    return false;
  }
  void skip() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (text_.compare(at_, w.size(), w) != 0) return false;
    at_ += w.size();
    return true;
  }
  bool string(std::string* out) {
    ++at_;  // the opening quote
    while (at_ < text_.size() && text_[at_] != '"') {
      char c = text_[at_++];
      if (c == '\\' && at_ < text_.size()) {
        c = text_[at_++];
        if (c == 'n') c = '\n';
        if (c == 't') c = '\t';
        if (c == 'u' && at_ + 4 <= text_.size()) {
          c = static_cast<char>(std::strtol(text_.substr(at_, 4).c_str(), nullptr, 16));
          at_ += 4;
        }
      }
      *out += c;
    }
    if (at_ >= text_.size()) return fail("unterminated string");
    ++at_;
    return true;
  }
  bool array(Json* out) {
    out->kind = Json::Kind::array;
    ++at_;
    skip();
    if (at_ < text_.size() && text_[at_] == ']') {
      ++at_;
      return true;
    }
    while (true) {
      Json item;
      if (!value(&item)) return false;
      out->items.push_back(std::move(item));
      skip();
      if (at_ < text_.size() && text_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < text_.size() && text_[at_] == ']') {
        ++at_;
        return true;
      }
      return fail("expected , or ]");
    }
  }
  bool object(Json* out) {
    out->kind = Json::Kind::object;
    ++at_;
    skip();
    if (at_ < text_.size() && text_[at_] == '}') {
      ++at_;
      return true;
    }
    while (true) {
      skip();
      if (at_ >= text_.size() || text_[at_] != '"') return fail("expected a name");
      std::string name;
      if (!string(&name)) return false;
      skip();
      if (at_ >= text_.size() || text_[at_] != ':') return fail("expected :");
      ++at_;
      Json item;
      if (!value(&item)) return false;
      out->fields[name] = std::move(item);
      skip();
      if (at_ < text_.size() && text_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < text_.size() && text_[at_] == '}') {
        ++at_;
        return true;
      }
      return fail("expected , or }");
    }
  }

  const std::string& text_;
  std::size_t at_ = 0;
  int depth_ = 0;
};

}  // namespace

bool parse_json(const std::string& text, Json* out, std::string* error) {
  Parser parser(text);
  *out = Json{};
  if (!parser.value(out) || !parser.done()) {
    *error = parser.error.empty() ? "trailing characters" : parser.error;
    return false;
  }
  return true;
}

}  // namespace streampool::cli
