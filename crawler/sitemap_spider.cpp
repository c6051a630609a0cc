#include "crawler/sitemap_spider.h"

#include <stdexcept>

#include "config/log.h"
#include "crawler/parse/regex.h"
#include "crawler/parse/sitemap.h"

namespace crawler {
namespace {

std::shared_ptr<const re2::RE2> compiled(const std::string& pattern, const char* where) {
  try {
    return compile_regex(pattern);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(std::string(where) + ": " + error.what());
  }
}

}  // namespace

sitemap_spider::sitemap_spider(std::string name) : spider(std::move(name)) {
  callback(sitemap_callback, &sitemap_spider::parse_sitemap);
}

sitemap_spider::~sitemap_spider() = default;

void sitemap_spider::start_requests(output& out) {
  rules_.clear();
  follow_.clear();
  for (const auto& [pattern, callback] : sitemap_rules)
    rules_.emplace_back(compiled(pattern, "sitemap_rules"), callback);
  for (const auto& pattern : sitemap_follow) follow_.push_back(compiled(pattern, "sitemap_follow"));
  for (const auto& url : sitemap_urls) out.request(request{url, sitemap_callback});
}

void sitemap_spider::parse_sitemap(const response& response, output& out) {
  auto found = read_sitemap(response);
  bool robots = std::string_view(response.url).ends_with("/robots.txt");
  for (auto& nested : found.sitemaps) {
    bool wanted = robots;
    for (const auto& pattern : follow_) wanted = wanted || regex_search(*pattern, nested);
    if (wanted) out.request(request{std::move(nested), sitemap_callback});
  }
  auto take = [&](std::string url) {
    for (const auto& [pattern, callback] : rules_) {
      if (!regex_search(*pattern, url)) continue;
      out.request(request{std::move(url), callback});
      return;
    }
  };
  for (std::size_t i = 0; i < found.urls.size(); ++i) {
    take(std::move(found.urls[i]));
    if (sitemap_alternate_links)
      for (auto& alternate : found.alternates[i]) take(std::move(alternate));
  }
  if (!robots && found.urls.empty() && found.sitemaps.empty())
    get_logger("sitemap")->warn("No URL and no sitemap in the sitemap {}", response.url);
}

}  // namespace crawler
