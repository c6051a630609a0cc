#include "crawler/cli/detail/lines.h"

#include <string>
#include <vector>

namespace crawler::cli::detail {

bool for_each_line(std::FILE* file,
                   const std::function<void(std::string_view, std::size_t)>& line) {
  std::vector<char> block(1 << 16);
  std::string partial;  // a line that straddles two blocks
  std::size_t number = 0;
  while (std::size_t got = std::fread(block.data(), 1, block.size(), file)) {
    std::string_view text(block.data(), got);
    for (auto end = text.find('\n'); end != std::string_view::npos; end = text.find('\n')) {
      ++number;
      if (partial.empty()) {
        line(text.substr(0, end), number);
      } else {
        partial.append(text.substr(0, end));
        line(std::string_view(partial), number);
        partial.clear();
      }
      text.remove_prefix(end + 1);
    }
    partial.append(text);
  }
  if (!partial.empty()) line(std::string_view(partial), ++number);
  return !std::ferror(file);
}

}  // namespace crawler::cli::detail
