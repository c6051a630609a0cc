// HTML_PARSER=libxml2 builds its tree from libxml2's parse events; whatever the page, that tree
// must be the one a walk of libxml2's own DOM gives (tests/libxml2_tree_test.cpp has the rules).
// A difference aborts with both outlines.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "crawler/parse/detail/tree_builder.h"
#include "html_outline.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace detail = crawler::detail;
  std::string page(reinterpret_cast<const char*>(data), size);
  try {
    auto events = crawler::fixtures::html_outline(*detail::tree_builder::build(
        page, "text/html", {.max_bytes = 1 << 20, .max_depth = 512}, &detail::build_with_libxml2));
    auto dom = crawler::fixtures::html_outline(*detail::tree_builder::build(
        page, "text/html", {.max_bytes = 1 << 20, .max_depth = 512},
        &detail::build_with_libxml2_dom));
    if (events != dom) {
      std::fprintf(stderr, "libxml2's events and its DOM differ.\nevents:\n%s\nDOM:\n%s\n",
                   events.c_str(), dom.c_str());
      std::abort();
    }
  } catch (const crawler::page_too_complex&) {
  }
  return 0;
}
