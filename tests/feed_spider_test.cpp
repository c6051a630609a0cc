// CSVFeedSpider (crawler/csv_feed_spider.h) and XMLFeedSpider (crawler/xml_feed_spider.h) against
// a loopback server: rows as Scrapy's csviter gives them, nodes as XMLFeedSpider's iterators do
// (the expected rows, nodes and warnings were printed by Scrapy 2.8 on the same bodies).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "crawl_fixture.h"
#include "crawler/csv_feed_spider.h"
#include "crawler/parse/csv_rows.h"
#include "crawler/xml_feed_spider.h"

namespace {

using crawler::fixtures::http_server;

class rows_spider : public crawler::csv_feed_spider {
 public:
  explicit rows_spider(std::string url) : csv_feed_spider("rows") { start_urls = {std::move(url)}; }
  void parse_row(const crawler::response&, const crawler::item& row, crawler::output& out) override {
    rows.push_back(row.dump());
    out.item(row);
  }
  // Scrapy's hook: what parse_row yielded, changed before it goes on.
  void process_results(const crawler::response&, crawler::output& results) override {
    for (auto& item : results.items) item["seen"] = true;
  }
  std::vector<std::string> rows;
};

TEST(csv_feed_spider, gives_each_row_as_scrapys_csviter_does_and_skips_rows_of_another_length) {
  http_server server({.pages = {{"/feed.csv",
                                 "id,name,note\r\n"
                                 "1,\"Smith, Ann\",\"said \"\"hi\"\"\nthen left\"\r\n"
                                 "2,Bob\r\n"
                                 "\r\n"
                                 "3,Cy,plain \"quote\" inside\n"
                                 "4,\"Di\"x,end\n"
                                 "5,Ed,\n"}}});
  rows_spider spider(server.url("/feed.csv"));
  auto feed = std::filesystem::temp_directory_path() /
              ("csv_feed_spider_" + std::to_string(::getpid()) + ".jsonl");
  testing::internal::CaptureStderr();
  auto result = crawler::fixtures::crawl(
      spider, {"FEEDS=" + nlohmann::json{{feed.string(), {{"format", "jsonlines"}}}}.dump()});
  auto log = testing::internal::GetCapturedStderr();
  std::ifstream exported(feed);
  std::string first;
  std::getline(exported, first);
  std::filesystem::remove(feed);
  // process_results saw each row's items before they went on.
  EXPECT_EQ(first, R"({"id": "1", "name": "Smith, Ann", "note": "said \"hi\"\nthen left", "seen": true})");
  EXPECT_EQ(spider.rows, (std::vector<std::string>{
                             R"({"id":"1","name":"Smith, Ann","note":"said \"hi\"\nthen left"})",
                             R"({"id":"3","name":"Cy","note":"plain \"quote\" inside"})",
                             R"({"id":"4","name":"Dix","note":"end"})",
                             R"({"id":"5","name":"Ed","note":""})"}));
  EXPECT_NE(log.find("ignoring row 4 (length: 2, should be: 3)"), std::string::npos) << log;
  EXPECT_NE(log.find("ignoring row 5 (length: 0, should be: 3)"), std::string::npos) << log;
  EXPECT_EQ(crawler::fixtures::stat(result, "item_scraped_count"), 4);
}

TEST(csv_feed_spider, headers_delimiter_and_quotechar_are_the_spiders_to_choose) {
  http_server server({.pages = {{"/feed.csv", "a;b\n'x;y';z\n"}}});
  rows_spider spider(server.url("/feed.csv"));
  spider.delimiter = ';';
  spider.quotechar = '\'';
  spider.headers = {"first", "second"};
  crawler::fixtures::crawl(spider);
  EXPECT_EQ(spider.rows, (std::vector<std::string>{R"({"first":"a","second":"b"})",
                                                   R"({"first":"x;y","second":"z"})"}));
}

TEST(csv_rows, count_source_lines_as_pythons_reader_does) {
  std::vector<std::size_t> lines;
  crawler::read_csv("h\r\n\"a\r\nb\nc\"\r\nd", {}, [&](std::vector<std::string>&, std::size_t line) {
    lines.push_back(line);
  });
  EXPECT_EQ(lines, (std::vector<std::size_t>{1, 4, 5}));
}

const char* const shop_feed = R"(<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:g="http://base.google.com/ns/1.0">
<channel><title>Shop</title>
<item><title>One</title><g:price>10</g:price><link>http://shop/1</link></item>
<item><title><![CDATA[Two & more]]></title><g:price>20</g:price><link>http://shop/2</link></item>
<Item><title>Not an item</title></Item>
</channel></rss>)";

const char* const sitemap = R"(<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://x/1</loc></url><url><loc>http://x/2</loc></url></urlset>)";

// Each node's title, g:price and link::text, as JSON, with the node count process_results saw.
class shop_spider : public crawler::xml_feed_spider {
 public:
  shop_spider(std::string url, std::string iterator_) : xml_feed_spider("shop") {
    start_urls = {std::move(url)};
    iterator = std::move(iterator_);
    namespaces = {{"g", "http://base.google.com/ns/1.0"}};
  }
  void parse_node(const crawler::response&, const crawler::selector& node,
                  crawler::output& out) override {
    auto value = [](const crawler::selector_list& found) -> nlohmann::json {
      if (found.empty()) return nullptr;
      return found.front().get();
    };
    nodes.push_back(nlohmann::json{{"title", value(node.xpath("title/text()"))},
                                   {"price", value(node.xpath("g:price/text()"))},
                                   {"css", value(node.css("link::text"))}}
                        .dump());
    out.item({{"title", value(node.xpath("title/text()"))}});
  }
  void process_results(const crawler::response&, crawler::output& results) override {
    processed += results.items.size();
  }
  std::vector<std::string> nodes;
  std::size_t processed = 0;
};

TEST(xml_feed_spider, iternodes_and_xml_give_each_item_node_as_scrapys_do) {
  http_server server({.pages = {{"/feed.xml", shop_feed}}});
  for (std::string iterator : {"iternodes", "xml"}) {
    shop_spider spider(server.url("/feed.xml"), iterator);
    auto result = crawler::fixtures::crawl(spider);
    EXPECT_EQ(spider.nodes,
              (std::vector<std::string>{R"({"css":"http://shop/1","price":"10","title":"One"})",
                                        R"({"css":"http://shop/2","price":"20","title":"Two & more"})"}))
        << iterator << ": <Item> is another name";
    EXPECT_EQ(spider.processed, 2u);
    EXPECT_EQ(crawler::fixtures::stat(result, "item_scraped_count"), 2) << iterator;
  }
}

// A sitemap's elements are in its default namespace: iternodes finds <url> by the name written,
// the xml iterator only as n:url; "loc" under a node is then n:loc, as in Scrapy.
class sitemap_spider : public crawler::xml_feed_spider {
 public:
  sitemap_spider(std::string url, std::string iterator_, std::string itertag_)
      : xml_feed_spider("locs") {
    start_urls = {std::move(url)};
    iterator = std::move(iterator_);
    itertag = std::move(itertag_);
    namespaces = {{"n", "http://www.sitemaps.org/schemas/sitemap/0.9"}};
  }
  void parse_node(const crawler::response&, const crawler::selector& node,
                  crawler::output&) override {
    locs.push_back(node.xpath("n:loc/text()").get("None") + " " +
                   node.xpath("loc/text()").get("None"));
  }
  std::vector<std::string> locs;
};

TEST(xml_feed_spider, namespaces_and_itertag_mean_what_they_mean_in_scrapy) {
  http_server server({.pages = {{"/sitemap.xml", sitemap}}});
  auto run = [&](std::string iterator, std::string itertag) {
    sitemap_spider spider(server.url("/sitemap.xml"), iterator, itertag);
    crawler::fixtures::crawl(spider);
    return spider.locs;
  };
  using locs = std::vector<std::string>;
  EXPECT_EQ(run("iternodes", "url"), (locs{"http://x/1 None", "http://x/2 None"}));
  EXPECT_EQ(run("iternodes", "n:url"), locs{});
  EXPECT_EQ(run("xml", "n:url"), (locs{"http://x/1 None", "http://x/2 None"}));
  EXPECT_EQ(run("xml", "url"), locs{});
}

TEST(xml_feed_spider, an_unknown_iterator_is_a_spider_error_naming_it) {
  http_server server({.pages = {{"/feed.xml", shop_feed}}});
  shop_spider spider(server.url("/feed.xml"), "lxml");
  testing::internal::CaptureStderr();
  auto result = crawler::fixtures::crawl(spider);
  auto log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("unsupported XMLFeedSpider iterator \"lxml\" (iternodes, xml or html)"),
            std::string::npos)
      << log;
  EXPECT_EQ(crawler::fixtures::stat(result, "item_scraped_count"), 0);
}

}  // namespace
