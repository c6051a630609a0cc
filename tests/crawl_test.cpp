// The engine, downloader and middlewares against a real loopback HTTP server.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "crawler/crawl_spider.h"
#include "crawler/downloader.h"
#include "crawler/parse/href_scanner.h"
#include "crawler/run_crawl.h"
#include "http_server.h"
#include "redis_server.h"

namespace {

using crawler::fixtures::http_server;

// A spider that requests what the test gives it and records what comes back.
class recording_spider : public crawler::spider {
 public:
  explicit recording_spider(std::vector<crawler::request> start)
      : spider("recording"), start_(std::move(start)) {
    errback("record_failure", &recording_spider::record_failure);
  }

  void start_requests(crawler::output& out) override {
    for (auto request : start_) {
      request.errback = "record_failure";
      out.request(std::move(request));
    }
  }
  void parse(const crawler::response& response, crawler::output& out) override {
    callback_threads.insert(std::this_thread::get_id());
    responses.push_back(response);
    if (follow_links) {
      crawler::for_each_href(response.text(), [&](std::string_view href) {
        if (!href.starts_with("#")) {
          auto request = response.follow(href);
          request.errback = "record_failure";
          out.request(std::move(request));
        }
      });
      out.item({{"url", response.url}});
    }
  }
  void record_failure(const crawler::failure& failure, crawler::output&) {
    failures.push_back(failure);
  }

  bool follow_links = false;
  std::set<std::thread::id> callback_threads;
  std::vector<crawler::response> responses;
  std::vector<crawler::failure> failures;

 private:
  std::vector<crawler::request> start_;
};

crawler::request get(const std::string& url) {
  return crawler::request{url};
}

crawler::crawl_result crawl(crawler::spider& spider, std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(), {"LOG_LEVEL=WARNING", "LOGSTATS_INTERVAL=0"});
  auto settings = crawler::settings_for(spider, overrides);
  crawler::crawl_options options;
  options.handle_signals = false;
  return crawler::run_crawl(spider, settings, std::move(options));
}

std::int64_t stat(const crawler::crawl_result& result, const std::string& key) {
  return result.stats.value(key, std::int64_t{0});
}

TEST(crawl, a_status_in_retry_http_codes_is_retried_until_it_succeeds) {
  http_server server;
  recording_spider spider({get(server.url("/flaky/a?fail=2"))});
  auto result = crawl(spider);
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].body, "recovered");
  EXPECT_EQ(stat(result, "retry/count"), 2);
  EXPECT_EQ(stat(result, "retry/reason_count/500 Internal Server Error"), 2);
  EXPECT_EQ(stat(result, "downloader/response_status_count/500"), 2);
  EXPECT_EQ(stat(result, "downloader/response_status_count/200"), 1);
  EXPECT_EQ(server.hits("/flaky/a?fail=2"), 3u);
}

TEST(crawl, retries_stop_at_retry_times_and_the_status_reaches_the_errback) {
  http_server server;
  recording_spider spider({get(server.url("/status/503"))});
  auto result = crawl(spider, {"RETRY_TIMES=1"});
  EXPECT_TRUE(spider.responses.empty());
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "HttpError");
  EXPECT_EQ(stat(result, "retry/max_reached"), 1);
  EXPECT_EQ(stat(result, "downloader/request_count"), 2);
  EXPECT_EQ(stat(result, "httperror/response_ignored_status_count/503"), 1);
}

TEST(crawl, a_redirect_chain_is_followed_through_the_scheduler) {
  http_server server;
  recording_spider spider({get(server.url("/redirect/3"))});
  auto result = crawl(spider);
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].url, server.url("/redirect/0"));
  EXPECT_EQ(spider.responses[0].body, "arrived");
  EXPECT_EQ(spider.responses[0].meta()["redirect_times"], 3);
  EXPECT_EQ(stat(result, "downloader/response_status_count/302"), 3);
  EXPECT_EQ(stat(result, "scheduler/enqueued"), 4);  // the start request and three targets
}

// METAREFRESH_ENABLED (on, as in Scrapy): a page whose <meta http-equiv="refresh"> points
// elsewhere within METAREFRESH_MAXDELAY seconds is followed as a redirect, "meta refresh" among
// its redirect_reasons; a longer delay is not, nor a refresh to a scheme the page may not reach.
TEST(crawl, a_meta_refresh_is_followed_as_a_redirect_within_metarefresh_maxdelay) {
  http_server server(
      {.pages = {
           {"/soon",
            R"(<html><head><meta http-equiv="refresh" content="2; url=/s?wd=soon"></head>)"},
           {"/late", R"(<meta http-equiv="refresh" content="200; url=/s?wd=late">)"},
           {"/local", R"(<meta http-equiv="refresh" content="0; url=file:///etc/passwd">)"},
           {"/noscript",
            R"(<noscript><meta http-equiv="refresh" content="0; url=/s?wd=js"></noscript>)"}}});
  std::vector<crawler::request> start{get(server.url("/soon")), get(server.url("/late")),
                                      get(server.url("/local"))};
  recording_spider spider(start);
  auto result = crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo"});
  std::map<std::string, nlohmann::json> reached;
  for (const auto& response : spider.responses) reached[response.url] = response.meta();
  ASSERT_EQ(reached.size(), 2u) << testing::PrintToString(spider.responses.size());
  auto soon = reached.at(server.url("/s?wd=soon"));
  EXPECT_EQ(soon["redirect_reasons"], nlohmann::json::array({"meta refresh"}));
  EXPECT_EQ(soon["redirect_urls"], nlohmann::json::array({server.url("/soon")}));
  EXPECT_TRUE(reached.contains(server.url("/late")));  // 200 s: past METAREFRESH_MAXDELAY
  EXPECT_EQ(server.hits("/s?wd=late"), 0u);
  ASSERT_EQ(spider.failures.size(), 1u);  // file:// from an http page: refused, as a 302 would be
  EXPECT_EQ(spider.failures[0].request.url, server.url("/local"));
  EXPECT_EQ(stat(result, "scheme/filtered"), 1);

  // METAREFRESH_IGNORE_TAGS: a refresh inside <noscript> is for browsers without scripts.
  recording_spider ignoring({get(server.url("/noscript"))});
  crawl(ignoring, {R"(METAREFRESH_IGNORE_TAGS=["noscript"])"});
  EXPECT_EQ(server.hits("/s?wd=js"), 0u);
  recording_spider following({get(server.url("/noscript"))});
  crawl(following);
  EXPECT_EQ(server.hits("/s?wd=js"), 1u);

  recording_spider unrefreshed({get(server.url("/soon"))});
  crawl(unrefreshed, {"METAREFRESH_ENABLED=false"});
  ASSERT_EQ(unrefreshed.responses.size(), 1u);
  EXPECT_EQ(unrefreshed.responses[0].url, server.url("/soon"));
  EXPECT_EQ(server.hits("/s?wd=soon"), 1u);
}

TEST(crawl, a_redirect_loop_ends_at_the_dupefilter) {
  http_server server;
  recording_spider spider({get(server.url("/loop/a"))});
  auto result = crawl(spider);
  EXPECT_TRUE(spider.responses.empty());
  EXPECT_EQ(stat(result, "dupefilter/filtered"), 1);
  EXPECT_EQ(server.hits("/loop/a"), 1u);
  EXPECT_EQ(server.hits("/loop/b"), 1u);
}

TEST(crawl, an_unfiltered_redirect_loop_stops_at_redirect_max_times) {
  http_server server;
  auto start = get(server.url("/loop/a"));
  start.dont_filter = true;
  recording_spider spider({start});
  crawl(spider, {"REDIRECT_MAX_TIMES=5"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "IgnoreRequest");
  EXPECT_EQ(spider.failures[0].message, "max redirections reached");
  EXPECT_EQ(server.hits("/loop/a") + server.hits("/loop/b"), 6u);
}

TEST(crawl, a_slow_response_times_out_after_download_timeout) {
  http_server server;
  recording_spider spider({get(server.url("/slow?ms=3000"))});
  auto result = crawl(spider, {"DOWNLOAD_TIMEOUT=0.3", "RETRY_ENABLED=false"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "TimeoutError");
  EXPECT_EQ(stat(result, "downloader/exception_type_count/TimeoutError"), 1);
  EXPECT_LT(result.stats["elapsed_time_seconds"].get<double>(), 2.5);
}

TEST(crawl, timeouts_are_retried) {
  http_server server;
  recording_spider spider({get(server.url("/slow?ms=3000"))});
  auto result = crawl(spider, {"DOWNLOAD_TIMEOUT=0.2", "RETRY_TIMES=2"});
  EXPECT_EQ(stat(result, "retry/reason_count/TimeoutError"), 2);
  EXPECT_EQ(stat(result, "retry/max_reached"), 1);
  EXPECT_EQ(server.hits("/slow?ms=3000"), 3u);
}

TEST(crawl, a_body_larger_than_download_maxsize_is_cancelled) {
  http_server server;
  recording_spider spider({get(server.url("/big?bytes=300000"))});
  auto result = crawl(spider, {"DOWNLOAD_MAXSIZE=100000"});
  EXPECT_TRUE(spider.responses.empty());
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "CancelledError");
  EXPECT_EQ(stat(result, "retry/count"), 0);
}

TEST(crawl, a_large_body_under_the_limit_arrives_whole) {
  http_server server;
  recording_spider spider({get(server.url("/big?bytes=5000000"))});
  crawl(spider);
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].body.size(), 5000000u);
}

TEST(crawl, gzip_bodies_are_decoded) {
  http_server server;
  recording_spider spider({get(server.url("/gzip"))});
  crawl(spider);
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].body, "<html><body>compressed page</body></html>");
}

TEST(crawl, a_gzip_bomb_is_cut_off_at_download_maxsize_after_decompression) {
  http_server server;
  recording_spider spider({get(server.url("/bomb?mb=64"))});
  auto result = crawl(spider, {"DOWNLOAD_MAXSIZE=1048576"});
  EXPECT_TRUE(spider.responses.empty());
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "CancelledError");
  EXPECT_EQ(stat(result, "downloader/exception_type_count/CancelledError"), 1);
}

TEST(crawl, a_reset_connection_is_retried_then_reported) {
  http_server server;
  recording_spider spider({get(server.url("/reset"))});
  auto result = crawl(spider, {"RETRY_TIMES=1"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_TRUE(spider.failures[0].type == "ConnectionLost" ||
              spider.failures[0].type == "ResponseNeverReceived")
      << spider.failures[0].type;
  EXPECT_EQ(stat(result, "retry/count"), 1);
  EXPECT_EQ(server.hits("/reset"), 2u);
}

TEST(crawl, a_refused_connection_is_an_error_not_a_silent_drop) {
  unsigned short port;
  {
    http_server closed;
    port = closed.port();
  }
  recording_spider spider({get("http://127.0.0.1:" + std::to_string(port) + "/")});
  auto result = crawl(spider, {"RETRY_ENABLED=false"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].type, "ConnectionRefusedError");
  EXPECT_EQ(stat(result, "log_count/ERROR"), 1);
}

// Spider arguments http_user / http_pass send Basic credentials, as Scrapy's HttpAuthMiddleware:
// to http_auth_domain, or without it to the first request's host only (a link to another host
// must not carry them); an empty http_auth_domain sends them everywhere.
TEST(crawl, http_user_and_pass_authenticate_to_http_auth_domain_only) {
  http_server server;
  auto elsewhere = "http://localhost:" + std::to_string(server.port()) + "/auth";
  auto statuses = [&](std::optional<std::string> domain) {
    recording_spider spider({get(server.url("/auth")), get(elsewhere)});
    spider.set_argument("http_user", "user");
    spider.set_argument("http_pass", "pass");
    if (domain) spider.set_argument("http_auth_domain", *domain);
    crawl(spider, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo", "RETRY_ENABLED=false"});
    std::map<std::string, int> by_url;
    for (const auto& response : spider.responses) by_url[response.url] = response.status;
    for (const auto& failure : spider.failures) {
      by_url[failure.request.url] = failure.response ? failure.response->status : -1;
    }
    return by_url;
  };
  auto first_host = statuses(std::nullopt);
  EXPECT_EQ(first_host[server.url("/auth")], 200);
  EXPECT_EQ(first_host[elsewhere], 401);
  auto named = statuses("localhost");
  EXPECT_EQ(named[server.url("/auth")], 401);
  EXPECT_EQ(named[elsewhere], 200);
  auto everywhere = statuses("");
  EXPECT_EQ(everywhere[server.url("/auth")], 200);
  EXPECT_EQ(everywhere[elsewhere], 200);
}

// HTTPPROXY_ENABLED (on): meta["proxy"], with its credentials, or the http_proxy environment
// variable routes a request through a proxy; off, neither is used. The target host does not
// exist: only the proxy can answer for it.
TEST(crawl, requests_go_through_meta_proxy_or_http_proxy_unless_httpproxy_enabled_is_false) {
  http_server proxy;
  const std::string target = "http://site.invalid/page?x=1";
  auto bodies = [&](crawler::request request, std::vector<std::string> settings) {
    recording_spider spider({std::move(request)});
    crawl(spider, std::move(settings));
    std::vector<std::string> out;
    for (const auto& response : spider.responses) out.push_back(response.body);
    for (const auto& failure : spider.failures) out.push_back("failed: " + failure.type);
    return out;
  };
  auto with_meta = get(target);
  with_meta.meta["proxy"] = "http://user:s3cret@127.0.0.1:" + std::to_string(proxy.port());
  EXPECT_EQ(bodies(with_meta, {}),
            std::vector<std::string>{"proxied " + target + " with Basic dXNlcjpzM2NyZXQ="});
  EXPECT_EQ(proxy.hits(target), 1u);

  setenv("http_proxy", proxy.url("").c_str(), 1);
  auto from_environment = bodies(get(target), {});
  auto disabled =
      bodies(with_meta, {"HTTPPROXY_ENABLED=false", "RETRY_ENABLED=false", "DOWNLOAD_TIMEOUT=5"});
  unsetenv("http_proxy");
  EXPECT_EQ(from_environment, std::vector<std::string>{"proxied " + target});
  ASSERT_EQ(disabled.size(), 1u);
  EXPECT_TRUE(disabled[0].starts_with("failed: ")) << disabled[0];
  EXPECT_EQ(proxy.hits(target), 2u);
}

TEST(crawl, cookies_set_by_one_response_go_with_the_next_request) {
  http_server server;
  // One at a time, oldest first: /cookie/set answers before /cookie/check leaves.
  recording_spider with({get(server.url("/cookie/set")), get(server.url("/cookie/check"))});
  auto with_result = crawl(with, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo"});
  EXPECT_EQ(stat(with_result, "downloader/response_status_count/200"), 2);

  recording_spider without({get(server.url("/cookie/set")), get(server.url("/cookie/check"))});
  auto without_result = crawl(
      without, {"CONCURRENT_REQUESTS=1", "SCHEDULER_MEMORY_QUEUE=fifo", "COOKIES_ENABLED=false"});
  EXPECT_EQ(stat(without_result, "downloader/response_status_count/403"), 1);
}

TEST(crawl, every_reachable_page_of_a_site_is_visited_exactly_once) {
  constexpr std::size_t pages = 3000;
  http_server server({.site_pages = pages});
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  auto result = crawl(spider);
  EXPECT_EQ(result.finish_reason, "finished");
  EXPECT_EQ(spider.responses.size(), pages);
  std::set<std::string> urls;
  for (const auto& response : spider.responses) urls.insert(response.url);
  EXPECT_EQ(urls.size(), pages);
  for (std::size_t page = 0; page < pages; ++page) {
    ASSERT_EQ(server.hits("/site/" + std::to_string(page)), 1u) << "page " << page;
  }
  EXPECT_EQ(stat(result, "item_scraped_count"), std::int64_t(pages));
  EXPECT_EQ(stat(result, "scheduler/enqueued"), std::int64_t(pages));
  EXPECT_GT(stat(result, "dupefilter/filtered"), 0);
  EXPECT_GT(stat(result, "request_depth_max"), 10);
}

TEST(crawl, pages_parsed_ahead_on_worker_threads_reach_callbacks_on_the_crawl_thread) {
  constexpr std::size_t pages = 1000;
  http_server server({.site_pages = pages});
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  spider.parses_html = true;
  auto result = crawl(spider, {"CONCURRENT_REQUESTS=64"});
  EXPECT_EQ(result.finish_reason, "finished");
  ASSERT_EQ(spider.responses.size(), pages);
  EXPECT_EQ(spider.callback_threads, std::set<std::thread::id>{std::this_thread::get_id()});
  std::set<std::string> titles;
  for (const auto& response : spider.responses)
    titles.insert(response.css("title::text").get().value_or(""));
  EXPECT_EQ(titles.size(), pages);
  for (std::size_t page = 0; page < pages; ++page) {
    ASSERT_EQ(server.hits("/site/" + std::to_string(page)), 1u) << "page " << page;
  }
}

// A spider with concurrent_callbacks: its callbacks run on the worker threads, never on the crawl
// thread, and the crawl still reaches every page once with every item.
class concurrent_site_spider : public crawler::spider {
 public:
  explicit concurrent_site_spider(std::string start) : spider("concurrent"), start_(start) {
    concurrent_callbacks = true;
  }
  void start_requests(crawler::output& out) override { out.request(crawler::request{start_}); }
  void parse(const crawler::response& response, crawler::output& out) override {
    {
      std::lock_guard lock(mutex);
      callback_threads.insert(std::this_thread::get_id());
    }
    crawler::for_each_href(response.text(), [&](std::string_view href) {
      if (!href.starts_with("#")) out.request(response.follow(href));
    });
    out.item({{"url", response.url}});
  }
  std::mutex mutex;
  std::set<std::thread::id> callback_threads;

 private:
  std::string start_;
};

TEST(crawl, concurrent_callbacks_run_on_worker_threads_and_miss_no_page) {
  constexpr std::size_t pages = 1000;
  http_server server({.site_pages = pages});
  concurrent_site_spider spider(server.url("/site/0"));
  auto result = crawl(spider, {"CONCURRENT_REQUESTS=64"});
  EXPECT_EQ(result.finish_reason, "finished");
  EXPECT_EQ(stat(result, "item_scraped_count"), std::int64_t(pages));
  EXPECT_FALSE(spider.callback_threads.empty());
  EXPECT_FALSE(spider.callback_threads.contains(std::this_thread::get_id()))
      << "a callback ran on the crawl thread";
  for (std::size_t page = 0; page < pages; ++page) {
    ASSERT_EQ(server.hits("/site/" + std::to_string(page)), 1u) << "page " << page;
  }
}

// Sends every link the spider yields to one page, after the callback ran.
class redirect_links_middleware : public crawler::spider_middleware {
 public:
  explicit redirect_links_middleware(std::string target) : target_(std::move(target)) {}
  void process_spider_output(const crawler::response&, crawler::output& out) override {
    for (auto& request : out.requests) request.url = target_;
  }

 private:
  std::string target_;
};

// The workers fingerprint a concurrent callback's links ahead of the crawl thread; a middleware
// that rewrites a URL afterwards must have the rewritten URL deduplicated, not the one the
// callback yielded.
TEST(crawl, a_link_rewritten_by_a_middleware_is_deduplicated_by_its_new_url) {
  http_server server({.site_pages = 1000});
  concurrent_site_spider spider(server.url("/site/0"));
  auto settings = crawler::settings_for(spider, {"LOG_LEVEL=WARNING", "LOGSTATS_INTERVAL=0"});
  crawler::crawl_options options;
  options.handle_signals = false;
  options.spider_middlewares.push_back(
      std::make_unique<redirect_links_middleware>(server.url("/site/1")));
  auto result = crawler::run_crawl(spider, settings, std::move(options));
  EXPECT_EQ(result.finish_reason, "finished");
  // Page 0 links to pages 1 and 5: both become page 1, crawled once, whose own links are seen.
  EXPECT_EQ(server.hits("/site/1"), 1u);
  EXPECT_EQ(server.hits("/site/5"), 0u);
  EXPECT_EQ(stat(result, "item_scraped_count"), 2);
}

// A bad link, by default one no fingerprint can be made of (an unbalanced IPv6 bracket), yielded
// on a worker thread beside a good one.
class bad_link_spider : public crawler::spider {
 public:
  explicit bad_link_spider(std::string start, std::string link = "http://[::1/broken")
      : spider("bad_link"), start_(std::move(start)), link_(std::move(link)) {
    concurrent_callbacks = true;
  }
  void start_requests(crawler::output& out) override { out.request(crawler::request{start_}); }
  void parse(const crawler::response& response, crawler::output& out) override {
    if (response.url != start_) return;
    out.request(crawler::request{link_});
    out.request(response.follow("/site/7"));
  }

 private:
  std::string start_, link_;
};

// Scrapy's Request raises "Missing scheme in request url" for a URL a callback built without one:
// here the request is dropped with that error, never fetched as a guessed host or a local path.
TEST(crawl, a_link_without_a_scheme_is_an_error_and_the_crawl_goes_on) {
  http_server server({.site_pages = 1000});
  bad_link_spider spider(server.url("/site/0"), "etc/passwd");
  auto result = crawl(spider);
  EXPECT_EQ(result.finish_reason, "finished");
  EXPECT_EQ(server.hits("/site/7"), 1u);
  EXPECT_EQ(stat(result, "scheme/filtered"), 1);
  EXPECT_EQ(stat(result, "log_count/ERROR"), 1);
}

TEST(crawl, a_link_that_cannot_be_fingerprinted_is_dropped_and_the_crawl_goes_on) {
  http_server server({.site_pages = 1000});
  bad_link_spider spider(server.url("/site/0"));
  auto result = crawl(spider);
  EXPECT_EQ(result.finish_reason, "finished");
  EXPECT_EQ(server.hits("/site/7"), 1u);
  EXPECT_EQ(stat(result, "response_received_count"), 2);
}

// A C++ spider's name is part of feed paths and the cache folder too: one that would lead out of
// them stops the crawl before anything is built from it.
TEST(crawl, a_spider_whose_name_would_leave_its_folder_cannot_start) {
  struct named : crawler::spider {
    named() : spider("../outside") {}
  } spider;
  try {
    crawl(spider, {"FEEDS={\"%(name)s.jsonl\": {}}"});
    ADD_FAILURE() << "the crawl started";
  } catch (const crawler::settings_error& error) {
    EXPECT_EQ(std::string(error.what()), "spider name: \"../outside\" must not start with a dot");
  }
  EXPECT_FALSE(std::filesystem::exists("../outside.jsonl"));
}

TEST(crawl, depth_limit_stops_following_links) {
  http_server server({.site_pages = 1000});
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  auto result = crawl(spider, {"DEPTH_LIMIT=1"});
  // Page 0 links to pages 1, 5 and 1 again: depth 1 is crawled, nothing deeper.
  EXPECT_EQ(spider.responses.size(), 3u);
  EXPECT_EQ(stat(result, "request_depth_max"), 1);
}

TEST(crawl, closespider_pagecount_closes_with_scrapys_reason) {
  http_server server({.site_pages = 1000});
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  auto result = crawl(spider, {"CLOSESPIDER_PAGECOUNT=20", "CONCURRENT_REQUESTS=2"});
  EXPECT_EQ(result.finish_reason, "closespider_pagecount");
  EXPECT_GE(spider.responses.size(), 20u);
  EXPECT_LE(spider.responses.size(), 22u);  // the two in flight finish
}

// MEMUSAGE_* as Scrapy's MemoryUsage extension: peak memory in memusage/startup and /max; past
// MEMUSAGE_LIMIT_MB the spider closes with memusage_exceeded (any crawler is past 1 MiB, and the
// first check is at start), past MEMUSAGE_WARNING_MB one warning and the crawl goes on.
TEST(crawl, memusage_limit_closes_with_memusage_exceeded_and_warning_mb_only_warns) {
  http_server server({.site_pages = 1000, .page_delay_ms = 20});
  recording_spider limited({get(server.url("/site/0"))});
  limited.follow_links = true;
  auto closed = crawl(limited, {"MEMUSAGE_LIMIT_MB=1"});
  EXPECT_EQ(closed.finish_reason, "memusage_exceeded");
  EXPECT_EQ(stat(closed, "memusage/limit_reached"), 1);
  EXPECT_GT(stat(closed, "memusage/startup"), 1 << 20);
  EXPECT_LT(limited.responses.size(), 100u);

  recording_spider warned({get(server.url("/s?wd=a")), get(server.url("/s?wd=b"))});
  auto finished = crawl(warned, {"MEMUSAGE_WARNING_MB=1"});
  EXPECT_EQ(finished.finish_reason, "finished");
  EXPECT_EQ(stat(finished, "memusage/warning_reached"), 1);
  EXPECT_EQ(stat(finished, "log_count/WARNING"), 1);
  EXPECT_EQ(warned.responses.size(), 2u);

  recording_spider untracked({get(server.url("/s?wd=c"))});
  auto off = crawl(untracked, {"MEMUSAGE_ENABLED=false", "MEMUSAGE_LIMIT_MB=1"});
  EXPECT_EQ(off.finish_reason, "finished");
  EXPECT_FALSE(off.stats.contains("memusage/startup"));
}

// Responses the spider never sees (a 404 turned away by HttpError) count toward
// CLOSESPIDER_PAGECOUNT too, as in Scrapy: one request at a time, the third closes the spider.
TEST(crawl, closespider_pagecount_counts_responses_turned_away_by_httperror) {
  http_server server;
  std::vector<crawler::request> start;
  for (int i = 0; i < 10; ++i) {
    start.push_back(get(server.url("/status/404?i=" + std::to_string(i))));
  }
  recording_spider spider(start);
  auto result = crawl(spider, {"CLOSESPIDER_PAGECOUNT=3", "CONCURRENT_REQUESTS=1"});
  EXPECT_EQ(result.finish_reason, "closespider_pagecount");
  EXPECT_EQ(server.total_hits(), 3u);
  EXPECT_TRUE(spider.responses.empty());
}

// CLOSESPIDER_ERRORCOUNT closes the spider at that many spider errors: one page at a time, every
// callback throwing, the third error is the last page.
TEST(crawl, closespider_errorcount_closes_at_that_many_spider_errors) {
  http_server server;
  class failing : public recording_spider {
   public:
    using recording_spider::recording_spider;
    void parse(const crawler::response&, crawler::output&) override {
      throw std::runtime_error("bad page");
    }
  };
  std::vector<crawler::request> start;
  for (int i = 0; i < 10; ++i) start.push_back(get(server.url("/s?wd=" + std::to_string(i))));
  failing spider(start);
  auto result = crawl(spider, {"CLOSESPIDER_ERRORCOUNT=3", "CONCURRENT_REQUESTS=1"});
  EXPECT_EQ(result.finish_reason, "closespider_errorcount");
  EXPECT_EQ(server.total_hits(), 3u);
  EXPECT_EQ(stat(result, "spider_exceptions/std::runtime_error"), 3);
}

// A rule with a callback does not follow the links of the pages it leads to unless it says
// `follow`; a rule without one does (Scrapy's CrawlSpider default).
TEST(crawl, a_rule_with_a_callback_follows_only_when_told_to) {
  http_server server({.site_pages = 1000});
  class rules_spider : public crawler::crawl_spider {
   public:
    explicit rules_spider(std::string start, std::optional<bool> follow) : crawl_spider("rules") {
      start_urls = {std::move(start)};
      rules.push_back({crawler::link_extractor({.allow = {R"(/site/\d+$)"}}), "page"});
      rules.back().follow = follow;
      callback("page", [this](const crawler::response& response, crawler::output&) {
        pages.insert(response.url);
      });
    }
    std::set<std::string> pages;
  };
  rules_spider unset(server.url("/site/0"), std::nullopt);
  crawl(unset, {"CLOSESPIDER_PAGECOUNT=50"});
  // Page 0 links to 1 and 5 (site_links): those two, and nothing from them.
  EXPECT_EQ(unset.pages, (std::set<std::string>{server.url("/site/1"), server.url("/site/5")}));
  rules_spider following(server.url("/site/0"), true);
  crawl(following, {"CLOSESPIDER_PAGECOUNT=50"});
  EXPECT_GT(following.pages.size(), 20u);
}

TEST(crawl, closespider_timeout_closes_a_crawl_that_would_run_on) {
  http_server server({.site_pages = 1000, .page_delay_ms = 50});
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  auto result = crawl(spider, {"CLOSESPIDER_TIMEOUT=0.5", "CONCURRENT_REQUESTS=2"});
  EXPECT_EQ(result.finish_reason, "closespider_timeout");
  EXPECT_LT(spider.responses.size(), 100u);
}

TEST(crawl, download_delay_spaces_requests_to_one_host) {
  http_server server;
  std::vector<crawler::request> start;
  for (int i = 0; i < 4; ++i) start.push_back(get(server.url("/s?wd=" + std::to_string(i))));
  recording_spider spider(start);
  auto result = crawl(spider, {"DOWNLOAD_DELAY=0.2", "RANDOMIZE_DOWNLOAD_DELAY=false"});
  EXPECT_EQ(spider.responses.size(), 4u);
  EXPECT_GE(result.stats["elapsed_time_seconds"].get<double>(), 0.6);
}

// RANDOMIZE_DOWNLOAD_DELAY (on by default, as in Scrapy): each wait is the delay times a random
// factor between 0.5 and 1.5, so gaps vary; off, every gap is the delay.
TEST(crawl, randomize_download_delay_spreads_gaps_between_half_and_one_and_a_half_delays) {
  http_server server;
  std::vector<crawler::request> start;
  for (int i = 0; i < 9; ++i) start.push_back(get(server.url("/s?wd=" + std::to_string(i))));
  recording_spider spider(start);
  crawl(spider, {"DOWNLOAD_DELAY=0.1"});
  auto gaps = server.gaps_between_requests();
  ASSERT_EQ(gaps.size(), 8u);
  auto [least, most] = std::minmax_element(gaps.begin(), gaps.end());
  EXPECT_GE(*least, 0.05 - 0.005);
  EXPECT_LE(*most, 0.15 + 0.05);  // 0.05: scheduling slack on a loaded machine
  // Eight uniform draws all within 5 ms of one another: odds of one in 10^8.
  EXPECT_GT(*most - *least, 0.005) << "gaps do not vary: the delay is not randomised";
}

// CONCURRENT_REQUESTS_PER_DOMAIN caps the requests one host answers at once, whatever
// CONCURRENT_REQUESTS allows.
// Three spellings of 127.0.0.1 are three domains but one server: CONCURRENT_REQUESTS_PER_IP
// caps them together, from their first requests (they wait for the address), where per domain
// each would have its own two.
TEST(crawl, concurrent_requests_per_ip_caps_every_host_name_of_one_server_together) {
  http_server server;
  std::vector<crawler::request> start;
  for (const char* host : {"127.0.0.1", "127.1", "127.0.1"}) {
    for (int i = 0; i < 4; ++i) {
      start.push_back(get("http://" + std::string(host) + ":" + std::to_string(server.port()) +
                          "/slow?ms=100&i=" + std::to_string(i)));
    }
  }
  recording_spider per_ip(start);
  auto result = crawl(per_ip, {"CONCURRENT_REQUESTS_PER_DOMAIN=2", "CONCURRENT_REQUESTS_PER_IP=2"});
  EXPECT_EQ(per_ip.responses.size(), 12u);
  EXPECT_EQ(server.most_in_flight(), 2u);
  recording_spider per_domain(start);
  crawl(per_domain, {"CONCURRENT_REQUESTS_PER_DOMAIN=2"});
  EXPECT_EQ(per_domain.responses.size(), 12u);
  EXPECT_EQ(server.most_in_flight(), 6u);
}

TEST(crawl, concurrent_requests_per_domain_caps_what_one_host_answers_at_once) {
  http_server server;
  std::vector<crawler::request> start;
  for (int i = 0; i < 12; ++i) {
    start.push_back(get(server.url("/slow?ms=100&i=" + std::to_string(i))));
  }
  for (std::size_t per_domain : {2u, 6u}) {
    recording_spider spider(start);
    crawl(spider, {"CONCURRENT_REQUESTS=16",
                   "CONCURRENT_REQUESTS_PER_DOMAIN=" + std::to_string(per_domain)});
    EXPECT_EQ(spider.responses.size(), 12u);
    EXPECT_EQ(server.most_in_flight(), per_domain)  // the most so far: 2, then 6
        << "CONCURRENT_REQUESTS_PER_DOMAIN=" << per_domain;
  }
}

// The depth of each page a one-at-a-time crawl of the generated site visits, in order.
std::vector<int> depths_crawled(const http_server& server, std::vector<std::string> settings) {
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  settings.insert(settings.end(), {"CONCURRENT_REQUESTS=1", "CLOSESPIDER_PAGECOUNT=40"});
  crawl(spider, settings);
  std::vector<int> depths;
  for (const auto& response : spider.responses) depths.push_back(response.meta().value("depth", 0));
  return depths;
}

int deepest(const std::vector<int>& depths) {
  return *std::max_element(depths.begin(), depths.end());
}

// DEPTH_PRIORITY=1 lowers a request's priority by its depth: the crawl goes breadth-first, every
// page of one depth before the next; -1 goes depth-first.
TEST(crawl, depth_priority_one_crawls_breadth_first_and_minus_one_depth_first) {
  http_server server({.site_pages = 1000});
  auto breadth_first = depths_crawled(server, {"DEPTH_PRIORITY=1"});
  EXPECT_TRUE(std::is_sorted(breadth_first.begin(), breadth_first.end()))
      << testing::PrintToString(breadth_first);
  auto depth_first = depths_crawled(server, {"DEPTH_PRIORITY=-1"});
  EXPECT_GT(deepest(depth_first), deepest(breadth_first) + 5)
      << testing::PrintToString(depth_first);
}

// Within one priority, SCHEDULER_MEMORY_QUEUE orders requests: lifo (Scrapy's default) takes the
// newest first and goes deep, fifo the oldest first and goes breadth-first.
TEST(crawl, scheduler_memory_queue_lifo_goes_deep_and_fifo_breadth_first) {
  http_server server({.site_pages = 1000});
  auto fifo = depths_crawled(server, {"SCHEDULER_MEMORY_QUEUE=fifo"});
  EXPECT_TRUE(std::is_sorted(fifo.begin(), fifo.end())) << testing::PrintToString(fifo);
  auto lifo = depths_crawled(server, {});
  EXPECT_GT(deepest(lifo), deepest(fifo) + 5) << testing::PrintToString(lifo);
}

TEST(crawl, autothrottle_starts_at_its_start_delay_and_shortens_it_for_a_fast_server) {
  http_server server;
  std::vector<crawler::request> start;
  for (int i = 0; i < 4; ++i) start.push_back(get(server.url("/s?wd=" + std::to_string(i))));
  recording_spider spider(start);
  auto result = crawl(spider, {"AUTOTHROTTLE_ENABLED=true", "AUTOTHROTTLE_START_DELAY=0.5",
                               "RANDOMIZE_DOWNLOAD_DELAY=false"});
  EXPECT_EQ(spider.responses.size(), 4u);
  // Gaps of 0.5, then about 0.25 and 0.125 as the delay halves toward the server's latency;
  // without the adjustment they would add up to 1.5.
  auto elapsed = result.stats["elapsed_time_seconds"].get<double>();
  EXPECT_GE(elapsed, 0.8);
  EXPECT_LT(elapsed, 1.3);
}

std::vector<crawler::request> searches(const http_server& server,
                                       std::initializer_list<const char*> words) {
  std::vector<crawler::request> requests;
  for (const char* word : words) requests.push_back(get(server.url(std::string("/s?wd=") + word)));
  return requests;
}

TEST(crawl, robots_txt_is_fetched_once_per_host_and_forbidden_pages_are_never_requested) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /s?wd=secret\n"});
  auto start = searches(server, {"a", "secret", "b", "secret-too"});
  auto excused = get(server.url("/s?wd=secret-but-excused"));
  excused.meta["dont_obey_robotstxt"] = true;
  start.push_back(excused);
  recording_spider spider(start);
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true"});

  EXPECT_EQ(spider.responses.size(), 3u);
  ASSERT_EQ(spider.failures.size(), 2u);
  for (const auto& failure : spider.failures) {
    EXPECT_EQ(failure.type, "IgnoreRequest");
    EXPECT_EQ(failure.message, "Forbidden by robots.txt");
  }
  EXPECT_EQ(server.hits("/robots.txt"), 1u);
  EXPECT_EQ(server.hits("/s?wd=secret"), 0u);
  EXPECT_EQ(server.hits("/s?wd=secret-too"), 0u);
  EXPECT_EQ(server.hits("/s?wd=secret-but-excused"), 1u);
  EXPECT_EQ(stat(result, "robotstxt/request_count"), 1);
  EXPECT_EQ(stat(result, "robotstxt/response_count"), 1);
  EXPECT_EQ(stat(result, "robotstxt/response_status_count/200"), 1);
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 2);
  EXPECT_EQ(result.finish_reason, "finished");
}

TEST(crawl, robots_txt_is_ignored_unless_robotstxt_obey_is_set) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /\n"});
  recording_spider spider(searches(server, {"a", "b"}));
  auto result = crawl(spider);
  EXPECT_EQ(spider.responses.size(), 2u);
  EXPECT_EQ(server.hits("/robots.txt"), 0u);
}

TEST(crawl, robots_txt_rules_are_matched_against_robotstxt_user_agent) {
  http_server server({.robots_txt = "User-agent: pickybot\nDisallow: /\n"});
  recording_spider as_default(searches(server, {"a"}));
  crawl(as_default, {"ROBOTSTXT_OBEY=true"});
  EXPECT_EQ(as_default.responses.size(), 1u);

  recording_spider as_picky(searches(server, {"a"}));
  auto result = crawl(as_picky, {"ROBOTSTXT_OBEY=true", "ROBOTSTXT_USER_AGENT=PickyBot"});
  EXPECT_TRUE(as_picky.responses.empty());
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 1);
}

TEST(crawl, a_robots_txt_answering_4xx_allows_everything) {
  http_server server({.robots_txt = "User-agent: *\nDisallow: /\n", .robots_status = 403});
  recording_spider spider(searches(server, {"a", "b"}));
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true"});
  EXPECT_EQ(spider.responses.size(), 2u);
  EXPECT_EQ(stat(result, "robotstxt/response_status_count/403"), 1);
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 0);
}

TEST(crawl, a_robots_txt_answering_5xx_after_its_retries_disallows_everything) {
  http_server server({.robots_txt = "User-agent: *\nAllow: /\n", .robots_status = 503});
  recording_spider spider(searches(server, {"a", "b", "c"}));
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true", "RETRY_TIMES=1"});
  EXPECT_TRUE(spider.responses.empty());
  EXPECT_EQ(spider.failures.size(), 3u);
  EXPECT_EQ(server.hits("/robots.txt"), 2u);  // retried once, like any download
  EXPECT_EQ(server.total_hits(), 2u);
  EXPECT_EQ(stat(result, "robotstxt/response_status_count/503"), 1);
  EXPECT_EQ(stat(result, "robotstxt/forbidden"), 3);
}

TEST(crawl, an_unreachable_robots_txt_disallows_everything) {
  unsigned short port;
  {
    http_server closed;
    port = closed.port();
  }
  recording_spider spider({get("http://127.0.0.1:" + std::to_string(port) + "/page")});
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true", "RETRY_ENABLED=false"});
  ASSERT_EQ(spider.failures.size(), 1u);
  EXPECT_EQ(spider.failures[0].message, "Forbidden by robots.txt");
  EXPECT_EQ(stat(result, "robotstxt/exception_count/ConnectionRefusedError"), 1);
  EXPECT_EQ(stat(result, "downloader/request_count"), 1);  // only robots.txt was tried
}

TEST(crawl, a_robots_txt_crawl_delay_spaces_requests_to_its_host) {
  http_server server({.robots_txt = "User-agent: *\nCrawl-delay: 0.2\n"});
  recording_spider spider(searches(server, {"a", "b", "c", "d"}));
  auto result = crawl(spider, {"ROBOTSTXT_OBEY=true", "RANDOMIZE_DOWNLOAD_DELAY=false"});
  EXPECT_EQ(spider.responses.size(), 4u);
  EXPECT_GE(result.stats["elapsed_time_seconds"].get<double>(), 0.6);
}

TEST(crawl, items_go_to_every_feed_format) {
  http_server server({.site_pages = 50});
  crawler::fixtures::temp_dir dir;
  auto jsonl = (dir.path() / "items.jsonl").string();
  auto json = (dir.path() / "items.json").string();
  auto csv = (dir.path() / "items.csv").string();
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  nlohmann::json feeds{
      {jsonl, {{"format", "jsonlines"}}}, {json, {{"format", "json"}}}, {csv, {{"format", "csv"}}}};
  auto result = crawl(spider, {"FEEDS=" + feeds.dump()});
  EXPECT_EQ(stat(result, "feedexport/success_count/FileFeedStorage"), 3);

  std::ifstream lines(jsonl);
  std::string line;
  std::size_t count = 0;
  while (std::getline(lines, line)) {
    EXPECT_TRUE(nlohmann::json::parse(line).contains("url"));
    ++count;
  }
  EXPECT_EQ(count, 50u);
  auto array = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(array.size(), 50u);
  std::ifstream table(csv);
  std::getline(table, line);
  EXPECT_EQ(line, "url\r");
  count = 0;
  while (std::getline(table, line)) ++count;
  EXPECT_EQ(count, 50u);
}

// CSV fields are quoted as Python's csv module (Scrapy's CsvItemExporter) quotes them: only when
// they hold a quote, a comma or a line break, with quotes doubled; rows end in \r\n.
TEST(crawl, csv_feeds_quote_fields_as_pythons_csv_module) {
  http_server server;
  crawler::fixtures::temp_dir dir;
  auto csv = (dir.path() / "items.csv").string();
  class texts : public recording_spider {
   public:
    using recording_spider::recording_spider;
    void parse(const crawler::response&, crawler::output& out) override {
      for (const char* text : {"say \"hi\"", "a,b", "line\nbreak", "plain"}) {
        out.item({{"text", text}});
      }
    }
  };
  texts spider({get(server.url("/s?wd=1"))});
  crawl(spider, {"FEEDS=" + nlohmann::json{{csv, {{"format", "csv"}}}}.dump()});
  std::ifstream in(csv, std::ios::binary);
  std::string written(std::istreambuf_iterator<char>(in), {});
  EXPECT_EQ(written, "text\r\n\"say \"\"hi\"\"\"\r\n\"a,b\"\r\n\"line\nbreak\"\r\nplain\r\n");
}

// Each link goes to the first rule that extracts it: a link two rules take is requested once, by
// the first, as in Scrapy's CrawlSpider.
TEST(crawl, a_link_two_rules_extract_is_requested_once_by_the_first) {
  class two_rules : public crawler::crawl_spider {
   public:
    two_rules() : crawl_spider("two_rules") {
      rules.push_back({crawler::link_extractor({.allow = {"/a"}}), "first"});
      rules.push_back({crawler::link_extractor({.allow = {"/a", "/b"}}), "second"});
    }
  };
  two_rules spider;
  crawler::response page;
  page.url = page.request.url = "http://example.com/";
  page.body = R"(<a href="/a">a</a><a href="/b">b</a>)";
  page.headers.emplace_back("Content-Type", "text/html");
  crawler::output out;
  spider.parse(page, out);
  ASSERT_EQ(out.requests.size(), 2u);
  EXPECT_EQ(out.requests[0].url, "http://example.com/a");
  EXPECT_EQ(out.requests[0].meta["rule"], 0);
  EXPECT_EQ(out.requests[1].url, "http://example.com/b");
  EXPECT_EQ(out.requests[1].meta["rule"], 1);
}

// Host names compare without case: a link to LOCALHOST is on a site whose allowed_domains says
// localhost; one to another host is offsite.
TEST(crawl, allowed_domains_compare_host_names_without_case) {
  http_server server({.pages = {{"/", R"(<a href="http://LOCALHOST:{port}/s?wd=up">up</a>)"
                                      R"(<a href="http://127.0.0.1:{port}/s?wd=ip">ip</a>)"}}});
  auto home = "http://localhost:" + std::to_string(server.port()) + "/";
  recording_spider spider({get(home)});
  spider.follow_links = true;
  spider.allowed_domains = {"localhost"};
  auto result = crawl(spider);
  EXPECT_EQ(server.hits("/s?wd=up"), 1u);
  EXPECT_EQ(server.hits("/s?wd=ip"), 0u);
  EXPECT_EQ(stat(result, "offsite/filtered"), 1);
}

class drop_odd_pages : public crawler::item_pipeline {
 public:
  void process_item(nlohmann::json& item, crawler::spider&) override {
    auto url = item["url"].get<std::string>();
    if ((url.back() - '0') % 2) throw crawler::drop_item("odd page");
    item["kept"] = true;
  }
};

TEST(crawl, a_pipeline_can_change_and_drop_items) {
  http_server server({.site_pages = 10});
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  auto settings = crawler::settings_for(spider, {"LOG_LEVEL=ERROR", "LOGSTATS_INTERVAL=0"});
  crawler::crawl_options options;
  options.handle_signals = false;
  options.pipelines.push_back(std::make_unique<drop_odd_pages>());
  auto result = crawler::run_crawl(spider, settings, std::move(options));
  EXPECT_EQ(stat(result, "item_dropped_count"), 5);
  EXPECT_EQ(stat(result, "item_dropped_reasons_count/DropItem"), 5);
  EXPECT_EQ(stat(result, "item_scraped_count"), 5);
}

TEST(crawl, a_spider_exception_is_logged_counted_and_the_crawl_goes_on) {
  http_server server;
  struct failing : recording_spider {
    using recording_spider::recording_spider;
    void parse(const crawler::response& response, crawler::output& out) override {
      recording_spider::parse(response, out);
      if (response.url.ends_with("1")) throw std::invalid_argument("bad page");
    }
  };
  failing spider({get(server.url("/s?wd=1")), get(server.url("/s?wd=2"))});
  auto result = crawl(spider, {"CLOSESPIDER_ERRORCOUNT=5"});
  EXPECT_EQ(spider.responses.size(), 2u);
  EXPECT_EQ(stat(result, "spider_exceptions/std::invalid_argument"), 1);
  EXPECT_EQ(result.finish_reason, "finished");
}

TEST(crawl, a_redis_dupefilter_that_cannot_connect_stops_the_crawl_before_it_starts) {
  http_server server;
  recording_spider spider({get(server.url("/s?wd=1"))});
  EXPECT_THROW(crawl(spider, {"DUPEFILTER_CLASS=redis_set", "REDIS_URL=redis://127.0.0.1:1",
                              "REDIS_PARAMS={\"socket_connect_timeout\": 1}"}),
               std::exception);
  EXPECT_EQ(server.total_hits(), 0u);
}

// A hostile site: what one crawled page must never make the crawler do.

// The recording spider that also parses every page, keeping its <title>.
struct selecting : recording_spider {
  using recording_spider::recording_spider;
  void parse(const crawler::response& response, crawler::output& out) override {
    titles.push_back(response.css("title::text").get(""));
    recording_spider::parse(response, out);
  }
  std::vector<std::string> titles;
};

// The recording spider that follows every link of every page.
struct following : recording_spider {
  explicit following(std::vector<crawler::request> start) : recording_spider(std::move(start)) {
    follow_links = true;
  }
};

bool redis_has_key(int port, const char* key) {
  auto* context = redisConnect("127.0.0.1", port);
  if (!context || context->err) throw std::runtime_error("cannot reach the test's redis-server");
  auto* reply = static_cast<redisReply*>(redisCommand(context, "EXISTS %s", key));
  bool exists = reply && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
  freeReplyObject(reply);
  redisFree(context);
  return exists;
}

// The scheduler, not the dupefilter, decides when a Redis dupefilter's keys go: at close unless
// SCHEDULER_PERSIST, and at the start with SCHEDULER_FLUSH_ON_START, as scrapy-redis does.
TEST(crawl, a_redis_dupefilter_is_kept_with_scheduler_persist_and_flushed_on_start) {
  http_server server;
  crawler::fixtures::redis_server redis;
  auto run = [&](std::vector<std::string> settings) {
    recording_spider spider({get(server.url("/s?wd=1"))});
    settings.insert(settings.end(), {"DUPEFILTER_CLASS=redis_set", "REDIS_URL=" + redis.url()});
    crawl(spider, settings);
  };
  run({});
  EXPECT_FALSE(redis_has_key(redis.port(), "recording:dupefilter"));
  run({"SCHEDULER_PERSIST=true"});
  EXPECT_TRUE(redis_has_key(redis.port(), "recording:dupefilter"));
  EXPECT_EQ(server.hits("/s?wd=1"), 2u);
  run({"SCHEDULER_PERSIST=true"});  // seen in the kept dupefilter: not fetched again
  EXPECT_EQ(server.hits("/s?wd=1"), 2u);
  run({"SCHEDULER_PERSIST=true", "SCHEDULER_FLUSH_ON_START=true"});
  EXPECT_EQ(server.hits("/s?wd=1"), 3u);
  EXPECT_TRUE(redis_has_key(redis.port(), "recording:dupefilter"));
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
    auto started = std::chrono::steady_clock::now();
    auto result = crawl(spider);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
    EXPECT_EQ(spider.titles, std::vector<std::string>{"Page 1"});
    EXPECT_EQ(stat(result, "html/skipped_count"), 2);
    EXPECT_EQ(stat(result, "html/skipped_reason_count/too_deep"), 2);
    EXPECT_EQ(stat(result, "log_count/WARNING"), 1);  // once per crawl, not once per page
    EXPECT_EQ(stat(result, "spider_exceptions/crawler::page_too_complex"), 0);
    EXPECT_EQ(result.finish_reason, "finished");
  }
}

TEST(crawl, a_close_does_not_wait_out_download_delay_for_requests_still_in_their_slot) {
  http_server server;
  recording_spider spider(
      {get(server.url("/s?wd=1")), get(server.url("/s?wd=2")), get(server.url("/s?wd=3"))});
  auto started = std::chrono::steady_clock::now();
  auto result = crawl(spider, {"DOWNLOAD_DELAY=600", "CLOSESPIDER_PAGECOUNT=1"});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_EQ(result.finish_reason, "closespider_pagecount");
  EXPECT_EQ(server.total_hits(), 1u);
}

TEST(hostile_site, a_page_over_html_max_size_is_skipped_when_a_callback_parses_it) {
  http_server server;
  selecting spider({get(server.url("/site/1")), get(server.url("/s?wd=small"))});
  auto result = crawl(spider, {"HTML_MAX_SIZE=200"});  // a site page is larger, /s is not
  EXPECT_EQ(spider.titles, std::vector<std::string>{""});
  EXPECT_EQ(stat(result, "html/skipped_reason_count/too_large"), 1);
  EXPECT_EQ(stat(result, "html/skipped_count"), 1);
}

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

// HTML_PARSER reaches the callbacks' pages: Gumbo inserts the <tbody> HTML5 implies, libxml2
// (as lxml under Scrapy) does not; a parser nobody knows stops the crawl before it starts.
TEST(crawl, html_parser_chooses_the_tree_callbacks_select_on) {
  http_server server({.pages = {{"/table", "<table><tr><td>1</td></tr></table>"}}});
  class cells : public recording_spider {
   public:
    using recording_spider::recording_spider;
    void parse(const crawler::response& response, crawler::output&) override {
      found = response.css("table > tbody > tr > td::text").getall().size();
    }
    std::size_t found = 99;
  };
  cells gumbo({get(server.url("/table"))});
  crawl(gumbo);
  EXPECT_EQ(gumbo.found, 1u);
  cells libxml2({get(server.url("/table"))});
  crawl(libxml2, {"HTML_PARSER=libxml2"});
  EXPECT_EQ(libxml2.found, 0u);
  try {
    cells unknown({get(server.url("/table"))});
    crawl(unknown, {"HTML_PARSER=lxml"});
    FAIL() << "HTML_PARSER=lxml accepted";
  } catch (const crawler::settings_error& error) {
    EXPECT_STREQ(error.what(),
                 "HTML_PARSER: unknown HTML parser \"lxml\"; known: \"gumbo\", \"libxml2\"");
  }
}

TEST(crawl, settings_a_fleet_cannot_run_with_are_refused_before_it_starts) {
  http_server server;
  recording_spider spider({get(server.url("/s?wd=1"))});
  auto refusal = [&](std::vector<std::string> settings) {
    try {
      crawl(spider, std::move(settings));
    } catch (const crawler::settings_error& error) {
      return std::string(error.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refusal({"SCHEDULER=redis", "DUPEFILTER_CLASS=bloom"})
                .find("DUPEFILTER_CLASS=bloom is local to one worker"),
            std::string::npos);
  EXPECT_NE(refusal({"REDIS_PIPELINE=true"}).find("needs SCHEDULER=redis"), std::string::npos);
  EXPECT_NE(refusal({"SCHEDULER=redis", "DUPEFILTER_CLASS=redis_set",
                     "SCHEDULER_HEARTBEAT_INTERVAL=30", "SCHEDULER_LEASE_TIME=60"})
                .find("at most a third of SCHEDULER_LEASE_TIME"),
            std::string::npos);
  EXPECT_EQ(server.total_hits(), 0u);
}

}  // namespace
