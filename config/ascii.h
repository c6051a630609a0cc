// ASCII text rules the parsers share. HTML, CSS, robots.txt and crawl files compare names without
// case and trim whitespace by ASCII rules, whatever the process's locale says.
#pragma once

#include <string>
#include <string_view>

namespace crawler {

constexpr char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = ascii_lower(c);
  return out;
}

/// HTML's ASCII whitespace: space, tab, line feed, form feed, carriage return.
constexpr bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

/// `text` without leading and trailing ASCII whitespace.
constexpr std::string_view trim_ascii_space(std::string_view text) {
  while (!text.empty() && is_ascii_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_ascii_space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace crawler
