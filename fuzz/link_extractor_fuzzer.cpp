// The default LinkExtractor over an arbitrary page: every link it returns has an http(s) scheme.
// (Not always an authority: href="http:/x" resolves to "http:/x" by RFC 3986, where Python's
// urljoin, and so Scrapy, gives http://<base host>/x. Left for the Scrapy-compatibility work.)
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "crawler/link_extractor.h"
#include "crawler/response.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  crawler::response page;
  page.url = "http://example.com/dir/page.html";
  page.headers = {{"Content-Type", "text/html"}};
  page.body.assign(reinterpret_cast<const char*>(data), size);
  page.parse_limits = {.max_bytes = 1 << 20, .max_depth = 512};
  try {
    static const crawler::link_extractor extractor;
    for (const auto& link : extractor.extract_links(page)) {
      if (!link.url.starts_with("http:") && !link.url.starts_with("https:")) {
        std::fprintf(stderr, "link outside http(s): %s\n", link.url.c_str());
        std::abort();
      }
    }
  } catch (const crawler::page_too_complex&) {
  }
  return 0;
}
