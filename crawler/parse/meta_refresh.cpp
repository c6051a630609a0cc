#include "crawler/parse/meta_refresh.h"

#include <re2/re2.h>

#include <cstdlib>

#include "config/ascii.h"
#include "crawler/parse/detail/entities.h"
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

// Whether `text` holds `word` (lower-case ASCII) in any case.
// Whether "http-equiv" is written in `text`, in any case. Every page is asked: found from its '-'
// (memchr), not tried at every byte.
bool mentions_http_equiv(std::string_view text) {
  constexpr std::string_view word = "http-equiv";
  for (auto dash = text.find('-', 4); dash != std::string_view::npos;
       dash = text.find('-', dash + 1)) {
    if (dash + 6 > text.size()) break;
    auto candidate = text.substr(dash - 4, word.size());
    bool same = true;
    for (std::size_t i = 0; same && i < word.size(); ++i)
      same = ascii_lower(candidate[i]) == word[i];
    if (same) return true;
  }
  return false;
}

}  // namespace

std::optional<meta_refresh> find_meta_refresh(std::string_view html, std::string_view page_url,
                                              const std::vector<std::string>& ignore_tags) {
  html = html.substr(0, 4096);
  // Every page is asked and few have one: without "http-equiv" written out there is none (w3lib
  // would also find one spelled with entities, "http&#45;equiv", which no browser follows).
  if (!mentions_http_equiv(html)) return std::nullopt;
  std::string text(html);
  for (const auto& tag : ignore_tags) {
    std::string name = ascii_lower(tag);
    std::string quoted = RE2::QuoteMeta(name);
    RE2 element("(?is)<" + quoted + "\\b.*?</" + quoted + ">");
    if (element.ok()) RE2::GlobalReplace(&text, element, "");
  }
  text = detail::decode_entities(text);
  RE2::GlobalReplace(&text, comment(), "");

  std::string delay[2], url[2];
  bool found =
      RE2::PartialMatch(text, equiv_then_content(), &delay[0], &url[0], &delay[1], &url[1]) ||
      RE2::PartialMatch(text, content_then_equiv(), &delay[0], &url[0], &delay[1], &url[1]);
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
