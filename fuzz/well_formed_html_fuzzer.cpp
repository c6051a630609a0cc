// HTML_PARSER=gumbo builds well-formed pages without Gumbo (detail/well_formed_html.cpp): for every
// page it takes, its tree must be the one Gumbo builds (tests/well_formed_html_test.cpp has the
// rules). A difference aborts with both outlines.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "crawler/parse/detail/tree_builder.h"
#include "html_outline.h"

namespace {

namespace detail = crawler::detail;

// The fast path alone: a page it gives up on is left with no node at all.
void well_formed_only(const std::string& utf8, detail::tree_builder& builder) {
  if (!detail::build_well_formed_html(utf8, builder)) builder.restart();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string page(reinterpret_cast<const char*>(data), size);
  constexpr crawler::html_limits limits{.max_bytes = 1 << 20, .max_depth = 512};
  try {
    auto fast = detail::tree_builder::build(page, "text/html", limits, &well_formed_only);
    if (!fast->root()->first_child) return 0;  // left to Gumbo
    auto gumbo =
        detail::tree_builder::build(page, "text/html", limits, &detail::build_with_gumbo_only);
    auto fast_outline = crawler::fixtures::html_outline(*fast);
    auto gumbo_outline = crawler::fixtures::html_outline(*gumbo);
    if (fast_outline != gumbo_outline) {
      std::fprintf(stderr, "The well-formed path and Gumbo differ.\nfast path:\n%s\nGumbo:\n%s\n",
                   fast_outline.c_str(), gumbo_outline.c_str());
      std::abort();
    }
  } catch (const crawler::page_too_complex&) {
  }
  return 0;
}
