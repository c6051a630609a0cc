#include "crawler/parse/regex.h"

#include <re2/re2.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace crawler {

std::shared_ptr<const re2::RE2> compile_regex(std::string_view pattern) {
  re2::RE2::Options options;
  options.set_log_errors(false);  // the error goes into the exception, not to stderr
  auto compiled =
      std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!compiled->ok()) {
    std::string reason = compiled->error();
    if (compiled->error_code() == re2::RE2::ErrorBadPerlOp ||
        compiled->error_code() == re2::RE2::ErrorBadEscape) {
      reason +=
          " (lookahead, lookbehind and backreferences are not supported: regexes run in "
          "time linear in the text)";
    }
    throw std::invalid_argument("invalid regex \"" + std::string(pattern) + "\": " + reason);
  }
  return compiled;
}

bool regex_search(const re2::RE2& pattern, std::string_view text) {
  return re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), pattern);
}

int regex_groups(const re2::RE2& pattern) {
  return pattern.NumberOfCapturingGroups();
}

void for_each_match(const re2::RE2& pattern, std::string_view text,
                    const std::function<bool(std::span<const std::string_view> groups)>& on_match) {
  re2::StringPiece input(text.data(), text.size());
  std::vector<re2::StringPiece> pieces(std::size_t(pattern.NumberOfCapturingGroups()) + 1);
  std::vector<std::string_view> groups(pieces.size());
  std::size_t at = 0;
  while (at <= text.size() && pattern.Match(input, at, text.size(), re2::RE2::UNANCHORED,
                                            pieces.data(), int(pieces.size()))) {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      groups[i] = pieces[i].data() ? std::string_view(pieces[i].data(), pieces[i].size())
                                   : std::string_view();
    }
    if (!on_match(groups)) return;
    at = std::size_t(pieces[0].data() - text.data()) + pieces[0].size();
    if (pieces[0].empty()) {
      // An empty match: the next search starts one character on (all of its UTF-8 bytes), as
      // Python's does.
      ++at;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
    }
  }
}

void append_regex_matches(const re2::RE2& pattern, std::string_view text,
                          std::vector<std::string>& out) {
  for_each_match(pattern, text, [&out](std::span<const std::string_view> groups) {
    if (groups.size() == 1) {
      out.emplace_back(groups[0]);
    } else {
      for (auto group : groups.subspan(1)) out.emplace_back(group);
    }
    return true;
  });
}

}  // namespace crawler
