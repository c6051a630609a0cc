// Sitemaps as sites publish them, and as a hostile site could: read as a stream.
#include "crawler/parse/sitemap.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>

#include "crawl_fixture.h"
#include "crawler/run_crawl.h"
#include "crawler/sitemap_spider.h"
#include "http_server.h"

namespace {

using crawler::fixtures::crawl;
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

// Scrapy's Sitemap reads a <url>'s links (<xhtml:link rel="alternate">) as its alternates,
// whether they come before or after its <loc>.
TEST(sitemap, a_urls_alternate_links_are_read_with_it) {
  auto found = crawler::read_sitemap(sitemap_response(
      R"(<urlset xmlns:xhtml="http://www.w3.org/1999/xhtml">)"
      R"(<url><xhtml:link rel="alternate" hreflang="de" href="http://example.com/de?a=1&amp;b=2"/>)"
      R"(<loc>http://example.com/en</loc>)"
      R"(<xhtml:link rel='alternate' hreflang='fr' href='http://example.com/fr'/></url>)"
      R"(<url><loc>http://example.com/alone</loc></url></urlset>)"));
  EXPECT_EQ(found.urls,
            (std::vector<std::string>{"http://example.com/en", "http://example.com/alone"}));
  ASSERT_EQ(found.alternates.size(), 2u);
  EXPECT_EQ(found.alternates[0], (std::vector<std::string>{"http://example.com/de?a=1&b=2",
                                                           "http://example.com/fr"}));
  EXPECT_TRUE(found.alternates[1].empty());
}

namespace {

// The site's sitemaps through robots.txt: sitemap_follow picks the even pages' sitemap only, and
// sitemap_rules send pages ending in 0 to one callback and the rest to parse.
class shop : public crawler::sitemap_spider {
 public:
  explicit shop(std::vector<std::string> urls) : sitemap_spider("shop") {
    sitemap_urls = std::move(urls);
    sitemap_rules = {{R"(/site/\d*0$)", "round"}, {"", "parse"}};
    sitemap_follow = {"even"};
    callback("round", [this](const crawler::response& r, crawler::output&) {
      round.push_back(r.url);
    });
  }
  void parse(const crawler::response& r, crawler::output&) override { other.push_back(r.url); }
  std::vector<std::string> round, other;
};

}  // namespace

TEST(sitemap_spider, follows_the_sitemaps_and_rules_it_is_given_from_robots_txt) {
  crawler::fixtures::http_server server({.site_pages = 40, .robots_txt = "Sitemap: /sitemap.xml\n"});
  shop spider({server.url("/robots.txt")});
  crawl(spider);
  std::sort(spider.round.begin(), spider.round.end());
  EXPECT_EQ(spider.round, (std::vector<std::string>{server.url("/site/0"), server.url("/site/10"),
                                                    server.url("/site/20"),
                                                    server.url("/site/30")}));
  EXPECT_EQ(spider.other.size(), 16u);  // the other even pages below 40
  EXPECT_EQ(server.hits("/sitemap-odd.xml.gz"), 0u);
  EXPECT_EQ(server.hits("/site/1"), 0u);
}

TEST(sitemap_spider, alternate_links_are_crawled_only_when_asked_for) {
  crawler::fixtures::http_server server(
      {.pages = {{"/alt.xml",
                  R"(<urlset><url><loc>http://127.0.0.1:{port}/s?wd=en</loc>)"
                  R"(<xhtml:link rel="alternate" hreflang="de" href="http://127.0.0.1:{port}/s?wd=de"/>)"
                  R"(</url></urlset>)"}}});
  for (bool alternates : {false, true}) {
    shop spider({server.url("/alt.xml")});
    spider.sitemap_alternate_links = alternates;
    crawl(spider);
    EXPECT_EQ(spider.other.size(), alternates ? 2u : 1u);
  }
  EXPECT_EQ(server.hits("/s?wd=en"), 2u);
  EXPECT_EQ(server.hits("/s?wd=de"), 1u);
}

TEST(sitemap_spider, a_bad_rule_stops_the_crawl_at_start_naming_it) {
  shop spider({"http://127.0.0.1:9/sitemap.xml"});
  spider.sitemap_rules = {{"(unclosed", "parse"}};
  try {
    crawl(spider);
    FAIL() << "the crawl started";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("sitemap_rules"), std::string::npos) << error.what();
  }
}
