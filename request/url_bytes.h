// The bytes of a URL as RFC 3986 escapes them: one home for the helpers that canonicalisation,
// robots.txt matching, link cleaning and the request format all need.
//
//   crawler::dedup::hex_value('b')                 -> 11 (-1 for a byte that is not a hex digit)
//   crawler::dedup::is_escape("%2F", 0)            -> true: '%' and two hex digits
//   crawler::dedup::append_escaped(out, ' ')       -> out += "%20" (upper-case digits, as RFC 3986
//                                                     recommends and w3lib writes)
//   crawler::dedup::url_scheme("HTTPS://a.example/") -> "https" ("" for "a.example/x" or "/x")
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace crawler::dedup {

/// The value of one hex digit, either case; -1 for any other byte.
constexpr int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Whether text[at] starts a percent-escape: '%' followed by two hex digits.
constexpr bool is_escape(std::string_view text, std::size_t at) {
  return at + 2 < text.size() && text[at] == '%' && hex_value(text[at + 1]) >= 0 &&
         hex_value(text[at + 2]) >= 0;
}

/// The byte an escape at text[at] stands for (is_escape(text, at) must hold).
constexpr unsigned char escaped_byte(std::string_view text, std::size_t at) {
  return static_cast<unsigned char>(hex_value(text[at + 1]) * 16 + hex_value(text[at + 2]));
}

/// Upper-case hex digits, as percent-escapes are written.
inline constexpr char hex_upper[] = "0123456789ABCDEF";

/// Appends "%XX" for `byte`.
inline void append_escaped(std::string& out, unsigned char byte) {
  out += '%';
  out += hex_upper[byte >> 4];
  out += hex_upper[byte & 15];
}

/// The scheme of `url`, lower-case, or "" when it has none ("example.org/a", "/a").
inline std::string url_scheme(std::string_view url) {
  // RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then ':'.
  std::size_t end = 0;
  for (; end < url.size(); ++end) {
    char c = url[end];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    bool other = (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
    if (!(letter || (end > 0 && other))) break;
  }
  if (end == 0 || end == url.size() || url[end] != ':') return {};
  std::string scheme(url.substr(0, end));
  for (auto& c : scheme) {
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  }
  return scheme;
}

}  // namespace crawler::dedup
