// Sitemaps over arbitrary bytes, plain and as the body of a .xml.gz URL: read as a stream, any
// size and nesting.
#include <cstdint>

#include "crawler/parse/response.h"
#include "crawler/parse/sitemap.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  crawler::response sitemap;
  sitemap.body.assign(reinterpret_cast<const char*>(data), size);
  for (auto url : {"http://example.com/sitemap.xml", "http://example.com/sitemap.xml.gz"}) {
    sitemap.url = url;
    try {
      crawler::read_sitemap(sitemap, 1 << 20);
    } catch (const std::runtime_error&) {  // a .gz body that does not inflate
    }
  }
  return 0;
}
