// The default LinkExtractor over an arbitrary page: every link it returns has one of the schemes
// Scrapy's LinkExtractor keeps (http, https, file, ftp). Whether a link may be fetched from the
// page it is on (never file: from an http page) is the downloader's gate, tested in tests/.
// (Not always an authority: href="http:/x" resolves to "http:/x" by RFC 3986, where Python's
// urljoin, and so Scrapy, gives http://<base host>/x. Left for the Scrapy-compatibility work.)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "crawler/parse/link_extractor.h"
#include "crawler/parse/response.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  crawler::response page;
  page.url = "http://example.com/dir/page.html";
  page.headers = {{"Content-Type", "text/html"}};
  page.body.assign(reinterpret_cast<const char*>(data), size);
  page.parse_limits = {.max_bytes = 1 << 20, .max_depth = 512};
  try {
    static const crawler::link_extractor extractor;
    for (const auto& link : extractor.extract_links(page)) {
      auto scheme = std::string_view(link.url).substr(0, link.url.find(':'));
      if (scheme != "http" && scheme != "https" && scheme != "file" && scheme != "ftp") {
        std::fprintf(stderr, "link outside http, https, file and ftp: %s\n", link.url.c_str());
        std::abort();
      }
    }
  } catch (const crawler::page_too_complex&) {
  }
  return 0;
}
