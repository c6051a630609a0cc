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
      // Python's conversion after the name: a width (zero-padded when it starts with 0, as in
      // %(batch_id)05d), then s or d.
      auto conversion = close == std::string_view::npos
                            ? std::string_view::npos
                            : text.find_first_not_of("0123456789", close + 1);
      if (conversion == std::string_view::npos ||
          (text[conversion] != 's' && text[conversion] != 'd')) {
        throw placeholder_error(
            "\"%(\" at offset " + std::to_string(i) + " must be followed by a name and \")s\"", "");
      }
      auto name = text.substr(i + 2, close - i - 2);
      auto value = values.find(name);
      if (value == values.end()) {
        throw placeholder_error("no value for %(" + std::string(name) + ")s", std::string(name));
      }
      auto width_text = text.substr(close + 1, conversion - close - 1);
      if (width_text.size() > 2) {
        throw placeholder_error("the width of %(" + std::string(name) + ") is over 99", "");
      }
      std::size_t width = width_text.empty() ? 0 : std::stoul(std::string(width_text));
      if (value->second.size() < width) {
        expanded.append(width - value->second.size(), width_text.front() == '0' ? '0' : ' ');
      }
      expanded += value->second;
      i = conversion + 1;
    } else {
      expanded += text[i++];
    }
  }
  return expanded;
}

}  // namespace crawler::detail
