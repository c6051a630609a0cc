// The regexes users write (rules' allow/deny, crawl-file "re" fields, selector re()) run over what
// a site sends, so they run on RE2: time linear in the text, and a stack that does not grow with
// it (std::regex recursed per character: one 100 KB href crashed the crawler). RE2 refuses what
// it cannot run in linear time, lookaround and backreferences; the error says so.
//
//   auto pattern = crawler::compile_regex(R"(page-(\d+))");  // std::invalid_argument
//   crawler::regex_search(*pattern, url);                      // Python's re.search
//   crawler::for_each_match(*pattern, text, [](std::span<const std::string_view> groups) {
//     // groups[0]: the whole match; groups[1..]: its groups (empty when a group did not take part)
//     return true;  // false stops
//   });
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace crawler {

/// Compiles `pattern` (Perl/Python syntax as RE2 takes it, UTF-8). Throws std::invalid_argument:
/// `invalid regex "<pattern>": <RE2's reason>`, with a hint when lookaround or a backreference
/// is the cause.
std::shared_ptr<const re2::RE2> compile_regex(std::string_view pattern);

/// Whether `pattern` matches anywhere in `text`.
bool regex_search(const re2::RE2& pattern, std::string_view text);

/// The number of capturing groups.
int regex_groups(const re2::RE2& pattern);

/// Calls `on_match` for each non-overlapping match, left to right, as Python's re.finditer.
void for_each_match(const re2::RE2& pattern, std::string_view text,
                    const std::function<bool(std::span<const std::string_view> groups)>& on_match);

/// Appends what parsel's re() takes from `text`: each match whole when the pattern has no group,
/// else every group of every match, in order.
void append_regex_matches(const re2::RE2& pattern, std::string_view text,
                          std::vector<std::string>& out);

}  // namespace crawler
