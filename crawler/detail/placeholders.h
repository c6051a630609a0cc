// Python's %-named placeholders, as Scrapy's feed URIs and spider arguments use them:
// "out/%(name)s-%(time)s.jsonl", "%(start)s". "%%" is a literal "%".
#pragma once

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace crawler::detail {

/// Why `text` could not be expanded: a "%(" not closed by ")s" (`name` empty), or a name with no
/// value (`name` says which).
class placeholder_error : public std::invalid_argument {
 public:
  placeholder_error(const std::string& what, std::string name)
      : std::invalid_argument(what), name(std::move(name)) {}
  std::string name;
};

/// `text` with each %(NAME)s (or %(NAME)d) replaced by values[NAME]. Throws placeholder_error.
std::string expand_placeholders(std::string_view text,
                                const std::map<std::string, std::string, std::less<>>& values);

}  // namespace crawler::detail
