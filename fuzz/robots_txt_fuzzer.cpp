// robots.txt over arbitrary bytes: parsing and matching finish; /robots.txt is always allowed.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "crawler/parse/robots_txt.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  crawler::robots_txt robots(std::string_view(reinterpret_cast<const char*>(data), size));
  for (auto agent : {"mybot/1.0", "*", "Googlebot"}) {
    robots.allowed("http://example.com/private/x?q=%2F", agent);
    robots.allowed("/a%62c/d$", agent);
    robots.crawl_delay(agent);
    if (!robots.allowed("http://example.com/robots.txt", agent)) std::abort();
  }
  robots.sitemaps();
  return 0;
}
