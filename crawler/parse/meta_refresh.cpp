#include "crawler/parse/meta_refresh.h"

#include <re2/re2.h>

#include <cstdlib>

#include "crawler/parse/ascii.h"
#include "crawler/parse/response.h"

namespace crawler {
namespace {

// w3lib's two patterns, http-equiv before content and after it. Its (?P=quote) backreference is
// not RE2's to take, so each quote has its own alternative: groups 1-2 for "...", 3-4 for '...'.
const RE2& equiv_then_content() {
  static const RE2 pattern(
      R"((?is)<meta\s[^>]*http-equiv[^>]*refresh[^>]*content\s*=\s*)"
      R"re((?:"((?:\d*\.)?\d+)\s*;\s*url=\s*([^"]*)"|'((?:\d*\.)?\d+)\s*;\s*url=\s*([^']*)'))re");
  return pattern;
}

const RE2& content_then_equiv() {
  static const RE2 pattern(
      R"((?is)<meta\s[^>]*content\s*=\s*)"
      R"re((?:"((?:\d*\.)?\d+)\s*;\s*url=\s*([^"]*)"|'((?:\d*\.)?\d+)\s*;\s*url=\s*([^']*)'))re"
      R"([^>]*?\shttp-equiv\s*=[^>]*refresh)");
  return pattern;
}

const RE2& comment() {
  static const RE2 pattern(R"((?s)<!--.*?(?:-->|$))");
  return pattern;
}

// The entities a URL in an attribute carries: the five XML ones and numeric references.
std::string decode_entities(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    auto end = text.find(';', i);
    if (end == std::string_view::npos || end - i > 10) {
      out += '&';
      continue;
    }
    auto name = text.substr(i + 1, end - i - 1);
    long code = -1;
    if (name == "amp") code = '&';
    else if (name == "lt") code = '<';
    else if (name == "gt") code = '>';
    else if (name == "quot") code = '"';
    else if (name == "apos") code = '\'';
    else if (name.size() > 1 && name[0] == '#') {
      bool hex = name[1] == 'x' || name[1] == 'X';
      std::string digits(name.substr(hex ? 2 : 1));
      char* stop = nullptr;
      code = digits.empty() ? -1 : std::strtol(digits.c_str(), &stop, hex ? 16 : 10);
      if (stop && *stop) code = -1;
    }
    if (code < 0 || code > 0x7f) {  // leave the rest as written; a URL escapes them anyway
      out += '&';
      continue;
    }
    out += char(code);
    i = end;
  }
  return out;
}

}  // namespace

std::optional<meta_refresh> find_meta_refresh(std::string_view html, std::string_view page_url,
                                              const std::vector<std::string>& ignore_tags) {
  std::string text(html.substr(0, 4096));
  for (const auto& tag : ignore_tags) {
    std::string name = ascii_lower(tag);
    std::string quoted = RE2::QuoteMeta(name);
    RE2 element("(?is)<" + quoted + "\\b.*?</" + quoted + ">");
    if (element.ok()) RE2::GlobalReplace(&text, element, "");
  }
  text = decode_entities(text);
  RE2::GlobalReplace(&text, comment(), "");

  std::string delay[2], url[2];
  bool found = RE2::PartialMatch(text, equiv_then_content(), &delay[0], &url[0], &delay[1],
                                 &url[1]) ||
               RE2::PartialMatch(text, content_then_equiv(), &delay[0], &url[0], &delay[1],
                                 &url[1]);
  if (!found) return std::nullopt;
  int which = delay[0].empty() ? 1 : 0;
  std::string_view link = url[which];
  while (!link.empty() && std::string_view(" \"'").find(link.front()) != std::string_view::npos) {
    link.remove_prefix(1);
  }
  while (!link.empty() && std::string_view(" \"'").find(link.back()) != std::string_view::npos) {
    link.remove_suffix(1);
  }
  try {
    return meta_refresh{std::strtod(delay[which].c_str(), nullptr), urljoin(page_url, link)};
  } catch (const link_error&) {
    return std::nullopt;
  }
}

}  // namespace crawler
