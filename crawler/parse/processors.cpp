#include "crawler/parse/processors.h"

#include <re2/re2.h>

#include <array>
#include <utility>

namespace crawler::processors {

namespace {

// The values of a list, or the one value a processor was given that is not a list (as itemloaders'
// arg_to_iter: null is none).
value as_list(const value& values) {
  if (values.is_array()) return values;
  value list = value::array();
  if (!values.is_null()) list.push_back(values);
  return list;
}

// Python's str.isspace() for one code point: the characters str.strip() removes.
bool is_python_space(char32_t c) {
  static constexpr std::array<char32_t, 14> unicode = {0x85,   0xA0,   0x1680, 0x2028, 0x2029,
                                                       0x202F, 0x205F, 0x3000, 0x1C,   0x1D,
                                                       0x1E,   0x1F,   0x0B,   0x0C};
  if (c == ' ' || (c >= '\t' && c <= '\r')) return true;
  if (c >= 0x2000 && c <= 0x200A) return true;
  for (auto space : unicode) {
    if (c == space) return true;
  }
  return false;
}

// The code point that starts at `at` and how many bytes it takes; {0, 1} for a byte that starts
// none (it is then kept, never stripped).
std::pair<char32_t, std::size_t> code_point_at(std::string_view text, std::size_t at) {
  auto byte = static_cast<unsigned char>(text[at]);
  std::size_t length = byte < 0x80 ? 1 : (byte >> 5) == 6 ? 2 : (byte >> 4) == 14 ? 3 : 0;
  if (length == 0 || at + length > text.size()) return {byte < 0x80 ? byte : 0, 1};
  if (length == 1) return {byte, 1};
  char32_t c = byte & (length == 2 ? 0x1F : 0x0F);
  for (std::size_t i = 1; i < length; ++i) {
    auto next = static_cast<unsigned char>(text[at + i]);
    if ((next >> 6) != 2) return {0, 1};
    c = (c << 6) | (next & 0x3F);
  }
  return {c, length};
}

// Where the text's trailing Python whitespace starts.
std::size_t trailing_space_start(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) >> 6) == 2 && end - start < 3) {
      --start;
    }
    auto [c, length] = code_point_at(text, start);
    if (start + length != end || !is_python_space(c)) break;
    end = start;
  }
  return end;
}

std::string text_of(const value& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

processor identity() {
  return [](const value& values) { return as_list(values); };
}

processor take_first() {
  return [](const value& values) -> value {
    for (const auto& v : as_list(values)) {
      if (!v.is_null() && v != "") return v;
    }
    return nullptr;
  };
}

processor join(std::string separator) {
  return [separator = std::move(separator)](const value& values) -> value {
    std::string joined;
    bool first = true;
    for (const auto& v : as_list(values)) {
      if (!first) joined += separator;
      joined += text_of(v);
      first = false;
    }
    return joined;
  };
}

processor map_compose(std::vector<value_function> functions) {
  return [functions = std::move(functions)](const value& values) {
    value current = as_list(values);
    for (const auto& function : functions) {
      value next = value::array();
      for (const auto& v : current) {
        for (auto& produced : as_list(function(v))) next.push_back(std::move(produced));
      }
      current = std::move(next);
    }
    return current;
  };
}

processor compose(std::vector<processor> functions) {
  return [functions = std::move(functions)](const value& values) {
    value current = values;
    for (const auto& function : functions) {
      if (current.is_null()) break;
      current = function(current);
    }
    return current;
  };
}

value strip(const value& text) {
  if (!text.is_string()) return text;
  std::string_view s = text.get_ref<const std::string&>();
  std::size_t begin = 0;
  while (begin < s.size()) {
    auto [c, length] = code_point_at(s, begin);
    if (!is_python_space(c)) break;
    begin += length;
  }
  s.remove_prefix(begin);
  return std::string(s.substr(0, trailing_space_start(s)));
}

value remove_tags(const value& text) {
  if (!text.is_string()) return text;
  // w3lib's pattern, with re.DOTALL: a tag's name is anything up to a space, ">" or "/".
  static const re2::RE2 tag("(?s)</?[^ >/]+.*?>");
  std::string out = text.get<std::string>();
  re2::RE2::GlobalReplace(&out, tag, "");
  return out;
}

value replace_escape_chars(const value& text) {
  if (!text.is_string()) return text;
  std::string out;
  for (char c : text.get_ref<const std::string&>()) {
    if (c != '\n' && c != '\t' && c != '\r') out += c;
  }
  return out;
}

std::optional<value_function> value_function_named(std::string_view name) {
  if (name == "strip") return value_function(strip);
  if (name == "remove_tags") return value_function(remove_tags);
  if (name == "replace_escape_chars") return value_function(replace_escape_chars);
  return std::nullopt;
}

std::vector<std::string_view> value_function_names() {
  return {"strip", "remove_tags", "replace_escape_chars"};
}

}  // namespace crawler::processors
