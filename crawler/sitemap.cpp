#include "crawler/sitemap.h"

#include <zlib.h>

#include "config/log.h"
#include "crawler/detail/text.h"
#include "crawler/robots_txt.h"

namespace crawler {
namespace {

std::string gunzip(std::string_view data, std::size_t max_size) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 32) != Z_OK) return {};
  std::string out;
  char buffer[16384];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  int status = Z_OK;
  while (status == Z_OK && out.size() < max_size) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
    if (status == Z_BUF_ERROR && stream.avail_in == 0) break;
  }
  inflateEnd(&stream);
  if (out.size() > max_size) out.resize(max_size);
  return out;
}

}  // namespace

sitemap read_sitemap(const response& page, std::size_t max_size) {
  sitemap result;
  if (std::string_view(page.url).ends_with("/robots.txt")) {
    robots_txt robots{page.body};
    for (const auto& url : robots.sitemaps()) {
      try {
        result.sitemaps.push_back(page.urljoin(url));
      } catch (const link_error& error) {
        get_logger("sitemap")->warn("Skipped a Sitemap line of {}: {}", page.url, error.what());
      }
    }
    return result;
  }
  bool gzipped = page.body.size() >= 2 && static_cast<unsigned char>(page.body[0]) == 0x1f &&
                 static_cast<unsigned char>(page.body[1]) == 0x8b;
  // The HTML parser reads sitemap XML well enough: unknown elements keep their names. A plain
  // sitemap reuses the response's parse; a gzip one is parsed once inflated.
  auto document =
      gzipped ? html_document::parse(gunzip(page.body, max_size), "text/xml") : page.document();
  for (auto& loc : select(document, "urlset url loc")) {
    auto text = loc.text_content();  // named: the trimmed view points into it
    if (auto url = detail::trim_ascii_space(text); !url.empty()) result.urls.emplace_back(url);
  }
  for (auto& loc : select(document, "sitemapindex sitemap loc")) {
    auto text = loc.text_content();  // named: the trimmed view points into it
    if (auto url = detail::trim_ascii_space(text); !url.empty()) result.sitemaps.emplace_back(url);
  }
  return result;
}

}  // namespace crawler
