#include "crawler/parse/href_scanner.h"

#include <cstring>

namespace crawler {
namespace {

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

bool starts_with_nocase(std::string_view text, std::size_t at, std::string_view word) {
  if (text.size() - at < word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (lower(text[at + i]) != word[i]) return false;
  }
  return true;
}

// The position after the end of a raw-text element (<script>, <style>) starting at `at`.
std::size_t skip_raw_text(std::string_view html, std::size_t at, std::string_view closing) {
  while (true) {
    auto found = html.find("</", at);
    if (found == std::string_view::npos) return html.size();
    if (starts_with_nocase(html, found + 2, closing)) return found;
    at = found + 2;
  }
}

void visit_decoded(std::string_view value, std::string& scratch,
                   const std::function<void(std::string_view)>& visit) {
  if (value.find('&') == std::string_view::npos) return visit(value);
  scratch.clear();
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '&' && value.substr(i, 5) == "&amp;") {
      scratch += '&';
      i += 4;
    } else if (value[i] == '&' && value.substr(i, 5) == "&#38;") {
      scratch += '&';
      i += 4;
    } else {
      scratch += value[i];
    }
  }
  visit(scratch);
}

}  // namespace

void for_each_href(std::string_view html, const std::function<void(std::string_view)>& visit) {
  std::string scratch;
  std::size_t at = 0;
  const std::size_t size = html.size();
  while (true) {
    const void* found = std::memchr(html.data() + at, '<', size - at);
    if (!found) return;
    at = static_cast<const char*>(found) - html.data() + 1;
    if (at >= size) return;
    if (html.compare(at, 3, "!--") == 0) {
      auto end = html.find("-->", at + 3);
      if (end == std::string_view::npos) return;
      at = end + 3;
      continue;
    }
    std::size_t name_end = at;
    while (name_end < size && !is_space(html[name_end]) && html[name_end] != '>' &&
           html[name_end] != '/') {
      ++name_end;
    }
    auto name_length = name_end - at;
    bool is_link = (name_length == 1 && lower(html[at]) == 'a') ||
                   (name_length == 4 && starts_with_nocase(html, at, "area"));
    if (!is_link) {
      if (name_length == 6 && starts_with_nocase(html, at, "script")) {
        at = skip_raw_text(html, name_end, "script");
      } else if (name_length == 5 && starts_with_nocase(html, at, "style")) {
        at = skip_raw_text(html, name_end, "style");
      }
      continue;
    }
    // Attributes of <a ...> up to '>': name[=value] pairs.
    at = name_end;
    while (at < size && html[at] != '>') {
      while (at < size && (is_space(html[at]) || html[at] == '/')) ++at;
      std::size_t attribute = at;
      while (at < size && !is_space(html[at]) && html[at] != '=' && html[at] != '>') ++at;
      bool is_href = at - attribute == 4 && starts_with_nocase(html, attribute, "href");
      while (at < size && is_space(html[at])) ++at;
      if (at >= size || html[at] != '=') continue;
      ++at;
      while (at < size && is_space(html[at])) ++at;
      if (at >= size) return;
      std::string_view value;
      if (html[at] == '"' || html[at] == '\'') {
        auto end = html.find(html[at], at + 1);
        if (end == std::string_view::npos) return;
        value = html.substr(at + 1, end - at - 1);
        at = end + 1;
      } else {
        std::size_t start = at;
        while (at < size && !is_space(html[at]) && html[at] != '>') ++at;
        value = html.substr(start, at - start);
      }
      if (is_href) visit_decoded(value, scratch, visit);
    }
  }
}

}  // namespace crawler
