// Selectors over arbitrary HTML: the first line is a selector, the rest the page. Whatever the
// page (deep, malformed, any encoding), parsing, ::text, ::attr() and serialization finish.
#include <cstdint>
#include <string_view>

#include "crawler/parse/html.h"
#include "crawler/parse/selector.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto newline = input.find('\n');
  auto query = newline == std::string_view::npos ? std::string_view("*") : input.substr(0, newline);
  auto page = newline == std::string_view::npos ? input : input.substr(newline + 1);
  try {
    auto document = crawler::html_document::parse(page, "text/html",
                                                  {.max_bytes = 1 << 20, .max_depth = 512});
    for (auto fixed : {"*::text", "a::attr(href)", "title::text", "body *"}) {
      crawler::select(document, fixed).getall();
    }
    auto found = crawler::select(document, query);
    found.getall();
    found.css("*::text").getall();
  } catch (const crawler::selector_error&) {
  } catch (const crawler::page_too_complex&) {
  }
  return 0;
}
