#include "crawler/detail/placeholders.h"

namespace crawler::detail {

std::string expand_placeholders(std::string_view text,
                                const std::map<std::string, std::string, std::less<>>& values) {
  std::string expanded;
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "%%") == 0) {
      expanded += '%';
      i += 2;
    } else if (text.compare(i, 2, "%(") == 0) {
      auto close = text.find(')', i);
      if (close == std::string_view::npos || close + 1 == text.size() ||
          (text[close + 1] != 's' && text[close + 1] != 'd')) {
        throw placeholder_error(
            "\"%(\" at offset " + std::to_string(i) + " must be followed by a name and \")s\"", "");
      }
      auto name = text.substr(i + 2, close - i - 2);
      auto value = values.find(name);
      if (value == values.end()) {
        throw placeholder_error("no value for %(" + std::string(name) + ")s", std::string(name));
      }
      expanded += value->second;
      i = close + 2;
    } else {
      expanded += text[i++];
    }
  }
  return expanded;
}

}  // namespace crawler::detail
