// HTML_MAX_DEPTH's first, cheap check: every level of nesting opens with a '<', so a page with no
// more of them than the budget is within it, and most pages never need estimate_nesting_depth.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace crawler::detail {

/// How many bytes of `markup` are '<'. Eight bytes at a time: this runs on every page parsed.
inline std::size_t count_tag_openings(std::string_view markup) {
  constexpr std::uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL, opening = 0x3c3c3c3c3c3c3c3cULL;
  std::size_t count = 0, at = 0;
  for (; at + 8 <= markup.size(); at += 8) {
    std::uint64_t word;
    std::memcpy(&word, markup.data() + at, 8);
    word ^= opening;  // a '<' is now a zero byte
    // The high bit of each byte that is zero, and of no other (no carry crosses bytes).
    auto zero = ~(((word & low7) + low7) | word | low7);
    count += std::size_t(std::popcount(zero));
  }
  for (; at < markup.size(); ++at) count += markup[at] == '<';
  return count;
}

}  // namespace crawler::detail
