// CSVFeedSpider (crawler/csv_feed_spider.h) against a loopback server: rows as Scrapy's csviter
// gives them (the expected rows and warnings were printed by Scrapy 2.8's csviter on the same
// bodies).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "crawl_fixture.h"
#include "crawler/csv_feed_spider.h"
#include "crawler/parse/csv_rows.h"

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
  EXPECT_EQ(first, R"({"id":"1","name":"Smith, Ann","note":"said \"hi\"\nthen left","seen":true})");
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

}  // namespace
