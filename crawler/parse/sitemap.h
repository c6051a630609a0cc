// Sitemaps (sitemaps.org): the URLs of a <urlset>, the sitemaps of a <sitemapindex>, or the
// Sitemap: lines of a robots.txt (a response whose URL ends in /robots.txt, as in Scrapy's
// SitemapSpider).
//
//   auto sitemap = crawler::read_sitemap(response);       // gzip bodies are inflated first
//   for (auto& url : sitemap.urls) out.request(crawler::request{url});
//   for (auto& nested : sitemap.sitemaps) out.request(crawler::request{nested, "sitemap"});
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "crawler/parse/response.h"

namespace crawler {

struct sitemap {
  std::vector<std::string> urls;      // <urlset><url><loc>
  std::vector<std::string> sitemaps;  // <sitemapindex><sitemap><loc>
  /// For urls[i], the href of each link in its <url> (<xhtml:link rel="alternate" hreflang="de"
  /// href="...">: the page in other languages), as Scrapy's Sitemap reads them.
  std::vector<std::vector<std::string>> alternates;
};

/// Reads a sitemap response. A gzip body (a .xml.gz file) is inflated up to `max_size` bytes;
/// a larger one is cut off there, as Scrapy caps it at DOWNLOAD_MAXSIZE.
sitemap read_sitemap(const response& response, std::size_t max_size = 50u << 20);

}  // namespace crawler
