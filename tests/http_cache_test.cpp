// HTTPCACHE_*: pages stored on disk answer a second crawl, against a real loopback HTTP server.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "crawl_fixture.h"
#include "redis_server.h"

namespace {

using namespace crawler::fixtures;

// HTTPCACHE_ENABLED: the first crawl stores every page, the second reads them all from the disk
// (flag "cached") and the site sees no request; an entry older than HTTPCACHE_EXPIRATION_SECS and
// a status in HTTPCACHE_IGNORE_HTTP_CODES are fetched again.
TEST(crawl, the_http_cache_answers_a_second_crawl_without_touching_the_site) {
  http_server server;
  crawler::fixtures::temp_dir dir;
  std::vector<std::string> cache{"HTTPCACHE_ENABLED=true", "HTTPCACHE_DIR=" + dir.path().string(),
                                 "HTTPCACHE_IGNORE_HTTP_CODES=[404]"};
  auto start = searches(server, {"a", "b", "c"});
  start.push_back(get(server.url("/status/404")));
  start.push_back(get(server.url("/redirect/1")));  // the 302 is kept and followed again

  recording_spider first(start);
  auto stored = crawl(first, cache);
  EXPECT_EQ(first.responses.size(), 4u);  // the 404 goes to the errback
  EXPECT_EQ(stat(stored, "httpcache/miss"), 6);
  EXPECT_EQ(stat(stored, "httpcache/firsthand"), 6);
  EXPECT_EQ(stat(stored, "httpcache/store"), 5);
  EXPECT_EQ(stat(stored, "httpcache/uncacheable"), 1);
  EXPECT_EQ(stat(stored, "httpcache/hit"), 0);
  auto hits_after_first = server.total_hits();
  EXPECT_EQ(hits_after_first, 6u);

  recording_spider second(start);
  auto replayed = crawl(second, cache);
  EXPECT_EQ(stat(replayed, "httpcache/hit"), 5);
  EXPECT_EQ(stat(replayed, "httpcache/miss"), 1);  // only the 404
  EXPECT_EQ(server.total_hits(), hits_after_first + 1);
  ASSERT_EQ(second.responses.size(), 4u);
  for (const auto& response : second.responses) {
    auto original = std::find_if(first.responses.begin(), first.responses.end(),
                                 [&](const auto& r) { return r.url == response.url; });
    ASSERT_NE(original, first.responses.end()) << response.url;
    EXPECT_EQ(response.body, original->body);
    EXPECT_EQ(response.status, original->status);
    EXPECT_EQ(response.header("Content-Type"), original->header("Content-Type"));
    EXPECT_EQ(response.flags, std::vector<std::string>{"cached"});
  }

  // Every entry made two hours old: with a one-hour expiration each is fetched again.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.path().filename() == "meta") {
      std::filesystem::last_write_time(
          entry.path(), std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
    }
  }
  cache.push_back("HTTPCACHE_EXPIRATION_SECS=3600");
  recording_spider third(start);
  auto expired = crawl(third, cache);
  EXPECT_EQ(stat(expired, "httpcache/hit"), 0);
  EXPECT_EQ(stat(expired, "httpcache/store"), 5);
  EXPECT_EQ(server.total_hits(), hits_after_first + 1 + 6);
}

TEST(crawl, the_http_cache_ignoring_missing_pages_drops_them_without_a_request) {
  http_server server;
  crawler::fixtures::temp_dir dir;
  recording_spider spider(searches(server, {"a"}));
  auto result = crawl(spider, {"HTTPCACHE_ENABLED=true", "HTTPCACHE_DIR=" + dir.path().string(),
                               "HTTPCACHE_IGNORE_MISSING=true"});
  EXPECT_EQ(server.total_hits(), 0u);
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "IgnoreRequest");
  EXPECT_EQ(spider.failures[0].message,
            "Ignored request not in cache: <GET " + server.url("/s?wd=a") + ">");
  EXPECT_EQ(stat(result, "httpcache/ignore"), 1);
}

// The cache folder is input: a meta file whose status is no HTTP status (edited, or written by
// something else) is a miss and the page is fetched again, whatever number it holds; 100 and 999,
// the ends of the range, are answered from the cache.
TEST(crawl, a_cached_status_that_is_no_http_status_is_a_miss_and_the_page_is_fetched_again) {
  http_server server;
  crawler::fixtures::temp_dir dir;
  std::vector<std::string> cache{"HTTPCACHE_ENABLED=true", "HTTPCACHE_DIR=" + dir.path().string(),
                                 "HTTPCACHE_IGNORE_HTTP_CODES=[]"};
  recording_spider first(searches(server, {"a"}));
  crawl(first, cache);
  std::filesystem::path meta_file;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.path().filename() == "meta") meta_file = entry.path();
  }
  ASSERT_FALSE(meta_file.empty());
  auto meta = nlohmann::json::parse(std::ifstream(meta_file));
  for (const char* status : {"-1.1e57", "1e300", "200.5", "\"200\"", "99", "1000",
                             "18446744073709551615", "100", "999"}) {
    meta["status"] = nlohmann::json::parse(status);
    std::ofstream(meta_file, std::ios::trunc) << meta.dump();
    auto hits_before = server.total_hits();
    recording_spider again(searches(server, {"a"}));
    auto result = crawl(again, cache);
    bool in_range = std::string(status) == "100" || std::string(status) == "999";
    EXPECT_EQ(stat(result, "httpcache/hit"), in_range ? 1 : 0) << status;
    EXPECT_EQ(server.total_hits(), hits_before + (in_range ? 0 : 1)) << status;
    if (in_range) {
      EXPECT_EQ(again.responses.size() + again.failures.size(), 1u) << status;
    } else {
      ASSERT_EQ(again.responses.size(), 1u) << status;
      EXPECT_EQ(again.responses[0].status, 200) << status;
    }
  }
}

// A spider that reads pages only through their documents gets a body cut one byte past
// HTML_MAX_SIZE (flag "truncated"): that is not the page, and the cache does not keep it, so a
// later crawl that reads further fetches it whole.
class document_reader : public recording_spider {
 public:
  using recording_spider::recording_spider;
  bool reads_only_the_document(const crawler::request&) const override { return true; }
};

TEST(crawl, a_body_cut_where_the_spider_stops_reading_is_not_cached) {
  http_server server({.pages = {{"/large", "<html><body>" + std::string(1000, 'x')}}});
  crawler::fixtures::temp_dir dir;
  std::vector<std::string> cache{"HTTPCACHE_ENABLED=true", "HTTPCACHE_DIR=" + dir.path().string(),
                                 "HTML_MAX_SIZE=500"};
  std::vector<crawler::request> start{get(server.url("/s?wd=a")), get(server.url("/large"))};
  document_reader first(start);
  auto stored = crawl(first, cache);
  EXPECT_EQ(stat(stored, "httpcache/store"), 1);
  EXPECT_EQ(stat(stored, "httpcache/uncacheable"), 1);
  recording_spider whole(start);
  auto replayed = crawl(whole, cache);
  EXPECT_EQ(stat(replayed, "httpcache/hit"), 1);
  EXPECT_EQ(server.hits("/large"), 2u);
  auto large = std::find_if(whole.responses.begin(), whole.responses.end(),
                            [](const auto& r) { return r.url.ends_with("/large"); });
  ASSERT_NE(large, whole.responses.end());
  EXPECT_EQ(large->body.size(), 12u + 1000u);
}

}  // namespace
