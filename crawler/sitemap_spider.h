// Scrapy's SitemapSpider: a spider that finds the pages to crawl in sitemaps.
//
//   class shop : public crawler::sitemap_spider {
//    public:
//     shop() : sitemap_spider("shop") {
//       sitemap_urls = {"https://shop.example/robots.txt"};   // or sitemaps themselves
//       sitemap_rules = {{"/product/", "parse_product"}, {"/category/", "parse_category"}};
//       sitemap_follow = {"/sitemap_products"};               // which nested sitemaps to read
//       callback("parse_product", &shop::parse_product);
//       callback("parse_category", &shop::parse_category);
//     }
//   };
//
// As in Scrapy: a robots.txt among sitemap_urls gives its Sitemap: lines; a sitemap index gives
// the sitemaps whose URL a sitemap_follow regex finds a match in; a sitemap of URLs gives each URL
// to the callback of the first sitemap_rules entry whose regex finds a match in it (URLs no rule
// takes are not crawled). With sitemap_alternate_links, a URL's alternates (<xhtml:link
// rel="alternate">, the page in other languages) go through the rules too. Regexes are Python's
// re.search as RE2 runs them (crawler/parse/regex.h); a bad one stops the crawl at start, named.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "crawler/spider.h"

namespace re2 {
class RE2;
}

namespace crawler {

class sitemap_spider : public spider {
 public:
  /// The callback sitemap requests name.
  static constexpr const char* sitemap_callback = "_sitemap";

  explicit sitemap_spider(std::string name);
  ~sitemap_spider() override;

  /// Requests every sitemap_urls entry (a sitemap, a sitemap index or a robots.txt).
  void start_requests(output& out) override;

  std::vector<std::string> sitemap_urls;
  /// (regex, callback) pairs, first match wins; Scrapy's default sends every URL to parse.
  std::vector<std::pair<std::string, std::string>> sitemap_rules{{"", "parse"}};
  /// Regexes for the sitemaps of a sitemap index worth reading; the default reads them all.
  std::vector<std::string> sitemap_follow{""};
  bool sitemap_alternate_links = false;

 private:
  void parse_sitemap(const response& response, output& out);

  std::vector<std::pair<std::shared_ptr<const re2::RE2>, std::string>> rules_;
  std::vector<std::shared_ptr<const re2::RE2>> follow_;
};

}  // namespace crawler
