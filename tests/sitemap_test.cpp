// Sitemaps as sites publish them, and as a hostile site could: read as a stream.
#include "crawler/parse/sitemap.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "http_server.h"

namespace {

using crawler::fixtures::gzip;

crawler::response sitemap_response(std::string body) {
  crawler::response response;
  response.url = response.request.url = "http://example.com/sitemap.xml";
  response.body = std::move(body);
  return response;
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(sitemap, reads_urls_with_entities_cdata_comments_and_namespace_prefixes) {
  auto found = crawler::read_sitemap(sitemap_response(R"(<?xml version="1.0"?>
<!-- <url><loc>http://example.com/commented</loc></url> -->
<s:urlset xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9">
  <s:url><s:loc> http://example.com/a?x=1&amp;y=2 </s:loc><s:lastmod>2024-01-01</s:lastmod></s:url>
  <url><loc><![CDATA[http://example.com/b?x=1&y=2]]></loc></url>
  <url><loc>http://example.com/caf&#233;</loc><image><loc>http://example.com/img.png</loc></image></url>
  <url><loc/></url>
</s:urlset>)"));
  EXPECT_EQ(found.urls, (std::vector<std::string>{"http://example.com/a?x=1&y=2",
                                                  "http://example.com/b?x=1&y=2",
                                                  "http://example.com/caf\xC3\xA9"}));
  EXPECT_TRUE(found.sitemaps.empty());
}

TEST(sitemap, an_index_lists_sitemaps_and_not_urls) {
  auto found = crawler::read_sitemap(sitemap_response(
      "<sitemapindex><sitemap><loc>http://example.com/s1.xml</loc></sitemap>"
      "<sitemap><loc>http://example.com/s2.xml.gz</loc></sitemap></sitemapindex>"));
  EXPECT_EQ(found.sitemaps, (std::vector<std::string>{"http://example.com/s1.xml",
                                                      "http://example.com/s2.xml.gz"}));
  EXPECT_TRUE(found.urls.empty());
}

TEST(sitemap, a_50_mb_gzip_sitemap_is_read_in_bounded_memory) {
  // 50,000 URLs (the sitemaps.org limit) padded to 50 MB: a tree of it took over a gigabyte.
  std::string xml = "<urlset>";
  std::string padding(1000, ' ');
  for (int i = 0; i < 50000; ++i) {
    xml += "<url><loc>http://example.com/p/" + std::to_string(i) + "</loc><lastmod>" + padding +
           "</lastmod></url>";
  }
  xml += "</urlset>";
  ASSERT_GT(xml.size(), 50u << 20);
  auto response = sitemap_response(gzip(xml));
  xml = std::string();
  xml.shrink_to_fit();
  auto before = peak_rss_kib();
  auto found = crawler::read_sitemap(response, 100u << 20);
  auto grown_mib = (peak_rss_kib() - before) / 1024;
  ASSERT_EQ(found.urls.size(), 50000u);
  EXPECT_EQ(found.urls.back(), "http://example.com/p/49999");
  EXPECT_LT(grown_mib, 64) << "reading grew the peak RSS by " << grown_mib << " MiB";
}

TEST(sitemap, nesting_and_endless_text_cost_no_more_than_the_body) {
  std::string deep = "<urlset><url><loc>http://example.com/ok</loc></url>";
  for (int i = 0; i < 200000; ++i) deep += "<x>";
  deep += "<url><loc>" + std::string(1 << 20, 'a');  // a <loc> that never ends
  auto found = crawler::read_sitemap(sitemap_response(deep));
  EXPECT_EQ(found.urls, std::vector<std::string>{"http://example.com/ok"});
}

}  // namespace
