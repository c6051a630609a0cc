// A hostile site, against a real loopback HTTP server: what one crawled page must never make the
// crawler do (read local files, talk to local services, leave the allowed domains, exhaust it).
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <set>

#include "crawl_fixture.h"
#include "crawler/downloader.h"
#include "redis_server.h"

namespace {

using namespace crawler::fixtures;

// CR or LF in a header, a method or a URL would end a line of the request and let whoever wrote
// it add headers or a second request on the connection. Whatever made the request, it is never
// sent: its errback gets a ValueError naming the header, and the server sees nothing of it.
TEST(hostile_site, a_request_whose_header_or_method_holds_a_line_break_is_never_sent) {
  http_server server;
  auto smuggled = get(server.url("/s?wd=headers"));
  smuggled.headers = {{"X-A", "1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"}};
  auto by_method = get(server.url("/s?wd=method"));
  by_method.method = "GET /smuggled HTTP/1.1\r\nX:";
  recording_spider spider({smuggled, by_method, get(server.url("/s?wd=fine"))});
  auto result = crawl(spider);
  EXPECT_EQ(server.hits("/smuggled"), 0u);
  EXPECT_EQ(server.hits("/s?wd=headers"), 0u);
  EXPECT_EQ(server.hits("/s?wd=method"), 0u);
  EXPECT_EQ(server.hits("/s?wd=fine"), 1u);
  ASSERT_EQ(spider.failures.size(), 2u);
  for (const auto& failure : spider.failures) EXPECT_EQ(failure.type, "ValueError");
  std::set<std::string> messages{spider.failures[0].message, spider.failures[1].message};
  EXPECT_TRUE(messages.contains(
      "<GET " + server.url("/s?wd=headers") +
      "> not sent: header \"X-A\": its value holds a carriage return (byte 1); a field value is "
      "visible characters, spaces and tabs (RFC 9110, section 5.5)"))
      << *messages.begin();
  EXPECT_EQ(stat(result, "downloader/exception_type_count/ValueError"), 2);
}

// USER_AGENT and DEFAULT_REQUEST_HEADERS go into every request: a line break in either stops the
// crawl before anything is fetched, naming the setting.
TEST(hostile_site, a_line_break_in_user_agent_or_default_request_headers_stops_the_crawl_at_start) {
  http_server server;
  auto refusal = [&](std::string setting) {
    recording_spider spider({get(server.url("/s?wd=1"))});
    try {
      crawl(spider, {std::move(setting)});
    } catch (const crawler::settings_error& error) {
      return std::string(error.what());
    }
    return std::string("(crawled)");
  };
  EXPECT_EQ(refusal("USER_AGENT=bot\r\nX-Injected: 1"),
            "USER_AGENT: its value holds a carriage return (byte 3); a field value is visible "
            "characters, spaces and tabs (RFC 9110, section 5.5)");
  EXPECT_EQ(refusal(R"(DEFAULT_REQUEST_HEADERS={"X-A": "1\nX-B: 2"})"),
            "DEFAULT_REQUEST_HEADERS.X-A: its value holds a line feed (byte 1); a field value is "
            "visible characters, spaces and tabs (RFC 9110, section 5.5)");
  EXPECT_EQ(refusal(R"(DEFAULT_REQUEST_HEADERS={"X A": "1"})"),
            "DEFAULT_REQUEST_HEADERS.X A: it holds a space (byte 1); a field name is a token "
            "(RFC 9110, section 5.1)");
  EXPECT_EQ(refusal("USER_AGENT=bot/1.0 (+https://a.example)\tx"), "(crawled)");
  EXPECT_EQ(server.total_hits(), 1u);
}

TEST(hostile_site, a_link_or_redirect_to_file_never_reads_the_machines_files) {
  http_server server({.pages = {{"/evil", R"(<a href="file:///etc/passwd">x</a>
                                            <a href="/to-passwd">y</a><a href="/s?wd=ok">z</a>)"}},
                      .redirects = {{"/to-passwd", "file:///etc/passwd"}}});
  following spider({get(server.url("/evil"))});
  auto result = crawl(spider);
  for (const auto& response : spider.responses) {
    EXPECT_TRUE(response.url.starts_with("http://")) << response.url;
    EXPECT_EQ(response.body.find("root:"), std::string::npos) << response.url;
  }
  EXPECT_EQ(server.hits("/s?wd=ok"), 1u);         // http links are still followed
  EXPECT_EQ(stat(result, "scheme/filtered"), 2);  // the link and the redirect
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "IgnoreRequest");
}

TEST(hostile_site, a_link_or_redirect_to_gopher_sends_nothing_to_a_local_redis) {
  crawler::fixtures::redis_server redis;
  auto gopher =
      "gopher://127.0.0.1:" + std::to_string(redis.port()) + "/_SET%20pwned%201%0D%0AQUIT%0D%0A";
  http_server server(
      {.pages = {{"/evil", "<a href=\"" + gopher + "\">x</a>" +
                               "<a href=\"dict://127.0.0.1:" + std::to_string(redis.port()) +
                               "/x\">d</a>" + "<a href=\"/to-redis\">y</a>"}},
       .redirects = {{"/to-redis", gopher}}});
  following spider({get(server.url("/evil"))});
  auto result = crawl(spider);
  EXPECT_FALSE(redis_has_key(redis.port(), "pwned"));
  EXPECT_EQ(stat(result, "scheme/filtered"), 3);
}

TEST(hostile_site, libcurl_itself_refuses_a_scheme_outside_download_schemes) {
  // Past every middleware (a custom downloader middleware could rewrite a URL), curl is still
  // restricted to DOWNLOAD_SCHEMES.
  crawler::fixtures::redis_server redis;
  auto settings = crawler::settings();
  boost::asio::io_context io;
  crawler::stats stats;
  crawler::downloader downloader(io.get_executor(), settings, stats);
  std::optional<crawler::download_result> result;
  downloader.fetch(get("gopher://127.0.0.1:" + std::to_string(redis.port()) +
                       "/_SET%20pwned%201%0D%0AQUIT%0D%0A"),
                   [&](crawler::download_result done) { result = std::move(done); });
  while (!result && io.run_one()) {
  }
  ASSERT_TRUE(result);
  EXPECT_EQ(result->error_type, "NotSupported");
  EXPECT_FALSE(redis_has_key(redis.port(), "pwned"));
}

TEST(hostile_site, file_pages_may_link_file_pages_as_the_offline_examples_do) {
  crawler::fixtures::temp_dir dir;
  std::ofstream(dir.path() / "a.html") << "<a href=\"b.html\">b</a>";
  std::ofstream(dir.path() / "b.html") << "<p>b</p>";
  following spider({get("file://" + (dir.path() / "a.html").string())});
  auto result = crawl(spider);
  EXPECT_EQ(spider.responses.size(), 2u);
  EXPECT_EQ(stat(result, "scheme/filtered"), 0);
}

TEST(hostile_site, download_schemes_is_checked_against_what_libcurl_can_fetch) {
  recording_spider spider({get("http://127.0.0.1:1/")});
  try {
    crawl(spider, {"DOWNLOAD_SCHEMES=http,https,nosuch"});
    FAIL() << "accepted a scheme libcurl does not have";
  } catch (const crawler::settings_error& error) {
    EXPECT_NE(std::string(error.what()).find("DOWNLOAD_SCHEMES: \"nosuch\""), std::string::npos)
        << error.what();
  }
}

// Start requests are dont_filter, as Scrapy's start_requests makes them: the very case in which
// the spider-side offsite check lets a request through, and the redirect check must not.
TEST(hostile_site, a_redirect_to_another_host_is_offsite_even_for_a_start_request) {
  http_server server(
      {.redirects = {{"/away", "http://localhost:{port}/s?wd=away"}, {"/home", "/s?wd=home"}}});
  auto away = get(server.url("/away")), home = get(server.url("/home"));
  away.dont_filter = home.dont_filter = true;
  following spider({away, home});
  spider.allowed_domains = {"127.0.0.1"};
  auto result = crawl(spider);
  EXPECT_EQ(server.hits("/s?wd=away"), 0u);
  EXPECT_EQ(server.hits("/s?wd=home"), 1u);
  EXPECT_EQ(stat(result, "offsite/filtered"), 1);
}

TEST(hostile_site, meta_allow_offsite_lets_a_redirect_to_another_host_through) {
  http_server server({.redirects = {{"/away", "http://localhost:{port}/s?wd=away"}}});
  auto start = get(server.url("/away"));
  start.meta["allow_offsite"] = true;  // the redirect carries its request's meta
  following spider({start});
  spider.allowed_domains = {"127.0.0.1"};
  auto result = crawl(spider);
  EXPECT_EQ(server.hits("/s?wd=away"), 1u);
  EXPECT_EQ(stat(result, "offsite/filtered"), 0);
}

// A C++ spider that reads requests from a source others write marks them shared: neither their
// dont_filter nor their allow_offsite passes the offsite filter, also after they waited in a
// segment file past SCHEDULER_MEMORY_QUEUE_LIMIT and came back from it. The spider's own requests
// with the same two keep passing.
TEST(hostile_site, a_shared_request_stays_shared_through_the_queues_segment_files) {
  http_server server;
  std::vector<crawler::request> start;
  for (int i = 0; i < 6; ++i) {
    auto shared = get("http://localhost:" + std::to_string(server.port()) + "/s?wd=shared" +
                      std::to_string(i));
    shared.origin = crawler::request_origin::shared;
    auto own = get("http://localhost:" + std::to_string(server.port()) + "/s?wd=own" +
                   std::to_string(i));
    for (auto* request : {&shared, &own}) {
      request->dont_filter = true;
      request->meta["allow_offsite"] = true;
    }
    start.push_back(std::move(shared));
    start.push_back(std::move(own));
  }
  for (const char* limit : {"0", "2"}) {
    recording_spider spider(start);
    spider.allowed_domains = {"127.0.0.1"};
    auto hits_before = server.total_hits();
    auto result = crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE_LIMIT=" +
                                                              std::string(limit)});
    EXPECT_EQ(server.total_hits() - hits_before, 6u) << limit;
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(server.hits("/s?wd=shared" + std::to_string(i)), 0u) << limit << " " << i;
    }
    EXPECT_EQ(stat(result, "offsite/filtered"), 6) << limit;
  }
  for (int i = 0; i < 6; ++i) EXPECT_EQ(server.hits("/s?wd=own" + std::to_string(i)), 2u) << i;
}

TEST(hostile_site, a_robots_txt_redirect_to_another_host_is_not_followed_and_allows_all) {
  http_server server({.redirects = {{"/robots.txt", "http://localhost:{port}/elsewhere.txt"}}});
  recording_spider spider({get(server.url("/s?wd=1"))});
  spider.allowed_domains = {"127.0.0.1"};
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true"});
  EXPECT_EQ(server.hits("/elsewhere.txt"), 0u);
  EXPECT_EQ(stat(result, "offsite/filtered"), 1);
  EXPECT_EQ(server.hits("/s?wd=1"), 1u);
}

TEST(hostile_site, start_urls_that_are_not_urls_stop_the_crawl_before_anything_is_fetched) {
  http_server server;
  for (std::string bad : {"127.0.0.1/s?wd=1", "htp:/x", "http://", "gopher://127.0.0.1/"}) {
    recording_spider spider({get(server.url("/s?wd=1")), get(bad)});
    try {
      crawl(spider);
      ADD_FAILURE() << "started with " << bad;
    } catch (const std::exception& error) {
      EXPECT_NE(std::string(error.what()).find(bad), std::string::npos) << error.what();
    }
  }
  EXPECT_EQ(server.total_hits(), 0u);
}

TEST(hostile_site, a_page_nested_100000_deep_is_skipped_and_counted_and_the_crawl_goes_on) {
  std::string deep = "<html><title>deep</title><body>";
  for (int i = 0; i < 100000; ++i) deep += "<div>";
  http_server server({.pages = {{"/deep", deep}, {"/deeper", deep + "<p>"}}});
  for (bool pooled : {false, true}) {  // parsed in the callback, or ahead on the parse pool
    selecting spider(
        {get(server.url("/deep")), get(server.url("/site/1")), get(server.url("/deeper"))});
    spider.parses_html = pooled;
    // How fast the page is refused is bench/parse_bench's refuse_a_page_nested_100000_deep.
    auto result = crawl(spider);
    EXPECT_EQ(spider.titles, std::vector<std::string>{"Page 1"});
    EXPECT_EQ(stat(result, "html/skipped_count"), 2);
    EXPECT_EQ(stat(result, "html/skipped_reason_count/too_deep"), 2);
    EXPECT_EQ(stat(result, "log_count/WARNING"), 1);  // once per crawl, not once per page
    EXPECT_EQ(stat(result, "spider_exceptions/crawler::page_too_complex"), 0);
    EXPECT_EQ(result.finish_reason, "finished");
  }
}

TEST(hostile_site, a_page_over_html_max_size_is_skipped_when_a_callback_parses_it) {
  http_server server;
  selecting spider({get(server.url("/site/1")), get(server.url("/s?wd=small"))});
  auto result = crawl(spider, {"HTML_MAX_SIZE=200"});  // a site page is larger, /s is not
  EXPECT_EQ(spider.titles, std::vector<std::string>{""});
  EXPECT_EQ(stat(result, "html/skipped_reason_count/too_large"), 1);
  EXPECT_EQ(stat(result, "html/skipped_count"), 1);
}

}  // namespace
