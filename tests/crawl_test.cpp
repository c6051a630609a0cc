// The crawl as a whole, against a real loopback HTTP server: every page once, the parse pool and
// concurrent callbacks, links a spider yields, depth and priority, the CLOSESPIDER_* limits,
// CrawlSpider rules, feeds and pipelines, spider errors, a Redis dupefilter behind the memory
// scheduler, HTML_PARSER.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "child_process.h"
#include "config/crawl_clock.h"
#include "crawl_fixture.h"
#include "crawler/components.h"
#include "crawler/crawl_spider.h"
#include "crawler/parse/form_request.h"
#include "redis_server.h"

namespace {

using namespace crawler::fixtures;

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
  EXPECT_EQ(stat(result, "scheduler/enqueued/memory"), std::int64_t(pages));
  EXPECT_EQ(stat(result, "scheduler/dequeued"), std::int64_t(pages));
  EXPECT_EQ(stat(result, "scheduler/dequeued/memory"), std::int64_t(pages));
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

namespace many_links {

// Yields `links` requests from its start page alone, each to a page of its own site but every
// `repeat`-th to one it yielded before, and every tenth to another host; says how many requests
// `out` still held after each yield past the first batch.
class yielding_spider : public crawler::spider {
 public:
  yielding_spider(std::string start, std::size_t links, std::size_t distinct)
      : spider("many_links"), start_(std::move(start)), links_(links), distinct_(distinct) {
    concurrent_callbacks = true;
    allowed_domains = {"127.0.0.1"};
  }
  void start_requests(crawler::output& out) override { out.request(crawler::request{start_}); }
  void parse(const crawler::response& response, crawler::output& out) override {
    if (response.url != start_) return;
    for (std::size_t i = 0; i < links_; ++i) {
      auto page = i % distinct_;
      out.request(crawler::request{i % 10 == 9 ? "http://elsewhere.example/p/" + std::to_string(i)
                                               : start_ + "/p/" + std::to_string(page)});
      if (i + 1 == 4096 || i + 1 == 4097) held_after.push_back(out.requests.size());
    }
  }
  const std::string& start() const { return start_; }
  std::vector<std::size_t> held_after;

 private:
  std::string start_;
  std::size_t links_, distinct_;
};

// Records how many requests each of its process_spider_output calls saw from the start page.
class batch_witness : public crawler::spider_middleware {
 public:
  batch_witness(std::string start, std::vector<std::size_t>& seen)
      : start_(std::move(start)), seen_(seen) {}
  void process_spider_output(const crawler::response& response, crawler::output& out) override {
    if (response.url == start_) seen_.push_back(out.requests.size());
  }

 private:
  std::string start_;
  std::vector<std::size_t>& seen_;
};

crawler::crawl_result crawl_with_witness(yielding_spider& spider, std::vector<std::size_t>& seen,
                                         std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.end(), {"LOG_LEVEL=WARNING", "LOGSTATS_INTERVAL=0",
                                     "CLOSESPIDER_PAGECOUNT=1", "CONCURRENT_REQUESTS=1"});
  auto settings = crawler::settings_for(spider, overrides);
  crawler::crawl_options options;
  options.handle_signals = false;
  options.spider_middlewares.push_back(std::make_unique<batch_witness>(spider.start(), seen));
  return crawler::run_crawl(spider, settings, std::move(options));
}

}  // namespace many_links

// A callback on the parse pool hands its requests on 4,096 at a time while it goes on, as
// Scrapy's engine takes each request a callback yields: the spider middlewares see each batch
// (the offsite one filters in all of them), and the dupefilter finds a link of the last batch
// seen in the first.
TEST(crawl, a_page_of_ten_thousand_links_goes_on_to_the_scheduler_as_they_are_yielded) {
  http_server server({.site_pages = 10});
  many_links::yielding_spider spider(server.url("/site/0"), 10000, 6000);
  std::vector<std::size_t> seen;
  auto result = many_links::crawl_with_witness(spider, seen);
  EXPECT_EQ(result.finish_reason, "closespider_pagecount");
  // The 4,096th request is handed on with the 4,095 before it; the 4,097th starts the next batch.
  EXPECT_EQ(spider.held_after, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(seen, (std::vector<std::size_t>{4096, 4096, 1808}));
  // Links 0-5999 are pages 0-5999 but every tenth, which is offsite; 6000-9999 repeat 0-3999.
  EXPECT_EQ(stat(result, "offsite/filtered"), 1000);
  EXPECT_EQ(stat(result, "scheduler/enqueued"), 1 + 5400);
  EXPECT_EQ(stat(result, "dupefilter/filtered"), 3600);
}

// Adds `count` requests to the start page's output, through output::request() as a callback
// would, on the crawl's loop.
class link_adding_middleware : public crawler::spider_middleware {
 public:
  link_adding_middleware(std::string start, std::size_t count)
      : start_(std::move(start)), count_(count) {}
  void process_spider_output(const crawler::response& response, crawler::output& out) override {
    if (response.url != start_ || out.requests.empty()) return;
    for (std::size_t i = 0; i < count_; ++i) {
      out.request(crawler::request{start_ + "/added/" + std::to_string(i)});
    }
  }

 private:
  std::string start_;
  std::size_t count_;
};

// The callback's hand-over ends with it: a middleware that adds thousands of requests on the
// loop afterwards (a batch's, or the page's last) has them stored with the rest, once each.
TEST(crawl, requests_a_spider_middleware_adds_past_the_batch_size_are_stored_once) {
  http_server server({.site_pages = 10});
  many_links::yielding_spider spider(server.url("/site/0"), 5000, 5000);
  auto settings = crawler::settings_for(spider, {"LOG_LEVEL=WARNING", "LOGSTATS_INTERVAL=0",
                                                 "CLOSESPIDER_PAGECOUNT=1",
                                                 "CONCURRENT_REQUESTS=1"});
  crawler::crawl_options options;
  options.handle_signals = false;
  options.spider_middlewares.push_back(
      std::make_unique<link_adding_middleware>(spider.start(), 5000));
  auto result = crawler::run_crawl(spider, settings, std::move(options));
  // 4,500 of the spider's own (every tenth is offsite) and, with each of its two batches, the
  // same 5,000 the middleware adds.
  EXPECT_EQ(stat(result, "scheduler/enqueued"), 1 + 4500 + 5000);
  EXPECT_EQ(stat(result, "dupefilter/filtered"), 5000);
}

// Throws on the start page's `nth` batch, as a middleware with a bug would.
class throwing_middleware : public crawler::spider_middleware {
 public:
  explicit throwing_middleware(std::string start, int nth = 1)
      : start_(std::move(start)), nth_(nth) {}
  void process_spider_output(const crawler::response& response, crawler::output&) override {
    if (response.url == start_ && ++seen_ == nth_) {
      throw std::runtime_error("the middleware's own bug");
    }
  }

 private:
  std::string start_;
  int nth_, seen_ = 0;
};

// An error that escapes the crawl's loop while a callback waits for its batch to be taken ends
// the crawl with that error: the callback is let go (its later batches are not waited for), so
// the parse pool can be joined.
TEST(crawl, an_error_that_ends_the_loop_under_a_handing_over_callback_ends_the_crawl) {
  http_server server({.site_pages = 10});
  many_links::yielding_spider spider(server.url("/site/0"), 20000, 20000);
  auto settings = crawler::settings_for(spider, {"LOG_LEVEL=WARNING", "LOGSTATS_INTERVAL=0"});
  crawler::crawl_options options;
  options.handle_signals = false;
  options.spider_middlewares.push_back(std::make_unique<throwing_middleware>(spider.start()));
  EXPECT_THROW(crawler::run_crawl(spider, settings, std::move(options)), std::runtime_error);
}

// A batch stored before its page is done is stored as no page's: with JOBDIR the page stays
// pending until its own outcome is, so a crawl that ends after its first batch (here the loop's
// error on the second) crawls the page again on resume and finds the links it had not handed on.
TEST(crawl, a_jobdir_crawl_ended_between_a_pages_batches_crawls_the_page_again_on_resume) {
  http_server server({.site_pages = 10});
  crawler::fixtures::temp_dir dir;
  many_links::yielding_spider spider(server.url("/site/0"), 10000, 10000);
  auto job = "JOBDIR=" + (dir.path() / "job").string();
  auto settings = crawler::settings_for(
      spider, {"LOG_LEVEL=WARNING", "LOGSTATS_INTERVAL=0", "SCHEDULER_MEMORY_QUEUE=fifo", job});
  crawler::crawl_options options;
  options.handle_signals = false;
  options.spider_middlewares.push_back(std::make_unique<throwing_middleware>(spider.start(), 2));
  EXPECT_THROW(crawler::run_crawl(spider, settings, std::move(options)), std::runtime_error);
  // The resume takes the page first (first in, first out), as it is still pending: of its 9,000
  // links on the site, the first batch's 3,687 are seen, and the other 5,313 queued now.
  many_links::yielding_spider again(server.url("/site/0"), 10000, 10000);
  auto resumed = crawl(again, {"SCHEDULER_MEMORY_QUEUE=fifo", job, "CLOSESPIDER_PAGECOUNT=1",
                               "CONCURRENT_REQUESTS=1"});
  EXPECT_EQ(stat(resumed, "scheduler/enqueued"), 9000 - 3687);
}

// Where a page's outcome is stored in one step, a callback on the crawl's loop, it is one batch.
TEST(crawl, a_page_yielded_on_the_crawl_thread_reaches_the_middlewares_whole) {
  http_server server({.site_pages = 10});
  many_links::yielding_spider spider(server.url("/site/0"), 10000, 6000);
  spider.concurrent_callbacks = false;
  std::vector<std::size_t> seen;
  auto result = many_links::crawl_with_witness(spider, seen);
  EXPECT_EQ(spider.held_after, (std::vector<std::size_t>{4096, 4097}));
  EXPECT_EQ(seen, (std::vector<std::size_t>{10000}));
  EXPECT_EQ(stat(result, "scheduler/enqueued"), 1 + 5400);
  EXPECT_EQ(stat(result, "dupefilter/filtered"), 3600);
}

// A fleet worker settles a page with its links in one step (a kill -9 leaves all or none of
// them): its callback on the parse pool hands nothing on before it returns.
TEST(crawl, a_fleet_workers_page_of_ten_thousand_links_is_settled_whole) {
  http_server server({.site_pages = 10});
  redis_server redis;
  many_links::yielding_spider spider(server.url("/site/0"), 10000, 6000);
  std::vector<std::size_t> seen;
  auto result = many_links::crawl_with_witness(
      spider, seen, {"SCHEDULER=redis", "DUPEFILTER_CLASS=redis_set", "REDIS_URL=" + redis.url()});
  EXPECT_EQ(spider.held_after, (std::vector<std::size_t>{4096, 4097}));
  EXPECT_EQ(seen, (std::vector<std::size_t>{10000}));
  EXPECT_EQ(stat(result, "dupefilter/filtered"), 3600);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CRAWL_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CRAWL_TEST_SANITIZED 1
#endif
#endif

// The requests of a page of 300,000 links never live all at once: the crawl's peak memory grows
// by about what the queue keeps of them (a packed URL each), not by 300,000 requests (about 800
// bytes each with their vector: 240 MB). Sanitizers keep freed memory, so only a plain build can
// tell.
#ifndef CRAWL_TEST_SANITIZED
TEST(crawl, a_page_of_300000_links_costs_the_crawl_its_queue_not_300000_requests) {
  http_server server({.site_pages = 10});
  many_links::yielding_spider spider(server.url("/site/0"), 300000, 300000);
  std::vector<std::size_t> seen;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto before_kib = usage.ru_maxrss;
  auto result = many_links::crawl_with_witness(spider, seen, {"DUPEFILTER_CLASS=bloom"});
  getrusage(RUSAGE_SELF, &usage);
  auto grown_mib = (usage.ru_maxrss - before_kib) / 1024;
  EXPECT_EQ(stat(result, "scheduler/enqueued"), 1 + 270000);
  EXPECT_LT(grown_mib, 80) << "the crawl grew the peak RSS by " << grown_mib << " MiB";
}
#endif

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

// A callback that reads a meta or cb_kwargs key its request lacks (the start page's here) fails
// alone, as a Python dict's KeyError fails a Scrapy callback: the error names the key and what
// is there, and the crawl goes on to the pages whose requests carry it.
class reads_meta_spider : public crawler::spider {
 public:
  explicit reads_meta_spider(std::string start) : spider("reads_meta"), start_(std::move(start)) {}
  void start_requests(crawler::output& out) override { out.request(crawler::request{start_}); }
  void parse(const crawler::response& response, crawler::output& out) override {
    if (response.url == start_) {
      auto next = response.follow("/site/7");
      next.meta["page"] = 7;
      next.cb_kwargs["kind"] = "listing";
      out.request(std::move(next));
      auto bare = response.follow("/site/8");
      out.request(std::move(bare));
      seen.push_back(response.meta()["page"].dump());  // the start request has no "page"
      return;
    }
    seen.push_back(response.meta()["page"].dump() + " " +
                   response.cb_kwargs()["kind"].get<std::string>());
  }
  std::vector<std::string> seen;

 private:
  std::string start_;
};

TEST(crawl, a_meta_or_cb_kwargs_key_the_request_lacks_fails_that_callback_alone) {
  http_server server({.site_pages = 1000});
  reads_meta_spider spider(server.url("/site/0"));
  auto result = crawl(spider);
  EXPECT_EQ(result.finish_reason, "finished");
  EXPECT_EQ(spider.seen, std::vector<std::string>{"7 listing"});
  EXPECT_EQ(server.hits("/site/7"), 1u);
  EXPECT_EQ(server.hits("/site/8"), 1u);
  // The start page's callback and /site/8's (no "page" in its meta).
  EXPECT_EQ(stat(result, "spider_exceptions/crawler::missing_key"), 2);
  crawler::request bare{"http://a/"};
  bare.cb_kwargs["kind"] = "x";
  crawler::response response;
  response.request = bare;
  try {
    (void)response.cb_kwargs()["page"];
    ADD_FAILURE() << "no missing_key";
  } catch (const crawler::missing_key& error) {
    EXPECT_EQ(std::string(error.what()),
              "response.cb_kwargs() has no key \"page\" (it holds kind); .value(key, default) or "
              ".contains(key) read one that may be missing");
  }
  EXPECT_THROW((void)response.meta()["page"], crawler::missing_key);
  EXPECT_EQ(response.meta().value("page", 3), 3);
}

// Scrapy's self.crawler.stats and self.logger: a spider counts into the crawl's stats from
// opened() to closed(), and logs under its own name; outside a crawl stats() says so.
class counting_spider : public crawler::spider {
 public:
  explicit counting_spider(std::string start) : spider("counting"), start_(std::move(start)) {}
  void start_requests(crawler::output& out) override { out.request(crawler::request{start_}); }
  void opened(const crawler::settings&) override { stats().set_value("counting/opened", 1); }
  void parse(const crawler::response&, crawler::output&) override {
    stats().inc_value("counting/pages");
    logger_name = logger()->name();
  }
  void closed(std::string_view reason) override {
    stats().set_value("counting/closed", std::string(reason));
  }
  std::string logger_name;

 private:
  std::string start_;
};

TEST(crawl, a_spider_counts_into_the_crawls_stats_and_logs_under_its_name) {
  http_server server;
  counting_spider spider(server.url("/site/0"));
  EXPECT_THROW(spider.stats(), std::logic_error);
  auto result = crawl(spider);
  EXPECT_EQ(stat(result, "counting/opened"), 1);
  EXPECT_EQ(stat(result, "counting/pages"), 1);
  EXPECT_EQ(result.stats.value("counting/closed", std::string()), "finished");
  EXPECT_EQ(spider.logger_name, "counting");
  EXPECT_THROW(spider.stats(), std::logic_error);  // the crawl is over
}

// Scrapy's cb_kwargs: what a callback is called with travels with its request, through a retry
// (the first answer is a 503) and a redirect, to response.cb_kwargs().
TEST(crawl, a_callbacks_cb_kwargs_reach_it_through_retries_and_redirects) {
  http_server server({.redirects = {{"/moved", "/flaky/kw?fail=1&status=503"}}});
  crawler::request start{server.url("/moved")};
  start.cb_kwargs = {{"category", "books"}, {"page", 2}};
  recording_spider spider({start});
  auto result = crawl(spider);
  EXPECT_EQ(result.finish_reason, "finished");
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].status, 200);
  EXPECT_EQ(spider.responses[0].cb_kwargs(), start.cb_kwargs);
  EXPECT_EQ(server.hits("/flaky/kw?fail=1&status=503"), 2u);
}

// A login as a Scrapy spider writes it: the login page's form submitted with the credentials,
// its hidden CSRF token copied by from_response; the server sets the session cookie only for the
// right token, and the account page answers only with that cookie.
TEST(crawl, a_login_through_the_pages_form_carries_its_csrf_token_and_opens_the_account) {
  struct logging_in : crawler::spider {
    explicit logging_in(std::string start) : spider("login"), start_(std::move(start)) {
      callback("after_login", &logging_in::after_login);
    }
    void start_requests(crawler::output& out) override { out.request(crawler::request{start_}); }
    void parse(const crawler::response& response, crawler::output& out) override {
      out.request(crawler::form_request::from_response(
          response, {.formname = "login",
                     .formdata = {{"username", "alice"}, {"password", "s3cret pass"}},
                     .callback = "after_login"}));
    }
    void after_login(const crawler::response& response, crawler::output&) {
      landed.push_back({{"url", response.url}, {"h1", response.css("h1::text").get("")}});
    }
    std::string start_;
    std::vector<nlohmann::json> landed;
  };
  http_server server;
  logging_in spider(server.url("/login"));
  auto result = crawl(spider, {"HTTPERROR_ALLOWED_CODES=[403]"});
  EXPECT_EQ(result.finish_reason, "finished");
  ASSERT_EQ(spider.landed.size(), 1u);
  EXPECT_EQ(spider.landed[0]["url"], server.url("/account"));
  EXPECT_EQ(spider.landed[0]["h1"], "Welcome, alice") << spider.landed[0].dump();
  EXPECT_EQ(server.hits("/login"), 2u);  // the page, then the form's POST
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

// DEPTH_STATS_VERBOSE, as Scrapy's DepthMiddleware: request_depth_count/N counts the requests of
// depth N that pass DEPTH_LIMIT, repeats included (the dupefilter comes after); a depth whose
// every request is over the limit has no count, and does not raise request_depth_max.
TEST(crawl, depth_stats_verbose_counts_each_depths_requests_within_the_limit) {
  http_server server({.site_pages = 1000});
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  auto result = crawl(spider, {"DEPTH_LIMIT=1", "DEPTH_STATS_VERBOSE=True"});
  EXPECT_EQ(stat(result, "request_depth_count/0"), 1);
  // Pages 1, 5 and 1 again, and page 0 itself twice (#top, #again).
  EXPECT_EQ(stat(result, "request_depth_count/1"), 5);
  EXPECT_FALSE(result.stats.contains("request_depth_count/2")) << result.stats.dump();
  EXPECT_EQ(stat(result, "request_depth_max"), 1);
}

// URLLENGTH_LIMIT, as Scrapy's UrlLengthMiddleware: a URL of exactly the limit's length is
// requested, one a byte longer is ignored and counted.
TEST(crawl, urllength_limit_keeps_a_url_of_exactly_that_length_and_ignores_a_longer_one) {
  http_server server;
  auto at_limit = server.url("/s?wd=four");
  recording_spider spider({get(at_limit), get(server.url("/s?wd=fives"))});
  auto result = crawl(spider, {"URLLENGTH_LIMIT=" + std::to_string(at_limit.size())});
  ASSERT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(spider.responses[0].url, at_limit);
  EXPECT_EQ(server.hits("/s?wd=fives"), 0u);
  EXPECT_EQ(stat(result, "urllength/request_ignored_count"), 1);
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

// Scrapy's Rule(cb_kwargs=..., errback=..., process_request=...): the callback gets the rule's
// keyword arguments, a failed request its errback, and process_request sees (and may drop or
// change) every request the rule makes.
TEST(crawl, a_rules_cb_kwargs_errback_and_process_request_apply_to_its_requests) {
  http_server server(
      {.pages = {{"/", R"(<a href="/s?wd=1">1</a><a href="/s?wd=2">2</a>)"
                       R"(<a href="/s?wd=skip">skip</a><a href="/status/404">x</a>)"}}});
  class rules_spider : public crawler::crawl_spider {
   public:
    explicit rules_spider(std::string start) : crawl_spider("rule_options") {
      start_urls = {std::move(start)};
      crawler::rule search{crawler::link_extractor({.allow = {R"(/s\?wd=)"}}), "result"};
      search.cb_kwargs = {{"kind", "search"}};
      search.process_request =
          [](crawler::request request,
             const crawler::response& from) -> std::optional<crawler::request> {
        if (request.url.ends_with("skip")) return std::nullopt;
        request.meta["from"] = from.url;
        return request;
      };
      rules.push_back(std::move(search));
      crawler::rule broken{crawler::link_extractor({.allow = {"/status/"}}), "result"};
      broken.errback = "failed";
      rules.push_back(std::move(broken));
      callback("result", [this](const crawler::response& response, crawler::output&) {
        results.push_back({response.url, response.cb_kwargs().value("kind", ""),
                           response.meta().value("from", "")});
      });
      errback("failed", [this](const crawler::failure& failure, crawler::output&) {
        failures.push_back(failure.type + " " + failure.request.url);
      });
    }
    std::vector<std::vector<std::string>> results;
    std::vector<std::string> failures;
  };
  rules_spider spider(server.url("/"));
  crawl(spider);
  std::sort(spider.results.begin(), spider.results.end());
  EXPECT_EQ(spider.results, (std::vector<std::vector<std::string>>{
                                {server.url("/s?wd=1"), "search", server.url("/")},
                                {server.url("/s?wd=2"), "search", server.url("/")}}));
  EXPECT_EQ(server.hits("/s?wd=skip"), 0u);
  EXPECT_EQ(spider.failures, std::vector<std::string>{"HttpError " + server.url("/status/404")});
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

// An HTML response to `request` with `body`, as a callback gets it.
crawler::response html_page(crawler::request request, std::string body) {
  crawler::response page;
  page.url = request.url;
  page.request = std::move(request);
  page.body = std::move(body);
  page.headers.emplace_back("Content-Type", "text/html");
  return page;
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
  crawler::output out;
  spider.parse(html_page(get("http://example.com/"), R"(<a href="/a">a</a><a href="/b">b</a>)"),
               out);
  ASSERT_EQ(out.requests.size(), 2u);
  EXPECT_EQ(out.requests[0].url, "http://example.com/a");
  EXPECT_EQ(out.requests[0].meta["rule"], 0);
  EXPECT_EQ(out.requests[1].url, "http://example.com/b");
  EXPECT_EQ(out.requests[1].meta["rule"], 1);
}

// A rule's request is Scrapy 2.8's CrawlSpider._build_request's, so a scrapy-redis worker sharing
// the queue runs it: callback "_callback", errback "_errback", meta rule and link_text, no
// cb_kwargs of its own. Its page goes to the rule's callback with the rule's cb_kwargs under the
// request's (Scrapy's {**rule.cb_kwargs, **cb_kwargs}), whichever side made the request.
TEST(crawl, a_rules_request_is_the_one_scrapys_crawl_spider_builds_and_runs_by_rule_index) {
  class rule_pages : public crawler::crawl_spider {
   public:
    rule_pages() : crawl_spider("rule_pages") {
      rules.push_back({crawler::link_extractor({.allow = {"/a"}}), "first"});
      crawler::rule second{crawler::link_extractor({.allow = {"/b"}}), "second"};
      second.cb_kwargs = {{"kind", "rule"}, {"page", 1}};
      rules.push_back(std::move(second));
      for (const char* name : {"first", "second"}) {
        callback(name, [this, name](const crawler::response& response, crawler::output&) {
          called.push_back({name, response.cb_kwargs()});
        });
      }
    }
    std::vector<std::pair<std::string, nlohmann::json>> called;
  };
  rule_pages spider;
  crawler::output out;
  spider.parse(
      html_page(get("http://example.com/"), R"(<a href="/a">A <b>x</b></a><a href="/b">B</a>)"),
      out);
  ASSERT_EQ(out.requests.size(), 2u);
  for (const auto& request : out.requests) {
    EXPECT_EQ(request.callback, "_callback");
    EXPECT_EQ(request.errback, "_errback");
    EXPECT_EQ(request.cb_kwargs, nlohmann::json::object());
  }
  EXPECT_EQ(out.requests[0].meta, (nlohmann::json{{"rule", 0}, {"link_text", "A x"}}));
  EXPECT_EQ(out.requests[1].meta, (nlohmann::json{{"rule", 1}, {"link_text", "B"}}));

  crawler::output ignored;
  spider.call("_callback", html_page(out.requests[0], ""), ignored);
  spider.call("_callback", html_page(out.requests[1], ""), ignored);
  auto with_own = out.requests[1];
  with_own.cb_kwargs = {{"page", 2}};  // a request's own cb_kwargs win over the rule's
  spider.call("_callback", html_page(with_own, ""), ignored);
  EXPECT_EQ(spider.called, (std::vector<std::pair<std::string, nlohmann::json>>{
                               {"first", nlohmann::json::object()},
                               {"second", {{"kind", "rule"}, {"page", 1}}},
                               {"second", {{"kind", "rule"}, {"page", 2}}}}));
}

// A fleet's two sides must declare the same rules in the same order: a request names its rule by
// index alone. One whose index this spider does not have is refused before it is fetched (the
// fleet sets it aside); a request of no rule, or of a rule it has, passes.
TEST(crawl, a_rules_request_whose_rule_index_the_spider_lacks_is_refused) {
  class one_rule : public crawler::crawl_spider {
   public:
    one_rule() : crawl_spider("one_rule") {
      rules.push_back({crawler::link_extractor(), "parse_item"});
      callback("parse_item", [](const crawler::response&, crawler::output&) {});
    }
  };
  one_rule spider;
  auto rule_request = [](nlohmann::json meta, const char* callback = "_callback",
                         const char* errback = "_errback") {
    crawler::request request{"http://example.com/x", callback};
    request.errback = errback;
    request.meta = std::move(meta);
    return request;
  };
  EXPECT_EQ(spider.check_request(rule_request({{"rule", 0}})), "");
  EXPECT_EQ(spider.check_request(rule_request({{"rule", 1}})),
            "spider one_rule has no rule 1 (it has 1): both sides of a fleet must declare the "
            "same rules in the same order");
  EXPECT_EQ(spider.check_request(rule_request({{"rule", -1}})),
            "spider one_rule has no rule -1 (it has 1): both sides of a fleet must declare the "
            "same rules in the same order");
  EXPECT_EQ(spider.check_request(rule_request({{"rule", "0"}})),
            "spider one_rule has no rule \"0\" (it has 1): both sides of a fleet must declare "
            "the same rules in the same order");
  EXPECT_EQ(spider.check_request(rule_request(nlohmann::json::object())),
            "the request's meta names no rule of spider one_rule (it has 1): both sides "
            "of a fleet must declare the same rules in the same order");
  // The errback alone names the rules too; an earlier release's callback name still does.
  EXPECT_NE(spider.check_request(rule_request({{"rule", 1}}, "parse_item")), "");
  EXPECT_NE(spider.check_request(rule_request({{"rule", 1}}, "_crawl_spider_rule", "")), "");
  EXPECT_EQ(spider.check_request(rule_request({{"rule", 7}}, "parse_item", "")), "");
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
  void process_item(crawler::item& item, crawler::spider&) override {
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

// Three start URLs on one host, a delay of ten minutes, a page count of one, on a machine booted
// a second ago: the first page comes at once, and the close puts the other two back instead of
// waiting for their turn. The clock never moves: a crawl that waited for it would never end.
TEST(crawl, a_close_does_not_wait_out_download_delay_for_requests_still_in_their_slot) {
  http_server server;
  crawler::driven_clock clock(std::chrono::seconds(1));
  recording_spider spider(
      {get(server.url("/s?wd=1")), get(server.url("/s?wd=2")), get(server.url("/s?wd=3"))});
  auto result = crawl(spider, {"DOWNLOAD_DELAY=600", "CLOSESPIDER_PAGECOUNT=1"});
  EXPECT_EQ(result.finish_reason, "closespider_pagecount");
  EXPECT_EQ(spider.responses.size(), 1u);
  EXPECT_EQ(server.total_hits(), 1u);
}

// Holds the first page's item for 12 s of the crawl's clock, as a slow store would.
class holds_one_page : public crawler::async_item_pipeline {
 public:
  explicit holds_one_page(crawler::crawl_context& crawl) : timer_(crawl.executor) {}
  void process_item_async(crawler::item item, crawler::spider&, crawler::item_done done) override {
    if (held_) return done(std::move(item), nullptr);
    held_ = true;
    timer_.expires_after(std::chrono::seconds(12));
    timer_.async_wait([item = std::move(item), done = std::move(done)](auto) mutable {
      done(std::move(item), nullptr);
    });
  }

 private:
  crawler::crawl_timer timer_;
  bool held_ = false;
};
CRAWLER_REGISTER_ITEM_PIPELINE(holds_one_page, "tests.HoldsOnePage");

class item_per_page : public recording_spider {
 public:
  using recording_spider::recording_spider;
  void parse(const crawler::response& response, crawler::output& out) override {
    out.item({{"url", response.url}});
  }
};

// A crawl on a thread of its own, logging at INFO to a file, while its test drives the clock.
class background_crawl {
 public:
  background_crawl(crawler::spider& spider, std::vector<std::string> settings)
      : log_file_(dir_.path() / "crawl.log") {
    settings.insert(settings.end(), {"LOG_LEVEL=INFO", "LOG_FILE=" + log_file_.string()});
    thread_ = std::thread([this, &spider, settings] {
      try {
        result_ = crawl(spider, settings);
      } catch (const std::exception& error) {
        failed_ = error.what();
      }
    });
  }
  ~background_crawl() {
    if (thread_.joinable()) thread_.join();
  }

  std::string log() const {
    std::ifstream in(log_file_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  /// Waits until the log holds `text`.
  void wait_for_log(const std::string& text, const std::string& what) const {
    crawler::fixtures::wait_until([&] { return log().find(text) != std::string::npos; }, what);
  }
  /// Waits for the crawl's end; what it returned.
  const crawler::crawl_result& result() {
    if (thread_.joinable()) thread_.join();
    EXPECT_EQ(failed_, "");
    return result_;
  }

 private:
  temp_dir dir_;
  std::filesystem::path log_file_;
  crawler::crawl_result result_;
  std::string failed_;
  std::thread thread_;
};

// A close that waits says what for, every five seconds of the crawl's clock, stage by stage and
// page by page: here the first page's item held in an item pipeline for 12 s. The clock is the
// test's: "5 s pass" is a step.
TEST(crawl, a_close_held_by_a_page_in_a_pipeline_says_so_every_five_seconds) {
  http_server server;
  crawler::driven_clock clock;
  item_per_page spider({get(server.url("/site/0"))});
  background_crawl crawling(
      spider, {"ITEM_PIPELINES={\"tests.HoldsOnePage\": 100}", "CLOSESPIDER_PAGECOUNT=1"});
  const std::string waited = "Closing spider (closespider_pagecount): waited ";
  const std::string holder =
      " s for 1 page's items in the item pipelines (" + server.url("/site/0") + ")";
  crawling.wait_for_log("Closing spider", "the close to begin");
  EXPECT_EQ(crawling.log().find(waited), std::string::npos) << crawling.log();
  clock.advance(std::chrono::seconds(5));
  crawling.wait_for_log(waited + "5" + holder, "the first word of what holds the close");
  clock.advance(std::chrono::seconds(5));
  crawling.wait_for_log(waited + "10" + holder, "the second word of what holds the close");
  clock.advance(std::chrono::seconds(5));  // past the 12 s the pipeline holds the page
  const auto& result = crawling.result();
  EXPECT_EQ(result.finish_reason, "closespider_pagecount");
  EXPECT_EQ(stat(result, "item_scraped_count"), 1);
  EXPECT_EQ(crawling.log().find(waited + "15"), std::string::npos) << crawling.log();
}

// The page ledger names each page at its own stage: here a download the close lets finish, whose
// response is still handed to its callback.
TEST(crawl, a_close_held_by_a_download_names_the_page_downloading) {
  http_server server;
  crawler::driven_clock clock;
  recording_spider spider({get(server.url("/site/0")), get(server.url("/slow?ms=3000"))});
  background_crawl crawling(spider, {"CLOSESPIDER_PAGECOUNT=1"});
  crawling.wait_for_log("Closing spider", "the close to begin");
  clock.advance(std::chrono::seconds(5));
  crawling.wait_for_log("waited 5 s for 1 download (" + server.url("/slow?ms=3000") + ")",
                        "the close to name the download that holds it");
  const auto& result = crawling.result();
  EXPECT_EQ(result.finish_reason, "closespider_pagecount");
  EXPECT_EQ(spider.responses.size(), 2u);
}

// CLOSESPIDER_TIMEOUT counts on the crawl's clock: at 599 s of it a crawl that would run on goes
// on, at 600 s it closes with closespider_timeout, and its elapsed_time_seconds says 600.
TEST(crawl, closespider_timeout_closes_a_crawl_that_would_run_on) {
  http_server server({.site_pages = 100000});
  crawler::driven_clock clock;
  recording_spider spider({get(server.url("/site/0"))});
  spider.follow_links = true;
  background_crawl crawling(spider, {"CLOSESPIDER_TIMEOUT=600", "CONCURRENT_REQUESTS=2"});
  // The timer is set before the first request goes out.
  crawler::fixtures::wait_until([&] { return server.total_hits() > 0; }, "the first request");
  clock.advance(std::chrono::seconds(599));
  auto at_599 = server.total_hits();
  crawler::fixtures::wait_until([&] { return server.total_hits() >= at_599 + 20; },
                                "20 more pages at 599 s");
  EXPECT_EQ(crawling.log().find("Closing spider"), std::string::npos) << crawling.log();
  clock.advance(std::chrono::seconds(1));
  const auto& result = crawling.result();
  EXPECT_EQ(result.finish_reason, "closespider_timeout");
  EXPECT_EQ(result.stats.value("elapsed_time_seconds", 0.0), 600.0);
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
